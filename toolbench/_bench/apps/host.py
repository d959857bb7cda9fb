"""What a view's bridge may do in its bench: the one place it reaches the collaborators.

``BenchHost`` keeps nothing of its own; it hands a bridge's calls to ``Calls.invoke`` and its
reads to ``Fetches.read_one`` (so a view's traffic is checked, bounded and recorded like any
other), records a refused call, files a view's log message in ``bench.logs`` (``kind``
``app``) and passes a sampling request to the bench's handler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from toolbench._bench.journal.record import Record, make_record, new_call_id, utcnow
from toolbench._bench.servers.naming import Target
from toolbench._core import html as _html
from toolbench._core.errors import Refused, ToolError
from toolbench._core.ids import Provenance

if TYPE_CHECKING:
    from toolbench._bench.calls.calling import Calls
    from toolbench._bench.calls.fetches import Fetches
    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.servers.servers import Servers
    from toolbench._core.client import Result
    from toolbench._core.contents import ReadResult
    from toolbench._core.ids import Egress
    from toolbench._routing.pegboard import PegBoard
    from toolbench._routing.pegboard_names import PegEntry
    from toolbench._transports.server_requests import ServerRequests


class BenchHost:
    """The bench as one view's bridge sees it (``bridge.Host``)."""

    def __init__(self, servers: Servers, pegboard: PegBoard, calls: Calls, fetches: Fetches,
                 store: RecordStore, requests: ServerRequests) -> None:
        self._servers = servers
        self._pegboard = pegboard
        self._calls = calls
        self._fetches = fetches
        self._store = store
        self._requests = requests

    @property
    def egress(self) -> Egress | None:
        return self._servers.egress

    @property
    def has_sampling(self) -> bool:
        return self._requests.sampling is not None

    def limit(self, server: str) -> float:
        return self._servers.limit(server, None)

    def entries(self, server: str | None) -> list[PegEntry]:
        return self._pegboard.entries(server)

    def entry_of(self, server: str, tool: str) -> PegEntry | None:
        """The entry of ``server``'s own tool named ``tool`` (not a pegboard name)."""
        return next((e for e in self._pegboard.entries(server) if e.tool == tool), None)

    def record(self, call_id: str) -> Record | None:
        return next((r for r in reversed(self._store.snapshot()) if r.call_id == call_id),
                    None)

    async def read_view(self, server: str, uri: str, timeout: float | None) -> ReadResult:
        """A view's document, read under the server's byte cap; not a record of the user's."""
        client = self._servers.resource_client(server)
        answer: ReadResult = await client.read_resource(
            server, uri, timeout=self._servers.limit(server, timeout))
        return answer

    async def listed_meta(self, server: str, uri: str, timeout: float | None,
                          ) -> dict[str, Any] | None:
        """The ``_meta`` that ``server``'s ``resources/list`` gives ``uri`` (a view's fallback
        ``_meta.ui``); None when it lists none."""
        client = self._servers.resource_client(server)
        with anyio.fail_after(self._servers.limit(server, timeout)):
            rows = await client.list_resources(server)
        row = next((r for r in rows if r.get("uri") == uri), None)
        meta = row.get("meta") if row is not None else None
        return meta if isinstance(meta, dict) else None

    async def call(self, entry: PegEntry, arguments: Any, provenance: dict[str, Any],
                   ) -> tuple[Result | None, ToolError | None]:
        target = Target(entry.name, entry.tool_id, entry.spec)
        _, result, error = await self._calls.invoke(
            target, arguments, batch=None, timeout=None,
            provenance=Provenance.from_dict(provenance))
        return result, error

    def refuse(self, server: str, tool: str, arguments: Any, provenance: dict[str, Any],
               error: Refused) -> None:
        """A view's call refused before the server was asked leaves its record too."""
        self._store.append(make_record(
            call_id=new_call_id(), batch=None, started=utcnow(), server=server, tool=tool,
            name=tool, arguments=dict(arguments), latency_s=0.0, provenance=provenance,
            error=error))

    async def read(self, server: str, uri: str, provenance: dict[str, Any],
                   ) -> tuple[ReadResult | None, ToolError | None]:
        _, answer, error = await self._fetches.read_one(
            server, uri, batch=None, timeout=None, provenance=Provenance.from_dict(provenance))
        return answer, error

    def log(self, server: str, level: Any, logger: Any, data: Any) -> None:
        message = data if isinstance(data, str) else _html.shorten(repr(data), 2000)
        if isinstance(data, dict) and isinstance(data.get("message"), str):
            message = data["message"]
        self._servers.notifications.add(
            server, "app", level=level if isinstance(level, str) else None,
            logger=logger if isinstance(logger, str) else None, message=message, data=data)

    async def sample(self, server: str, params: Any) -> Any:
        import mcp_types as types

        checked = types.CreateMessageRequestParams.model_validate(dict(params))
        return await self._requests.answer_sampling(server, checked)
