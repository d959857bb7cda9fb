"""``toolbench demo``: the bundled demo servers started, what they offer, and the commands
to try next, printed so that they work as pasted (the quick start's venv is not activated)."""

from __future__ import annotations

import argparse
from pathlib import Path

from toolbench._cli.command import EXIT_FAILED, EXIT_HELP, EXIT_OK, Commands, UsageError
from toolbench._cli.servers import source, start
from toolbench._cli.terminal import activate_hint, command_name, text_table

DEMO_EXAMPLE = ("distance", "--arg from_city=London --arg to_city=Paris")
"""A demo tool offered by several servers, and arguments that every one of them accepts."""


def add(sub: Commands, servers: argparse.ArgumentParser) -> None:
    """``demo`` (no server options: it always uses the bundled servers)."""
    demo_help = "start the bundled demo servers and show what they offer"
    parser = sub.add_parser("demo", formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog=EXIT_HELP, help=demo_help, description=demo_help)
    parser.set_defaults(run=demo)


def demo(args: argparse.Namespace) -> int:
    config: str | None = getattr(args, "config", None)  # given before the command
    if config is not None:
        raise UsageError("`toolbench demo` always uses the bundled demo servers; for "
                         f"{config} use `{command_name()} catalog --config {config}`")
    bench, failed = start(source(None, use_demo=True))
    with bench:
        print(text_table(bench.servers, ["name", "transport", "status", "tools"]))
        print()
        print(text_table(bench.catalog(), ["name", "parameters", "description"]))
        tool, example = DEMO_EXAMPLE
        if f"geo-{tool}" in bench.pegboard.same_named().get(tool, []):
            # --demo only when ./mcp.json would otherwise win: the hint must work as printed.
            # The command as it runs here: the quick start's venv is not activated.
            flag = " --demo" if Path("mcp.json").is_file() else ""
            command = command_name()
            print(f"\nSeveral servers offer `{tool}`. Compare them, or call one:\n"
                  f"  {command} compare {tool} {example}{flag}\n"
                  f"  {command} call geo-{tool} {example}{flag}\n"
                  + activate_hint(command), end="")
        print(ATLAS_NOTE)
    return EXIT_FAILED if failed else EXIT_OK


ATLAS_NOTE = (
    "\nOne more demo server, `atlas`, brings its own interface (MCP Apps): a map of these\n"
    "cities, live in a notebook's output cell. It needs JupyterLab or Notebook 7, so it is not\n"
    "started here; notebooks/08_apps.ipynb shows it, or in a notebook:\n"
    '  bench.connect("atlas", [sys.executable, "-m", "toolbench.demo.atlas"])')
"""Said after the tables: the app demo, which a terminal cannot show (issue 43)."""
