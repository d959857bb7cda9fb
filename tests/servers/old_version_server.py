"""Raw JSON-RPC over stdio (stdlib only): a server that answers the 2025 ``initialize``
handshake with a protocol version no client speaks, and knows no ``server/discover``.

For the handshake-refusal mapping: the SDK's own version check rejects the answer (a
``RuntimeError`` from ``ClientSession.initialize``); a client in ``fast`` mode must take that
as a refused handshake and try the next mode. Every method received is logged to stderr.
"""

from _rpc import serve

serve({
    "initialize": lambda msg: {"result": {"protocolVersion": "1999-01-01", "capabilities": {},
                                          "serverInfo": {"name": "old", "version": "0"}}},
}, log_methods=True)
