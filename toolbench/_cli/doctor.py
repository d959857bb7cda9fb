"""``toolbench doctor NAME``: one server's connection tried step by step, a line a step."""

from __future__ import annotations

import argparse

from toolbench._cli.command import EXIT_FAILED, EXIT_HELP, EXIT_OK, Commands
from toolbench._cli.servers import source_of
from toolbench._cli.terminal import safe


def add(sub: Commands, servers: argparse.ArgumentParser) -> None:
    """``doctor NAME [--config FILE | --from CLIENT] [--timeout S]``."""
    about = ("try one server's connection step by step (command found, process started,\n"
             "JSON-RPC, handshake and era, tools; or DNS, TCP, TLS, HTTP, sign-in, MCP)\n"
             "and show each step's time and evidence, one line a step")
    doc = sub.add_parser("doctor", parents=[servers], help="see which step of a server's "
                         "connection fails", description=about, epilog=EXIT_HELP,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    doc.add_argument("name", help="the server's name in the config")
    doc.add_argument("--timeout", type=float, default=None,
                     help="seconds each step may take (default: the server's connect_timeout, "
                     "else 30, as connect waits)")
    doc.set_defaults(run=doctor)


def doctor(args: argparse.Namespace) -> int:
    from toolbench._notebook.bench import Bench

    source = source_of(args)
    source.check_server(args.name)
    with Bench() as bench:
        diagnosis = bench.doctor(args.name, config=source.subset([args.name]),
                                 timeout=args.timeout)
    print(safe(str(diagnosis)))
    return EXIT_OK if diagnosis.ok else EXIT_FAILED
