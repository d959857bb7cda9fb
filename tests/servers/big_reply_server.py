"""Raw JSON-RPC over stdio (stdlib only) whose ``big`` tool answers with a huge reply.

Tools: ``big`` (``size`` bytes of text, after ``delay`` seconds; ``id_last`` writes the id at
the end, as TypeScript servers do), ``bignote`` (a notification of ``size`` bytes, then a small
reply), ``ok`` (a small, fast answer) and ``pid`` (the server's process id, so a test can tell
a restarted connection from the old one).
"""

import contextlib
import json
import os
import sys
import time

CHUNK = 1 << 20
TOOLS = [
    {"name": "big", "inputSchema": {"type": "object", "properties": {
        "size": {"type": "integer"}, "id_last": {"type": "boolean"},
        "delay": {"type": "number"}}}},
    {"name": "bignote", "inputSchema": {"type": "object", "properties": {
        "size": {"type": "integer"}}}},
    {"name": "ok", "inputSchema": {"type": "object"}},
    {"name": "pid", "inputSchema": {"type": "object"}},
]
out = sys.stdout.buffer


def send(body: dict[str, object]) -> None:
    out.write(json.dumps(body).encode() + b"\n")
    out.flush()


def reply(msg_id: object, result: object) -> None:
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def big(msg_id: object, size: int, id_last: bool) -> None:
    """Write one reply line of about ``size`` bytes without building it in memory."""
    ident = json.dumps(msg_id).encode()
    if id_last:
        out.write(b'{"result":{"content":[{"type":"text","text":"')
    else:
        out.write(b'{"jsonrpc":"2.0","id":' + ident + b',"result":{"content":[{"type":"text",'
                  b'"text":"')
    block = b"x" * CHUNK
    left = size
    while left > 0:
        out.write(block[:left])
        left -= CHUNK
    if id_last:
        out.write(b'"}]},"jsonrpc":"2.0","id":' + ident + b"}\n")
    else:
        out.write(b'"}]}}\n')
    out.flush()


def bignote(size: int) -> None:
    out.write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info",'
              b'"data":"' + b"n" * size + b'"}}\n')
    out.flush()


def main() -> None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "initialize":
            reply(msg["id"], {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                              "serverInfo": {"name": "big", "version": "0.0.1"}})
        elif method == "tools/list":
            reply(msg["id"], {"tools": TOOLS})
        elif method == "tools/call":
            name = msg["params"]["name"]
            args = msg["params"].get("arguments") or {}
            if name == "big":
                time.sleep(float(args.get("delay", 0)))
                big(msg["id"], int(args.get("size", 50 << 20)), bool(args.get("id_last")))
            elif name == "bignote":
                bignote(int(args.get("size", 2 << 20)))
                reply(msg["id"], {"content": [{"type": "text", "text": "after the note"}]})
            elif name == "pid":
                reply(msg["id"], {"content": [{"type": "text", "text": str(os.getpid())}]})
            else:
                reply(msg["id"], {"content": [{"type": "text", "text": "fine"}]})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"],
                  "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        main()
