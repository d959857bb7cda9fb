"""The ``toolbench`` command: the catalog, a call or a comparison from a terminal.

It uses ``./mcp.json`` when present and the bundled demo servers otherwise, so the first
command a newcomer types shows something real without any setup.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench import Bench

WIDTH = 48


def _text_table(df: pd.DataFrame, columns: Sequence[str]) -> str:
    if df.empty:
        return "(none)"
    view = df[[c for c in columns if c in df.columns]].copy()
    for column in view.columns:
        view[column] = view[column].map(_short)
    return str(view.to_string(index=False))


def _short(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def _parse_args(pairs: Sequence[str], raw_json: str | None) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    if raw_json is not None:
        try:
            loaded = json.loads(raw_json)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--json is not valid JSON: {exc.msg} (column {exc.colno})") from exc
        if not isinstance(loaded, dict):
            raise ValueError(f"--json must be a JSON object, not {raw_json!r}")
        arguments.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--arg {pair!r} must look like key=value")
        try:
            arguments[key] = json.loads(value)
        except json.JSONDecodeError:
            arguments[key] = value
    return arguments


def _open_bench(config: str | None) -> Bench:
    from toolbench._bench import Bench

    path = config or ("mcp.json" if Path("mcp.json").is_file() else None)
    if path is None:
        return Bench.demo()
    bench = Bench()
    try:
        bench.load_config(path)
    except BaseException:
        bench.close()
        raise
    return bench


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolbench",
        description="Explore, call and compare MCP tools. Uses ./mcp.json when present, "
                    "else the bundled demo servers.",
    )
    parser.add_argument("--config", help="an mcpServers/servers JSON file (default ./mcp.json)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cat = sub.add_parser("catalog", help="list every tool of every server")
    cat.add_argument("--server", help="only this server's tools")
    cat.add_argument("--search", help="only tools whose name or description contains this")
    for name, help_text in (("call", "call one tool and print its result"),
                            ("compare", "call a tool name on every server that offers it")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("name", help="a pegboard name (web-search), tool:// reference, or, for "
                       "compare, an original tool name")
        p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                       help="an argument; VALUE is read as JSON when it parses, else as text")
        p.add_argument("--json", help="all arguments as one JSON object")
    sub.add_parser("demo", help="connect the demo servers and show what they offer")
    lab = sub.add_parser("lab", help="open JupyterLab on the tutorial notebooks")
    lab.add_argument("lab_args", nargs=argparse.REMAINDER, help="passed on to jupyter lab")
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "lab":
        folder = Path("notebooks") if Path("notebooks").is_dir() else Path.cwd()
        return subprocess.call([sys.executable, "-m", "jupyterlab", *args.lab_args],
                               cwd=os.fspath(folder))
    bench = _open_bench(args.config)
    try:
        if args.command == "catalog":
            df = bench.catalog(server=args.server, search=args.search)
            print(_text_table(df, ["name", "server", "parameters", "description"]))
        elif args.command == "call":
            result = bench.call(args.name, _parse_args(args.arg, args.json))
            data = result.data
            print(data if isinstance(data, str) else json.dumps(data, indent=2, default=str))
        elif args.command == "compare":
            df = bench.compare(args.name, _parse_args(args.arg, args.json))
            print(_text_table(df, ["case", "server", "ok", "latency_ms", "text", "error"]))
        else:  # demo
            print(_text_table(bench.servers, ["name", "transport", "status", "tools", "error"]))
            print()
            print(_text_table(bench.catalog(), ["name", "parameters", "description"]))
            same = bench.pegboard.same_named()
            if same:
                print(f"\nTools offered by several servers (try `toolbench compare NAME`): "
                      f"{', '.join(sorted(same))}")
    finally:
        bench.close()
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    from toolbench._errors import ToolError

    try:
        code = run(argv)
    except (ToolError, ValueError, TypeError, KeyError, OSError) as exc:
        name = type(exc).__name__
        message = str(exc).splitlines()[0] if str(exc) else name
        print(f"toolbench: error: {name}: {message}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
