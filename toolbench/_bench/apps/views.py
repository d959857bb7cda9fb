"""The bench's MCP App views: found in the catalog, fetched, checked, cached, opened.

``Apps`` owns whether apps are on (``Bench(apps=...)``), the views fetched so far (per server,
by URI, until that server's tools are listed again) and the views opened (so closing the
bench tears them down). A view is fetched with ``resources/read`` under the server's byte
cap; its ``_meta.ui`` (CSP, permissions, domain, border) comes from the content item. A MIME
type other than ``text/html;profile=mcp-app``, a missing resource or one over the cap gives
a ``View`` with an ``error`` and no HTML: nothing is framed with a policy it did not earn.

**Over time.** A tool's fingerprint covers its view's HTML (DESIGN.md, "MCP Apps", "Over
time"): each time a server's tools are listed, :meth:`Apps.view_states` fetches the views they
declare, through this cache, and hands ``History`` (the hook ``BaseBench`` wires) one state per
tool, ``{"sha256": ...}`` or ``{"error": ...}`` (a stable kind of failure: a view that could
not be fetched is that state, never "unchanged"). So the view a call shows is the one that
was fingerprinted and checked against the pins. A fetch that started before a re-list is not
cached after it (the cache has a generation per server).

The widget lives above this layer, so a live view is made by the factory the notebook layer
registers (:func:`register_view_factory`); without one, ``result.app`` is the pure-Python
:class:`~toolbench._bench.apps.bridge.Bridge` itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolbench._bench.apps.bridge import Bridge
from toolbench._bench.apps.meta import MIME_TYPE, ToolUi, tool_ui
from toolbench._bench.apps.opened import Opened
from toolbench._bench.apps.policy import View, build_policy, framed
from toolbench._core import html as _html
from toolbench._core.errors import Malformed, ToolError

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.apps.bridge import Host
    from toolbench._bench.journal.record import Record
    from toolbench._core.client import Result, ToolSpec
    from toolbench._routing.pegboard_names import PegEntry

APPS_COLUMNS = ("name", "server", "tool", "uri", "mime_type", "bytes", "csp", "permissions",
                "domain", "prefers_border", "error")

MAX_VIEWS_PER_LISTING = 256
"""The most distinct views fetched to fingerprint one listing; a tool whose view is past
that (in URI order) gets the state ``{"error": "not fetched: ..."}``."""
VIEWS_AT_ONCE = 1
"""How many views of one listing are fetched at the same time: one, since a read over the
byte cap restarts the connection and would fail every read beside it."""
HASH_OFF_LOOP_CHARS = 256 * 1024
"""From this many characters on, a view is hashed and framed on a worker thread."""

ViewFactory = Callable[[Bridge], Any]
_factory: ViewFactory | None = None
ViewWarmer = Callable[[], None]
_warmer: ViewWarmer | None = None


def register_view_factory(factory: ViewFactory | None) -> None:
    """Install what turns a bridge into a live view (the notebook layer's ``AppView``)."""
    global _factory
    _factory = factory


def register_view_warmer(warmer: ViewWarmer | None) -> None:
    """Install what readies a notebook for its first view (issue 46: the notebook layer's
    ``warm_views``). It is called on toolbench's loop when a server whose tools declare a
    view connects to a bench with apps on; it must return at once and never raise (it is
    called under ``suppress`` anyway: a warm-up is never worth a failed connect)."""
    global _warmer
    _warmer = warmer


class Apps:
    """MCP App views of one bench (DESIGN.md, "MCP Apps")."""

    def __init__(self, host: Host, *, enabled: bool) -> None:
        self._host = host
        self.enabled = enabled
        self._views: dict[str, dict[str, View]] = {}
        self._oversize: dict[str, dict[str, View]] = {}
        """Per server: the views whose read was over the byte cap. Such a read restarts the
        connection, and a reconnect re-lists: fetched again then, they would restart it
        forever. So they are kept across re-lists, until the server is connected anew."""
        self._generation: dict[str, int] = {}
        """Per server: how many listings were applied (a fetch from before one is not kept)."""
        self._open: weakref.WeakSet[Bridge] = weakref.WeakSet()
        self._warm_asked = False
        """Whether this bench has asked the registered warmer already (once is enough)."""

    # -- discovery ---------------------------------------------------------------------------
    def on_listing(self, server: str, entries: object, cause: str) -> None:
        """A re-list forgets the server's fetched views: they are fetched again when needed."""
        self._generation[server] = self._generation.get(server, 0) + 1
        self._views.pop(server, None)
        if cause == "connect":
            self._oversize.pop(server, None)
            self._warm(entries)

    def _warm(self, entries: object) -> None:
        """The first server with a view to connect asks the notebook to get ready for the
        first view (DESIGN.md, "MCP Apps"; issue 46): anywidget's import and the browser's
        frame process, before the first result. Only whether a tool declares a ``ui://``
        view counts: nothing the server sent goes into the warm-up."""
        if self._warm_asked or not self.enabled or _warmer is None:
            return
        if not isinstance(entries, list) or not any(
                getattr(entry.spec, "meta", None) and self.ui(entry).uri is not None
                for entry in entries):
            return
        self._warm_asked = True
        with contextlib.suppress(Exception):
            _warmer()

    @staticmethod
    def ui(entry: PegEntry) -> ToolUi:
        return tool_ui(entry.spec.meta)

    async def view(self, server: str, uri: str, timeout: float | None = None) -> View:
        """The view at ``uri`` of ``server``, fetched once per listing; never raises."""
        kept = self._views.get(server, {}).get(uri) or self._oversize.get(server, {}).get(uri)
        if kept is not None:
            return kept
        generation = self._generation.get(server, 0)
        view = await self._fetch(server, uri, timeout)
        if self._generation.get(server, 0) == generation:  # else fetched before a re-list
            self._views.setdefault(server, {})[uri] = view
        return view

    @staticmethod
    def views_declared(specs: Iterable[tuple[str, ToolSpec]]) -> dict[str, str]:
        """``{own tool name: view URI}`` of the tools that declare a view (a valid
        ``ui://`` URI): the tools whose fingerprint covers a view's HTML."""
        wanted: dict[str, str] = {}
        for name, spec in specs:
            uri = tool_ui(spec.meta).uri
            if uri is not None:
                wanted[name] = uri
        return wanted

    async def view_states(self, server: str, wanted: Mapping[str, str],
                          limit: float) -> dict[str, dict[str, str]]:
        """``{own tool name: state}`` for each tool of ``wanted`` (``views_declared``):
        ``{"sha256": hex}`` of its view's HTML as sent, or ``{"error": kind}``. Bounded: at
        most ``MAX_VIEWS_PER_LISTING`` distinct views, ``VIEWS_AT_ONCE`` at a time, all within
        ``limit`` seconds; what is not fetched by then has an error state. Never raises."""
        uris = sorted(set(wanted.values()))
        fetched, skipped = uris[:MAX_VIEWS_PER_LISTING], set(uris[MAX_VIEWS_PER_LISTING:])
        states: dict[str, dict[str, str]] = {}
        gate = asyncio.Semaphore(VIEWS_AT_ONCE)

        async def one(uri: str) -> None:
            async with gate:
                try:
                    states[uri] = view_state(await self.view(server, uri, limit))
                except Exception as exc:  # not a ToolError: still a state, never a gap
                    states[uri] = {"error": f"not fetched: {type(exc).__name__}"}

        try:
            async with asyncio.timeout(max(limit, 0.0)):
                await asyncio.gather(*(one(uri) for uri in fetched))
        except TimeoutError:
            pass
        late = {"error": f"not fetched within the server's timeout ({limit:.3g} s)"}
        over = {"error": f"not fetched: more than {MAX_VIEWS_PER_LISTING} views in one "
                         "listing"}
        return {name: states.get(uri, over if uri in skipped else late)
                for name, uri in wanted.items()}

    async def _fetch(self, server: str, uri: str, timeout: float | None) -> View:
        shown = _html.shorten(uri, 200)
        try:
            answer = await self._host.read_view(server, uri, timeout)
        except ToolError as exc:
            failed = View(server, uri, error=f"resources/read of {shown!r} failed: "
                                             f"{type(exc).__name__}: {exc}",
                          failure=f"resources/read failed: {type(exc).__name__}")
            if isinstance(exc, Malformed) and "max_message_bytes" in str(exc):
                self._oversize.setdefault(server, {})[uri] = failed
            return failed
        items = [c for c in answer.contents if isinstance(c, Mapping)]
        item = next((c for c in items if c.get("uri") == uri), items[0] if items else None)
        if item is None:
            return View(server, uri, error=f"resources/read of {shown!r} returned no contents",
                        failure="resources/read returned no contents")
        mime = item.get("mimeType")
        text = item.get("text")
        size = len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0
        if mime != MIME_TYPE:
            return View(server, uri, mime if isinstance(mime, str) else None, size,
                        error=f"view {shown!r} has MIME type {_html.shorten(repr(mime), 80)}; "
                              f"a view must be {MIME_TYPE!r}, so it is not shown",
                        failure=f"MIME type {_html.shorten(repr(mime), 80)}")
        if not isinstance(text, str):
            return View(server, uri, mime, 0,
                        error=f"view {shown!r} is not text (a view is one HTML document)",
                        failure="not text")
        meta = item.get("_meta")
        ui = meta.get("ui") if isinstance(meta, Mapping) else None
        if not isinstance(ui, Mapping):  # DESIGN: the resources/list entry is the fallback
            ui = await self._listed_ui(server, uri, timeout)
        policy = build_policy(ui if isinstance(ui, Mapping) else None, self._host.egress)

        def made() -> View:  # a large document is hashed and framed beside the loop
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
            own_base = bool(policy.csp_declared.get("baseUriDomains"))
            return View(server, uri, mime, size, framed(text, policy.csp, server_base=own_base),
                        digest, policy)

        return made() if len(text) < HASH_OFF_LOOP_CHARS else await asyncio.to_thread(made)

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
        bridge.heights = LAST_HEIGHTS
        bridge.height = LAST_HEIGHTS.get((bridge.server, bridge.uri), bridge.height)
        while len(LAST_HEIGHTS) > MAX_HEIGHTS_KEPT:  # oldest first (insertion order)
            LAST_HEIGHTS.pop(next(iter(LAST_HEIGHTS)))
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


LAST_HEIGHTS: dict[tuple[str, str], int] = {}
"""The last height each (server name, uri) view reported, in this process: a re-run starts
at it, also when the re-run makes a new bench (Run All)."""
MAX_HEIGHTS_KEPT = 1_000


def view_state(view: View) -> dict[str, str]:
    """What a tool's fingerprint covers of its view: the SHA-256 of its HTML as sent, or the
    kind of failure that left it without one."""
    if view.sha256 is not None:
        return {"sha256": view.sha256}
    return {"error": view.failure or view.error or "no view"}
