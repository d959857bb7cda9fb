"""A small Toolset, served for the out-of-process tests (and imported by them to compare).

    python tests/servers/toolset_app.py stdio
    python tests/servers/toolset_app.py streamable-http --port 8123
    python tests/servers/toolset_app.py start-only --grace 0.3   # start() and never serve
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout

from toolbench._transports.toolset.toolset import ToolContext, Toolset

ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def build(grace: float = 5.0) -> Toolset:
    """The same toolset every test talks to, whichever transport carries the calls."""
    ts = Toolset("notes", name="notes-app", description="Notes <b>and</b> sums.",
                 max_concurrent=4, connect_grace=grace)
    ts.lane("disk", max_concurrent=1)
    ts.lane("net", max_concurrent=2)
    store: dict[str, str] = {}

    @ts.tool("add", "Add two integers.", input_schema=ADD_SCHEMA)
    def add(data: dict[str, Any]) -> int:
        return int(data["a"]) + int(data["b"])

    @ts.tool("echo", "Return the data as given.", lane="net")
    async def echo(data: dict[str, Any]) -> dict[str, Any]:
        return dict(data)

    @ts.tool("greet", "Say hello.", lane=lambda d: "net" if d.get("remote") else None)
    async def greet(data: dict[str, Any], ctx: ToolContext) -> str:
        return f"hello {data.get('who', 'world')} from {ctx.tool} (lane {ctx.lane})"

    @ts.tool("put", "Store a note.", lane="disk", input_schema={
        "type": "object",
        "properties": {"key": {"type": "string"}, "text": {"type": "string"}},
        "required": ["key", "text"],
    })
    async def put(data: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        async with ctx.exclusive(("note", data["key"])):
            store[data["key"]] = data["text"]
        return {"stored": data["key"], "count": len(store)}

    @ts.tool("boom", "Always fails.")
    def boom(data: dict[str, Any]) -> None:
        raise RuntimeError(f"boom: {data.get('why', 'no reason')}")

    @ts.tool("route", "A lane function that picks an undeclared lane.",
             lane=lambda d: "nowhere")
    async def route(data: dict[str, Any]) -> str:
        return "never"

    return ts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["stdio", "streamable-http", "start-only"])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--grace", type=float, default=5.0)
    parser.add_argument("--linger", type=float, default=1.0)
    args = parser.parse_args()
    ts = build(args.grace)
    if args.mode == "start-only":
        ts.start()
        time.sleep(args.grace + args.linger)
        return
    ts.run(args.mode, port=args.port)


if __name__ == "__main__":
    main()
