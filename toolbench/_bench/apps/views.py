"""The bench's MCP App views: found in the catalog, fetched, checked, cached, opened.

``Apps`` owns whether apps are on (``Bench(apps=...)``), the views fetched so far (per server,
by URI, until that server's tools are listed again) and the views opened (so closing the
bench tears them down). A view is fetched with ``resources/read`` under the server's byte
cap; its ``_meta.ui`` (CSP, permissions, domain, border) comes from the content item. A MIME
type other than ``text/html;profile=mcp-app``, a missing resource or one over the cap gives
a ``View`` with an ``error`` and no HTML: nothing is framed with a policy it did not earn.

The widget lives above this layer, so a live view is made by the factory the notebook layer
registers (:func:`register_view_factory`); without one, ``result.app`` is the pure-Python
:class:`~toolbench._bench.apps.bridge.Bridge` itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolbench._bench.apps.bridge import Bridge, Opened
from toolbench._bench.apps.meta import MIME_TYPE, ToolUi, tool_ui
from toolbench._bench.apps.policy import View, build_policy, framed
from toolbench._core import html as _html
from toolbench._core.errors import ToolError

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.apps.bridge import Host
    from toolbench._bench.journal.record import Record
    from toolbench._core.client import Result
    from toolbench._routing.pegboard_names import PegEntry

APPS_COLUMNS = ("name", "server", "tool", "uri", "mime_type", "bytes", "csp", "permissions",
                "domain", "prefers_border", "error")

ViewFactory = Callable[[Bridge], Any]
_factory: ViewFactory | None = None


def register_view_factory(factory: ViewFactory | None) -> None:
    """Install what turns a bridge into a live view (the notebook layer's ``AppView``)."""
    global _factory
    _factory = factory


class Apps:
    """MCP App views of one bench (DESIGN.md, "MCP Apps")."""

    def __init__(self, host: Host, *, enabled: bool) -> None:
        self._host = host
        self.enabled = enabled
        self._views: dict[str, dict[str, View]] = {}
        self._open: weakref.WeakSet[Bridge] = weakref.WeakSet()

    # -- discovery ---------------------------------------------------------------------------
    def on_listing(self, server: str, entries: object, cause: str) -> None:
        """A re-list forgets the server's fetched views: they are fetched again when needed."""
        self._views.pop(server, None)

    @staticmethod
    def ui(entry: PegEntry) -> ToolUi:
        return tool_ui(entry.spec.meta)

    async def view(self, server: str, uri: str, timeout: float | None = None) -> View:
        """The view at ``uri`` of ``server``, fetched once per listing; never raises."""
        kept = self._views.get(server, {}).get(uri)
        if kept is not None:
            return kept
        view = await self._fetch(server, uri, timeout)
        self._views.setdefault(server, {})[uri] = view
        return view

    async def _fetch(self, server: str, uri: str, timeout: float | None) -> View:
        shown = _html.shorten(uri, 200)
        try:
            answer = await self._host.read_view(server, uri, timeout)
        except ToolError as exc:
            return View(server, uri, error=f"resources/read of {shown!r} failed: "
                                           f"{type(exc).__name__}: {exc}")
        items = [c for c in answer.contents if isinstance(c, Mapping)]
        item = next((c for c in items if c.get("uri") == uri), items[0] if items else None)
        if item is None:
            return View(server, uri, error=f"resources/read of {shown!r} returned no contents")
        mime = item.get("mimeType")
        text = item.get("text")
        size = len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0
        if mime != MIME_TYPE:
            return View(server, uri, mime if isinstance(mime, str) else None, size,
                        error=f"view {shown!r} has MIME type {_html.shorten(repr(mime), 80)}; "
                              f"a view must be {MIME_TYPE!r}, so it is not shown")
        if not isinstance(text, str):
            return View(server, uri, mime, 0,
                        error=f"view {shown!r} is not text (a view is one HTML document)")
        meta = item.get("_meta")
        ui = meta.get("ui") if isinstance(meta, Mapping) else None
        if not isinstance(ui, Mapping):  # DESIGN: the resources/list entry is the fallback
            ui = await self._listed_ui(server, uri, timeout)
        policy = build_policy(ui if isinstance(ui, Mapping) else None, self._host.egress)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        return View(server, uri, mime, size, framed(text, policy.csp), digest, policy)

    async def _listed_ui(self, server: str, uri: str, timeout: float | None,
                         ) -> Mapping[str, Any] | None:
        """``_meta.ui`` from the view's ``resources/list`` entry; None if it has none or the
        listing fails (the view is then framed with the strictest policy)."""
        try:
            meta = await self._host.listed_meta(server, uri, timeout)
        except (ToolError, TimeoutError):
            return None
        ui = meta.get("ui") if meta is not None else None
        return ui if isinstance(ui, Mapping) else None

    async def frame(self, server: str | None) -> pd.DataFrame:
        """``bench.apps()``: one row per tool with a view (``APPS_COLUMNS``)."""
        import pandas as pd

        rows = []
        for entry in self._host.entries(server):
            ui = self.ui(entry)
            if ui.uri is None:
                continue
            view = await self.view(entry.server, ui.uri)
            policy = view.policy
            rows.append({
                "name": entry.name, "server": entry.server, "tool": entry.tool,
                "uri": ui.uri, "mime_type": view.mime_type, "bytes": view.bytes,
                "csp": policy.csp if policy else None,
                "permissions": list(policy.permissions) if policy else [],
                "domain": policy.domain if policy else None,
                "prefers_border": policy.prefers_border if policy else False,
                "error": view.error})
        return pd.DataFrame(rows, columns=list(APPS_COLUMNS), dtype=object)

    # -- opening ----------------------------------------------------------------------------
    async def attach(self, entry: PegEntry | None, record: Record, result: Result) -> None:
        """Give a call's result its view opener, when apps are on and the tool has a view."""
        if not self.enabled or entry is None:
            return
        ui = self.ui(entry)
        if ui.uri is None:
            return
        view = await self.view(entry.server, ui.uri)
        if view.html is None:
            return
        result.call_id = record.call_id
        result.app_opener = lambda: self.open(entry, view, Opened.of(record, result))

    def open(self, entry: PegEntry, view: View, opened: Opened) -> Any:
        """A live view of one call: the registered factory's widget, else the bridge."""
        bridge = Bridge(self._host, entry, view, opened)
        self._open.add(bridge)
        return bridge if _factory is None else _factory(bridge)

    async def reopen(self, call_id: object) -> Any:
        """``bench.app(call_id)``: a live view of a recorded call (this session's or a
        journal's), sent its recorded input and result."""
        if not isinstance(call_id, str):
            raise TypeError(f"a call id is a str, not {type(call_id).__name__} {call_id!r}")
        if not self.enabled:
            raise ValueError("this bench was made with apps=False: no view is shown")
        record = self._host.record(call_id)
        if record is None or record.kind != "tool":
            raise KeyError(f"no tool call {call_id!r} in bench.records")
        entry = self._host.entry_of(record.server, record.tool)
        ui = self.ui(entry) if entry is not None else None
        if entry is None or ui is None or ui.uri is None:
            raise ValueError(f"call {call_id!r}: tool {record.tool!r} of {record.server!r} "
                             "has no MCP App view in the current catalog")
        view = await self.view(entry.server, ui.uri)
        if view.html is None:
            raise ValueError(f"call {call_id!r}: its view cannot be shown: {view.error}")
        return self.open(entry, view, Opened.of_record(record))

    async def teardown_all(self) -> None:
        """Closing the bench tears down every open view (each bounded)."""
        await asyncio.gather(*(bridge.teardown() for bridge in list(self._open)))
