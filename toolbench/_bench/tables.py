"""The bench's tables: ``servers``, ``catalog()``, ``logs`` and ``records``.

``Tables`` is mixed into ``BaseBench``. No secret value (env, headers) ever appears in a
table: each server's cells go through its ``Redactor``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from toolbench._bench.journal.record import frame
from toolbench._bench.progress.progress import logs_frame
from toolbench._bench.servers.scrub import redacted_data
from toolbench._core.redact import Redactor
from toolbench._core.schema import validate as _validate
from toolbench._routing.pegboard import describe_skipped

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.servers.connecting import _Row
    from toolbench._core.ids import ToolId
    from toolbench._routing.pegboard import PegBoard
    from toolbench._routing.router import ToolRouter
    from toolbench._transports.notifications import Notifications

SERVER_COLUMNS = ("name", "transport", "status", "tools", "protocol", "server_name",
                  "server_version", "title", "description", "instructions", "capabilities",
                  "icons", "website", "destination", "error", "stderr_tail", "warnings",
                  "auth")
CATALOG_COLUMNS = ("name", "server", "tool", "title", "description", "parameters", "required",
                   "input_schema", "output_schema", "annotations", "icons", "meta",
                   "destination", "warnings", "pin")

def _schema_warnings(schema: Any) -> list[str]:
    """Why local argument checking is skipped for a tool (``_validate.schema_problems``)."""
    try:
        return [str(p) for p in _validate.schema_problems(schema)]
    except Exception as exc:  # a catalog must render even if one schema upsets the checker
        return [f"the schema could not be examined: {type(exc).__name__}: {exc}"]



class Tables:
    """The bench's DataFrames of servers, tools, logs and records; mixed into ``BaseBench``."""

    if TYPE_CHECKING:  # what BaseBench (and its other parts) provide
        _rows: dict[str, _Row]
        pegboard: PegBoard
        router: ToolRouter
        _store: RecordStore
        _notifications: Notifications

        def _pin_state(self, tool: ToolId) -> str | None: ...

    def _servers_frame(self) -> pd.DataFrame:
        import pandas as pd

        rows = []
        for row in list(self._rows.values()):
            conn, redact = row.connection, row.redact
            info = conn.info() if conn is not None else {}

            def shown(value: Any, redact: Redactor = redact) -> Any:
                return redact(value) if isinstance(value, str) else value

            rows.append({
                "name": row.name, "transport": row.transport, "status": row.current_status(),
                "tools": len(self.pegboard.names_for_server(row.name)),
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
                "warnings": [redact(w) for w in self._server_warnings(row.name)],
                "auth": conn.auth_text() if conn is not None else "none",
            })
        return pd.DataFrame(rows, columns=list(SERVER_COLUMNS))

    def _server_warnings(self, name: str) -> list[str]:
        """What was skipped or went wrong quietly for one server: tools left out, and a
        refresh after ``tools/list_changed`` that failed (the old tools stay)."""
        found = describe_skipped(self.pegboard.skipped(name))
        row = self._rows.get(name)
        mcp = getattr(row.connection, "mcp", None) if row is not None else None
        for tool, why in (mcp.skipped_tools if mcp is not None else []):
            found.append(f"tool {tool!r} skipped: {why}")
        failed = self.pegboard.refresh_errors.get(name)
        if failed is not None:
            found.append(f"refreshing the tool list failed, the old list stays: {failed}")
        return found

    @property
    def servers(self) -> pd.DataFrame:
        """One row per server; no secret value (env, headers) ever appears here."""
        return self._servers_frame()

    def catalog(self, server: str | None = None, search: str | None = None) -> pd.DataFrame:
        """One row per tool; ``search`` matches name, title and description, any case."""
        import pandas as pd

        needle = search.lower() if isinstance(search, str) and search else None
        rows = []
        for entry in self.pegboard.entries(server):
            spec = entry.spec
            if needle and not any(needle in (v or "").lower()
                                  for v in (entry.name, spec.title, spec.description)):
                continue
            rows.append({
                "name": entry.name, "server": entry.server, "tool": entry.tool,
                "title": spec.title, "description": spec.description,
                "parameters": spec.parameters, "required": spec.required,
                "input_schema": spec.input_schema, "output_schema": spec.output_schema,
                "annotations": spec.annotations, "icons": spec.icons, "meta": spec.meta,
                "destination": str(self.router.destination(entry.tool_id)),
                "warnings": _schema_warnings(spec.input_schema) + [
                    f"output schema: {w}" for w in _schema_warnings(spec.output_schema)
                ] if spec.output_schema is not None else _schema_warnings(spec.input_schema),
                "pin": self._pin_state(entry.tool_id),
            })
        return pd.DataFrame(rows, columns=list(CATALOG_COLUMNS))

    @property
    def logs(self) -> pd.DataFrame:
        """Every server's log messages and progress updates, oldest first (the last
        ``PER_SERVER`` of each server): ``time``, ``server``, ``kind`` (``log`` or
        ``progress``), ``level``, ``logger``, ``message``, ``data``, ``call_id`` (a progress
        update's call, as in ``records``). Text is capped; nothing here was sent by us."""
        entries = self._notifications.entries()
        redactors = {name: row.redact for name, row in self._rows.items() if row.redact.active}
        if redactors:  # a server's secrets never show, even in what it logged
            entries = [dataclasses.replace(e, message=redactors[e.server](e.message),
                                           data=redacted_data(e.data, redactors[e.server]))
                       if e.server in redactors else e for e in entries]
        return logs_frame(entries)

    @property
    def records(self) -> pd.DataFrame:
        """Every call made through this bench (and loaded from its journal), oldest first."""
        return frame(self._store.snapshot())
