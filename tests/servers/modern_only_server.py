"""Raw JSON-RPC over stdio (stdlib only): a server that refuses the 2025 ``initialize``
handshake (METHOD_NOT_FOUND) and speaks only 2026-07-28 (``server/discover``).

For the protocol-mode fallback: a client that tries the 2025 handshake first must then
connect in the SDK's ``auto`` mode. Every method received is logged to stderr, in order.
"""

from typing import Any

from _rpc import not_found, serve

TOOLS = [{"name": "echo", "inputSchema": {"type": "object",
                                          "properties": {"text": {"type": "string"}}}}]


def call(msg: dict[str, Any]) -> dict[str, Any]:
    text = (msg.get("params") or {}).get("arguments", {}).get("text", "")
    return {"result": {"content": [{"type": "text", "text": text}], "isError": False,
                       "resultType": "complete"}}


serve({
    "initialize": lambda msg: not_found("initialize"),
    "server/discover": lambda msg: {"result": {"supportedVersions": ["2026-07-28"],
                                               "capabilities": {"tools": {}},
                                               "resultType": "complete"}},
    "tools/list": lambda msg: {"result": {"tools": TOOLS, "resultType": "complete",
                                          "ttlMs": 0, "cacheScope": "private"}},
    "tools/call": call,
}, log_methods=True)
