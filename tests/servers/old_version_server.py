"""Raw JSON-RPC over stdio (stdlib only): a server that answers the 2025 ``initialize``
handshake with a protocol version no client speaks, and knows no ``server/discover``.

For the handshake-refusal mapping: the SDK's own version check rejects the answer (a
``RuntimeError`` from ``ClientSession.initialize``); a client in ``fast`` mode must take that
as a refused handshake and try the next mode. Every method received is logged to stderr.
"""

import json
import sys


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
        send({"id": msg["id"], "result": {"protocolVersion": "1999-01-01", "capabilities": {},
                                          "serverInfo": {"name": "old", "version": "0"}}})
    else:
        send({"id": msg["id"], "error": {"code": -32601, "message": f"Method not found: {method}"}})
