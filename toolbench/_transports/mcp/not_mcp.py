"""Saying so when a stdio program is not an MCP server, with what it wrote instead.

``bench.connect("x", ["cat"])`` used to fail with "MCPError: Method not found": ``cat``
echoes the client's handshake request, the client answers that "request" with Method not
found, and ``cat`` echoes the answer back as the reply to its own handshake. A program that
prints a banner or a usage text fails differently, but just as obscurely. Both mean the
program did not answer as an MCP server: the connect's error says that, and quotes the first
bytes it wrote on stdout (escaped, and with the connection's secrets hidden).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND

from toolbench._core import html as _html
from toolbench._core.redact import leaves

if TYPE_CHECKING:
    from toolbench._transports.mcp.attempt import Conn

_HANDSHAKES = (b'"method":"initialize"', b'"method":"server/discover"')


def not_an_mcp_server(conn: Conn, reason: str, redact: Callable[[str], str]) -> str:
    """``reason`` for a failed start, told as "not an MCP server" when that is what it was:
    non-protocol output on stdout, or Method not found in answer to the handshake itself
    (every MCP server implements it)."""
    refused = conn.error is not None and any(
        isinstance(leaf, MCPError) and leaf.code == METHOD_NOT_FOUND
        for leaf in leaves(conn.error))
    if conn.garbage is None and not refused:
        return reason
    said = bytes(conn.first_output)
    if said:
        shown = repr(_html.shorten(redact(said.decode("utf-8", "backslashreplace")), 200))
    else:
        shown = redact(conn.garbage or "nothing")
    echo = ""
    if any(mark in said.replace(b" ", b"") for mark in _HANDSHAKES):
        echo = (" (the handshake request it was sent: it echoes its input back, as cat "
                "does)")
    return (f"the program did not answer as an MCP server ({reason}); its first output on "
            f"stdout: {shown}{echo}")
