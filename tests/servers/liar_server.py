"""Hand-written JSON-RPC over stdio that answers the handshake, then lies.

Tools: ``bad_shape`` returns a result whose ``content`` is not a list (unreadable);
``bad_schema`` declares an output schema and breaks it; ``ok`` answers properly.
"""

import json
import sys

TOOLS = [
    {"name": "ok", "inputSchema": {"type": "object"}},
    {"name": "bad_shape", "inputSchema": {"type": "object"}},
    {
        "name": "bad_schema",
        "inputSchema": {"type": "object"},
        "outputSchema": {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    },
]


def reply(msg_id: object, result: object = None, error: object = None) -> None:
    body: dict[str, object] = {"jsonrpc": "2.0", "id": msg_id}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg:
        continue  # notifications
    method = msg.get("method")
    if method == "initialize":
        reply(msg["id"], {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "liar", "version": "0.0.1"},
        })
    elif method == "tools/list":
        reply(msg["id"], {"tools": TOOLS})
    elif method == "tools/call":
        name = msg["params"]["name"]
        if name == "bad_shape":
            reply(msg["id"], {"content": "not a list", "isError": "maybe"})
        elif name == "bad_schema":
            reply(msg["id"], {"content": [{"type": "text", "text": "{}"}],
                              "structuredContent": {"n": "not a number"}})
        else:
            reply(msg["id"], {"content": [{"type": "text", "text": "fine"}]})
    else:
        reply(msg["id"], error={"code": -32601, "message": f"Method not found: {method}"})
