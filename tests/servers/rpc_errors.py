"""Raw JSON-RPC over stdio (stdlib only) whose tools answer with JSON-RPC *error responses*.

Every ``tools/call`` bumps an in-memory counter first, so a test can tell a respawned server
(counter back to 1, new pid) from one whose connection stayed up.

Tools:
- ``count``: answers ``{"count": n, "pid": pid}`` as structured content.
- ``err``: answers the JSON-RPC error ``{"code": arguments["code"], "message": ...}`` at once;
  the message carries the counter so a test can see it was this process that answered.
- ``hang``: never answers (a request that times out).
- ``deafen``: answers, then closes its stdin while staying alive with stdout open, so the
  client's next write fails before a byte reaches it.
"""

import json
import os
import sys
import time

COUNT = 0
SCHEMA = {"type": "object"}
TOOLS = [
    {"name": "count", "inputSchema": SCHEMA},
    {"name": "err", "inputSchema": {"type": "object",
                                    "properties": {"code": {"type": "integer"}}}},
    {"name": "hang", "inputSchema": SCHEMA},
    {"name": "deafen", "inputSchema": SCHEMA},
]


def send(body: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **body}) + "\n")
    sys.stdout.flush()


def result(msg_id: object, value: object) -> None:
    send({"id": msg_id, "result": value})


def error(msg_id: object, code: int, message: str) -> None:
    send({"id": msg_id, "error": {"code": code, "message": message}})


def call(msg_id: object, params: dict) -> None:
    global COUNT
    COUNT += 1
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "count":
        state = {"count": COUNT, "pid": os.getpid()}
        result(msg_id, {"content": [{"type": "text", "text": json.dumps(state)}],
                        "structuredContent": state})
    elif name == "err":
        code = int(args.get("code", -32000))
        error(msg_id, code, f"server error {code} after {COUNT} calls")
    elif name == "hang":
        pass
    elif name == "deafen":
        # Close first, then answer: once the client has the answer, its next write must fail.
        # (Answering first let a loaded machine write the next request into a still-open
        # pipe, which is rightly in doubt, and the test waited out a 30 s timeout.)
        os.close(0)
        result(msg_id, {"content": [{"type": "text", "text": "deaf now"}]})
        print("rpc_errors: stdin closed, staying alive", file=sys.stderr, flush=True)
        time.sleep(60)
    else:
        error(msg_id, -32602, f"unknown tool {name!r}")


def main() -> None:
    print(f"rpc_errors up (pid {os.getpid()})", file=sys.stderr, flush=True)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg or "method" not in msg:
            continue  # notifications and responses
        method = msg["method"]
        if method == "initialize":
            result(msg["id"], {"protocolVersion": "2025-06-18",
                               "capabilities": {"tools": {}},
                               "serverInfo": {"name": "rpc_errors", "version": "0.0.1"}})
        elif method == "tools/list":
            result(msg["id"], {"tools": TOOLS})
        elif method == "tools/call":
            call(msg["id"], msg.get("params") or {})
        elif method == "ping":
            result(msg["id"], {})
        else:
            error(msg["id"], -32601, f"Method not found: {method}")


main()
