"""A stdlib-only MCP server over stdio that answers in tens of microseconds: raw JSON-RPC.

The benchmark target where the *client's* per-call work decides throughput: no
SDK, no event loop, no pydantic on the server side, one line in and one line out. It speaks
the 2025 handshake (``initialize``), so every client negotiates the same protocol with it; a
``server/discover`` probe (the SDK's ``auto`` mode) gets METHOD_NOT_FOUND, which is the
documented fallback signal.

Tools: ``work(x)`` answers ``x + 1`` (text and structured); ``add(a, b)`` answers ``a + b``.

    python benchmarks/servers/fast_server.py [--name fast]
"""

from __future__ import annotations

import json
import sys

PROTOCOL = "2025-11-25"
INT = {"type": "integer"}
TOOLS = [
    {"name": "work", "description": "Answer x + 1 at once.",
     "inputSchema": {"type": "object", "properties": {"x": INT, "delay_ms": {"type": "number"}},
                     "required": ["x"]}},
    {"name": "add", "description": "Add two integers.",
     "inputSchema": {"type": "object", "properties": {"a": INT, "b": INT},
                     "required": ["a", "b"]}},
]


def main() -> None:
    name = sys.argv[sys.argv.index("--name") + 1] if "--name" in sys.argv else "fast"
    out = sys.stdout
    dumps, loads = json.dumps, json.loads
    for line in sys.stdin:
        try:
            msg = loads(line)
        except ValueError:
            continue
        msg_id = msg.get("id")
        method = msg.get("method")
        if msg_id is None or method is None:
            continue  # notifications and responses need no answer
        if method == "tools/call":
            params = msg.get("params") or {}
            args = params.get("arguments") or {}
            tool = params.get("name")
            if tool == "work":
                value = int(args["x"]) + 1
            elif tool == "add":
                value = int(args["a"]) + int(args["b"])
            else:
                out.write(dumps({"jsonrpc": "2.0", "id": msg_id, "error": {
                    "code": -32602, "message": f"unknown tool {tool!r}"}}) + "\n")
                out.flush()
                continue
            reply: dict[str, object] = {
                "content": [{"type": "text", "text": str(value)}],
                "structuredContent": {"result": value}, "isError": False}
        elif method == "initialize":
            reply = {"protocolVersion": PROTOCOL, "capabilities": {"tools": {}},
                     "serverInfo": {"name": name, "version": "1.0"}}
        elif method == "tools/list":
            reply = {"tools": TOOLS}
        elif method == "ping":
            reply = {}
        elif method in ("prompts/list", "resources/list"):  # fastmcp asks at connect
            reply = {method.split("/")[0]: []}
        else:
            out.write(dumps({"jsonrpc": "2.0", "id": msg_id, "error": {
                "code": -32601, "message": f"Method not found: {method}"}}) + "\n")
            out.flush()
            continue
        out.write(dumps({"jsonrpc": "2.0", "id": msg_id, "result": reply}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
