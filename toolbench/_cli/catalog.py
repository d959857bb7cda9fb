"""``toolbench catalog``: every tool of every server (or of one, which alone is started)."""

from __future__ import annotations

import argparse

from toolbench._cli.command import EXIT_FAILED, EXIT_HELP, EXIT_OK, Commands
from toolbench._cli.servers import source_of, start
from toolbench._cli.terminal import text_table


def add(sub: Commands, servers: argparse.ArgumentParser) -> None:
    """``catalog [--server NAME] [--search TEXT]``."""
    cat_help = "list every tool of every server"
    cat = sub.add_parser("catalog", parents=[servers],
                         formatter_class=argparse.RawDescriptionHelpFormatter, help=cat_help,
                         description=cat_help, epilog=EXIT_HELP)
    cat.add_argument("--server", help="only this server's tools (only it is started)")
    cat.add_argument("--search", help="only tools whose name, title or description contains "
                                      "this (any case)")
    cat.set_defaults(run=catalog)


def catalog(args: argparse.Namespace) -> int:
    source = source_of(args)
    if args.server is not None:
        source.check_server(args.server)
    bench, failed = start(source, None if args.server is None else [args.server])
    with bench:
        df = bench.catalog(server=args.server, search=args.search)
        print(text_table(df, ["name", "server", "parameters", "description"]))
    return EXIT_FAILED if failed else EXIT_OK
