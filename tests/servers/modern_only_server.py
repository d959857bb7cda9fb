"""Raw JSON-RPC over stdio (stdlib only): a server that refuses the 2025 ``initialize``
handshake (METHOD_NOT_FOUND) and speaks only 2026-07-28 (``server/discover``).

For the protocol-mode fallback: a client that tries the 2025 handshake first must then
connect in the SDK's ``auto`` mode. Every method received is logged to stderr, in order.
"""

import json
import sys

TOOLS = [{"name": "echo", "inputSchema": {"type": "object",
                                          "properties": {"text": {"type": "string"}}}}]


def send(body: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **body}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method = msg.get("method")
    print(f"method {method}", file=sys.stderr, flush=True)
    if "id" not in msg or method is None:
        continue
    if method == "initialize":
        send({"id": msg["id"], "error": {"code": -32601,
                                         "message": "Method not found: initialize"}})
    elif method == "server/discover":
        send({"id": msg["id"], "result": {"supportedVersions": ["2026-07-28"],
                                          "capabilities": {"tools": {}},
                                          "resultType": "complete"}})
    elif method == "tools/list":
        send({"id": msg["id"], "result": {"tools": TOOLS, "resultType": "complete",
                                          "ttlMs": 0, "cacheScope": "private"}})
    elif method == "tools/call":
        text = (msg.get("params") or {}).get("arguments", {}).get("text", "")
        send({"id": msg["id"], "result": {"content": [{"type": "text", "text": text}],
                                          "isError": False, "resultType": "complete"}})
    else:
        send({"id": msg["id"], "error": {"code": -32601, "message": f"Method not found: {method}"}})
