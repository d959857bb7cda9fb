"""``toolbench auth login|logout|list``: sign-ins from a terminal.

The command lives beside the sign-in it drives (``toolbench._bench.signin_commands``); this
module adds it to the parser like any other command module.
"""

from __future__ import annotations

import argparse

from toolbench._bench.signin_commands import add_auth_command, auth_command
from toolbench._cli.command import Commands


def add(sub: Commands, servers: argparse.ArgumentParser) -> None:
    """``auth`` and its three actions (no server options: it names its server by URL)."""
    add_auth_command(sub)
    sub.choices["auth"].set_defaults(run=auth_command)
