"""The ``servers`` table: one row per server, no secret value in any cell.

Every cell a server supplied goes through that server's ``Redactor``. It reads ``Servers``
and the pegboard, and may import ``toolbench._bench.servers``, ``_routing`` and ``_core``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolbench._core.redact import Redactor
from toolbench._routing.pegboard import describe_skipped

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.servers.servers import Servers

SERVER_COLUMNS = ("name", "transport", "status", "tools", "protocol", "server_name",
                  "server_version", "title", "description", "instructions", "capabilities",
                  "icons", "website", "destination", "error", "stderr_tail", "warnings",
                  "auth")


def servers_frame(servers: Servers) -> pd.DataFrame:
    """``bench.servers``: one row per server; no secret value ever appears here."""
    import pandas as pd

    rows = []
    for row in servers.rows():
        conn, redact = row.connection, row.redact
        info = conn.info() if conn is not None else {}

        def shown(value: Any, redact: Redactor = redact) -> Any:
            return redact(value) if isinstance(value, str) else value

        rows.append({
            "name": row.name, "transport": row.transport, "status": row.current_status(),
            "tools": len(servers.pegboard.names_for_server(row.name)),
            "protocol": info.get("protocol"),
            "server_name": shown(info.get("server_name")),
            "server_version": shown(info.get("server_version")),
            **{key: shown(info.get(key)) for key in ("title", "description",
                                                      "instructions", "website")},
            "capabilities": info.get("capabilities"),
            "icons": info.get("icons"),
            "destination": shown(str(conn.destination)) if conn is not None else None,
            "error": shown(row.error or info.get("error")),
            "stderr_tail": shown(row.stderr or (conn.stderr_tail() if conn is not None
                                                 else "")),
            "warnings": [redact(w) for w in _server_warnings(servers, row.name)],
            "auth": conn.auth_text() if conn is not None else "none",
        })
    return pd.DataFrame(rows, columns=list(SERVER_COLUMNS))


def _server_warnings(servers: Servers, name: str) -> list[str]:
    """What was skipped or went wrong quietly for one server: tools left out, and a
    refresh after ``tools/list_changed`` that failed (the old tools stay), and cache
    hints that were ignored (``toolbench._transports.mcp.methods.hints``)."""
    found = describe_skipped(servers.pegboard.skipped(name))
    row = servers.row(name)
    mcp = getattr(row.connection, "mcp", None) if row is not None else None
    for tool, why in (mcp.skipped_tools if mcp is not None else []):
        found.append(f"tool {tool!r} skipped: {why}")
    responses = getattr(mcp, "responses", None)
    if responses is not None:  # cache hints the server got wrong (ignored, never a stall)
        found.extend(responses.notes)
    failed = servers.pegboard.refresh_errors.get(name)
    if failed is not None:
        found.append(f"refreshing the tool list failed, the old list stays: {failed}")
    return found
