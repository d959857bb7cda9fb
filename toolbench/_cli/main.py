"""The ``toolbench`` command: the catalog, a call or a comparison from a terminal.

It uses ``./mcp.json`` when present and the bundled demo servers otherwise, so the first
command a newcomer types shows something real without any setup. A command starts only the
servers it needs (``servers.py`` says why).

This module is the parser and the dispatch; each group of commands is a module of its own,
listed in :data:`COMMANDS` (``command.py`` says what such a module offers).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from toolbench._cli import (
    auth,
    calls,
    catalog,
    demo,
    doctor,
    evals,
    lab,
    report,
    serve_recording,
)
from toolbench._cli.command import (
    EXIT_BUG,
    EXIT_FAILED,
    EXIT_HELP,
    EXIT_USAGE,
    CommandModule,
    Run,
    UsageError,
)
from toolbench._cli.servers import add_options
from toolbench._cli.terminal import err

COMMANDS: tuple[CommandModule, ...] = (catalog, calls, demo, report, evals, auth, lab,
                                       serve_recording, doctor)
"""The command modules, in the order ``toolbench --help`` lists their commands. Each has
``add(sub, servers)``, which adds its parser(s) and names its runner with
``set_defaults(run=...)``; a new group of commands is a module here and one name in this
tuple (and its import)."""


def _parser() -> argparse.ArgumentParser:
    servers = argparse.ArgumentParser(add_help=False)
    add_options(servers)
    parser = argparse.ArgumentParser(
        prog="toolbench", parents=[servers], formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Explore, call and compare MCP tools. Uses ./mcp.json when present, "
                    "else the bundled demo servers.",
        epilog="examples:\n  toolbench demo\n  toolbench catalog --search distance\n"
               f"  toolbench call geo-distance {demo.DEMO_EXAMPLE[1]}\n"
               "  toolbench call --help\n\n" + EXIT_HELP,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.add(sub, servers)
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit status. A UsageError propagates (status 2)."""
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    lab_at = lab.position(argv)
    if lab_at is not None and argv[lab_at + 1:] not in (["-h"], ["--help"]):
        return lab.lab(argv[lab_at + 1:])
    args, extra = parser.parse_known_args(argv)
    if extra:
        _refuse_extra(parser, args, extra)
    if args.command is None:  # a usage error: say what the commands are, exit 2
        parser.print_help(sys.stderr)
        err("error: a command is required (catalog, call, compare, demo or lab)")
        return EXIT_USAGE
    command: Run = args.run
    return command(args)


def _refuse_extra(parser: argparse.ArgumentParser, args: argparse.Namespace,
                  extra: list[str]) -> NoReturn:
    """Words argparse could not place. The usual one is ``--arg from_city London``: the value
    after a space instead of ``=``, so the error says how to write it (status 2)."""
    bare = [pair for pair in getattr(args, "arg", None) or [] if "=" not in pair]
    if bare and not extra[0].startswith("-"):
        fixed = shlex.quote(f"{bare[0]}={extra[0]}")
        raise UsageError(f"--arg {bare[0]!r} has no value: write --arg {fixed} (KEY=VALUE, "
                         f"with '=' and no space), not --arg {bare[0]} {shlex.quote(extra[0])}")
    parser.error(f"unrecognized arguments: {' '.join(extra)}")


def main(argv: Sequence[str] | None = None) -> None:
    """Exit statuses: 0 success, 1 a tool or server failed, 2 usage error, 3 a bug."""
    try:
        code = run(argv)
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:
        from toolbench._core.redact import leaves

        errors = leaves(exc)
        code = max(_status(error) for error in errors)
        if code == EXIT_BUG:  # TypeError, KeyError, ...: a bug here, never the user's mistake
            traceback.print_exc()
            err("internal error: this is a bug in toolbench, not a mistake in your command; "
                "please report it with the traceback above")
        else:
            for error in errors:
                err(f"error: {_describe(error)}")
    sys.exit(code)


def _status(exc: BaseException) -> int:
    """The exit status an exception means; anything unforeseen is a bug (3)."""
    from toolbench._core.errors import ToolError

    if isinstance(exc, (UsageError, ValueError)):  # ConfigError, NameCollision, bad values
        return EXIT_USAGE
    if isinstance(exc, (ToolError, OSError)):
        return EXIT_FAILED
    return EXIT_BUG


def _describe(exc: BaseException) -> str:
    from toolbench._core.errors import ToolError

    if isinstance(exc, ToolError):
        return f"{type(exc).__name__} ({exc.disposition}): {exc}"
    return str(exc)
