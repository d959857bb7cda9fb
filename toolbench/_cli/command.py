"""What a command module of ``toolbench`` is: its exit statuses, its usage error, and how it
adds itself to the parser.

A command module (``catalog.py``, ``calls.py``, ...) has one function ``add(sub, servers)``.
It adds its parser(s) to ``sub`` (with ``servers``, the ``--config``/``--demo`` options, as a
parent when the command starts servers) and names the function that runs the command with
``set_defaults(run=...)``: a :data:`Run`, which takes the parsed arguments and returns the
exit status. ``main.py`` lists the modules in ``COMMANDS`` and calls ``args.run(args)``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Protocol, TypeAlias

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUG = 0, 1, 2, 3

EXIT_HELP = """\
exit status:
  0  success
  1  a tool failed (call: the call raised; compare: a row failed), or a server failed to
     start (its error and stderr are printed on stderr)
  2  usage error: a bad command line, --arg or --json, a bad config file, or a name no
     server has; nothing was called
  3  a bug in toolbench (a traceback is printed); please report it
"""

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The parser's subcommands, which a command module's ``add`` adds its parser to."""
Run: TypeAlias = Callable[[argparse.Namespace], int]
"""What runs a command: the parsed arguments in, the exit status out."""


class CommandModule(Protocol):
    """A module of commands, as ``main.COMMANDS`` lists it (mypy checks each one)."""

    def add(self, sub: Commands, servers: argparse.ArgumentParser) -> None:
        """Add this module's parser(s) to ``sub``, each with ``set_defaults(run=...)``."""
        ...


class UsageError(Exception):
    """The command line or the config is wrong; nothing was called (exit status 2)."""
