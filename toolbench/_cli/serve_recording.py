"""``toolbench serve-recording JOURNAL``: a journal's recorded answers served as an MCP server.

The command lives beside the recording it serves (``toolbench._bench.replay.serve``); this
module adds it to the parser like any other command module.
"""

from __future__ import annotations

import argparse

from toolbench._bench.replay.serve import add_cli, run_cli
from toolbench._cli.command import Commands


def add(sub: Commands, servers: argparse.ArgumentParser) -> None:
    """``serve-recording JOURNAL [--server NAME] [--http PORT] [--host HOST]``."""
    add_cli(sub)
    sub.choices["serve-recording"].set_defaults(run=run_cli)
