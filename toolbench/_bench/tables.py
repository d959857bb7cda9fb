"""The bench's tables: ``servers``, ``catalog()``, ``logs`` and ``records``.

Each table is a function of the collaborators it reads (``Servers``, ``PinGuard``, the
record store); ``Tables`` is the face ``Bench`` inherits, each member a one-line hand-off.
No secret value (env, headers) ever appears in a table: each server's cells go through its
``Redactor``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from toolbench._bench.apps.meta import tool_ui
from toolbench._bench.journal.record import frame
from toolbench._bench.progress.progress import logs_frame
from toolbench._bench.servers.scrub import redacted_data
from toolbench._bench.servers.table import servers_frame
from toolbench._core.schema import validate as _validate

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.overtime.guard import PinGuard
    from toolbench._bench.servers.servers import Servers

CATALOG_COLUMNS = ("name", "server", "tool", "title", "description", "parameters", "required",
                   "input_schema", "output_schema", "annotations", "icons", "meta",
                   "destination", "warnings", "pin", "ui", "visibility", "fresh_until")

def _schema_warnings(schema: Any) -> list[str]:
    """Why local argument checking is skipped for a tool (``_validate.schema_problems``)."""
    try:
        return [str(p) for p in _validate.schema_problems(schema)]
    except Exception as exc:  # a catalog must render even if one schema upsets the checker
        return [f"the schema could not be examined: {type(exc).__name__}: {exc}"]



def _fresh_until(servers: Servers, server: str) -> Any:
    """When ``server``'s tool list goes stale by its cache hints (UTC), or None: nothing
    fresh is kept (no hints, ``ttlMs: 0``, expired, or not an MCP connection)."""
    row = servers.row(server)
    mcp = getattr(row.connection, "mcp", None) if row is not None else None
    responses = getattr(mcp, "responses", None)
    return responses.fresh_until("tools/list") if responses is not None else None


def catalog_frame(servers: Servers, guard: PinGuard, server: str | None,
                  search: str | None) -> pd.DataFrame:
    """``bench.catalog()``: one row per tool, with its pin state.

    Built column by column (a dict of lists), which pandas takes faster than a list of row
    dicts, so 10,000 tools cost about twice plain pandas (issue 46)."""
    import pandas as pd

    needle = search.lower() if isinstance(search, str) and search else None
    columns: dict[str, list[Any]] = {name: [] for name in CATALOG_COLUMNS}
    add = [columns[name].append for name in CATALOG_COLUMNS]
    destination = servers.router.destination
    fresh: dict[str, Any] = {}
    for entry in servers.pegboard.entries(server):
        spec = entry.spec
        if needle and not any(needle in (v or "").lower()
                              for v in (entry.name, spec.title, spec.description)):
            continue
        ui = tool_ui(spec.meta)
        warnings = _schema_warnings(spec.input_schema)
        if spec.output_schema is not None:
            warnings += [f"output schema: {w}" for w in _schema_warnings(spec.output_schema)]
        if ui.warnings:
            warnings += ui.warnings
        values = (entry.name, entry.server, entry.tool, spec.title, spec.description,
                  spec.parameters, spec.required, spec.input_schema, spec.output_schema,
                  spec.annotations, spec.icons, spec.meta, str(destination(entry.tool_id)),
                  warnings, guard.state(entry.tool_id), ui.uri, ui.visibility,
                  fresh[entry.server] if entry.server in fresh else
                  fresh.setdefault(entry.server, _fresh_until(servers, entry.server)))
        for append, value in zip(add, values, strict=True):
            append(value)
    return pd.DataFrame(columns, columns=list(CATALOG_COLUMNS))


def logs_table(servers: Servers) -> pd.DataFrame:
    """``bench.logs``, each server's secrets hidden even in what it logged."""
    entries = servers.notifications.entries()
    redactors = {row.name: row.redact for row in servers.rows() if row.redact.active}
    if redactors:
        entries = [dataclasses.replace(e, message=redactors[e.server](e.message),
                                       data=redacted_data(e.data, redactors[e.server]))
                   if e.server in redactors else e for e in entries]
    return logs_frame(entries)


class Tables:
    """The bench's DataFrames of servers, tools, logs and records (a face: no state)."""

    if TYPE_CHECKING:  # what BaseBench builds
        connections: Servers
        guard: PinGuard
        store: RecordStore

    @property
    def servers(self) -> pd.DataFrame:
        """One row per server; no secret value (env, headers) ever appears here."""
        return servers_frame(self.connections)

    def catalog(self, server: str | None = None, search: str | None = None) -> pd.DataFrame:
        """One row per tool; ``search`` matches name, title and description, any case."""
        return catalog_frame(self.connections, self.guard, server, search)

    @property
    def logs(self) -> pd.DataFrame:
        """Every server's log messages and progress updates, oldest first (the last
        ``PER_SERVER`` of each server): ``time``, ``server``, ``kind`` (``log`` or
        ``progress``), ``level``, ``logger``, ``message``, ``data``, ``call_id`` (a progress
        update's call, as in ``records``). Text is capped; nothing here was sent by us."""
        return logs_table(self.connections)

    @property
    def records(self) -> pd.DataFrame:
        """Every call made through this bench (and loaded from its journal), oldest first."""
        return frame(self.store.snapshot())
