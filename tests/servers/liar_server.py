"""Hand-written JSON-RPC over stdio that answers the handshake, then lies.

Tools: ``bad_shape`` returns a result whose ``content`` is not a list (unreadable);
``bad_schema`` declares an output schema and breaks it; ``ok`` answers properly.
"""

from typing import Any

from _rpc import serve

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


def call(msg: dict[str, Any]) -> dict[str, Any]:
    name = msg["params"]["name"]
    if name == "bad_shape":
        return {"result": {"content": "not a list", "isError": "maybe"}}
    if name == "bad_schema":
        return {"result": {"content": [{"type": "text", "text": "{}"}],
                           "structuredContent": {"n": "not a number"}}}
    return {"result": {"content": [{"type": "text", "text": "fine"}]}}


serve({
    "initialize": lambda msg: {"result": {"protocolVersion": "2025-06-18",
                                          "capabilities": {"tools": {}},
                                          "serverInfo": {"name": "liar", "version": "0.0.1"}}},
    "tools/list": lambda msg: {"result": {"tools": TOOLS}},
    "tools/call": call,
})
