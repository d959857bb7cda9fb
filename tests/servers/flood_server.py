"""Raw JSON-RPC over stdio (stdlib only) that floods the client with notifications.

Tools: ``flood`` sends ``count`` notifications (``kind`` ``"list_changed"``, the default, or
``"log"``) and then answers; ``lists`` returns how many tools/list requests the server has
answered (counted here, on the far side, so a test sees what really arrived); ``ok`` answers
at once.
"""

import contextlib
import json
import sys

out = sys.stdout.buffer
TOOLS = [
    {"name": "flood", "inputSchema": {"type": "object", "properties": {
        "count": {"type": "integer"}, "kind": {"type": "string"}}}},
    {"name": "lists", "inputSchema": {"type": "object"}},
    {"name": "ok", "inputSchema": {"type": "object"}},
]
LIST_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'
LOG = (b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info",'
       b'"logger":"flood","data":"tick"}}\n')


def send(body: dict[str, object]) -> None:
    out.write(json.dumps(body).encode() + b"\n")
    out.flush()


def text(msg_id: object, value: str) -> None:
    send({"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text",
                                                                   "text": value}]}})


def main() -> None:
    lists = 0
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                "serverInfo": {"name": "flood", "version": "0.0.1"}}})
        elif method == "tools/list":
            lists += 1
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name = msg["params"]["name"]
            args = msg["params"].get("arguments") or {}
            if name == "flood":
                note = LOG if args.get("kind") == "log" else LIST_CHANGED
                count = int(args.get("count", 5000))
                for start in range(0, count, 500):
                    out.write(note * min(500, count - start))
                out.flush()
                text(msg["id"], str(count))
            elif name == "lists":
                text(msg["id"], str(lists))
            else:
                text(msg["id"], "fine")
        else:
            send({"jsonrpc": "2.0", "id": msg["id"],
                  "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        main()
