"""An MCP server that proves what it was started with without showing it: its one tool,
``probe``, answers a short SHA-256 of each ``PROBE_*`` environment variable, of each of its
arguments and (over HTTP) of each ``Authorization`` / ``X-Probe-*`` request header, so a test
can check that a secret reached the server while the secret itself is never in a result.

`python input_probe_server.py [stdio|streamable-http PORT] [ARG...]`
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("input-probe", log_level="WARNING")
MODES = ("stdio", "streamable-http")


def digest(value: str) -> str:
    """The first 16 hex digits of the value's SHA-256."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def _arguments() -> list[str]:
    args = sys.argv[1:]
    if args[:1] == ["streamable-http"]:
        return args[2:]
    return args[1:] if args[:1] == ["stdio"] else args


@server.tool()
def probe(ctx: Context) -> dict[str, Any]:
    """Digests of the PROBE_* environment, the arguments and the probe request headers."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None) or {}
    return {"env": {k: digest(v) for k, v in sorted(os.environ.items())
                    if k.startswith("PROBE_")},
            "args": [digest(a) for a in _arguments()],
            "headers": {k.lower(): digest(v) for k, v in sorted(headers.items())
                        if k.lower() == "authorization" or k.lower().startswith("x-probe-")}}


if __name__ == "__main__":
    if sys.argv[1:2] == ["streamable-http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
