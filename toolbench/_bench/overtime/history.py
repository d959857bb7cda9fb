"""The bench over time: what servers declared, listing after listing.

``History`` owns the tools' last two listings per server (fingerprinted), the other kinds'
(``KindListings``, ``toolbench._bench.overtime.kinds``) and the ``SnapshotWriter`` that stores
them in the journal. Its one entry point from below is :meth:`History.on_listing`, which the
pegboard calls each time a server's tool listing is applied (``add_service`` on connect,
``refresh`` on ``tools/list_changed`` and on reconnect), in the same synchronous step that
publishes the listing. There, and only there:

- the views the tools declare (MCP Apps) are fetched, through the apps' cache
  (:meth:`History.hash_views_with`, a hook ``BaseBench`` wires, since the apps sit above this
  room), so that each fingerprint covers its view's HTML;
- every tool's fingerprint is computed (``toolbench._bench.overtime.snapshots``), once per
  listing;
- with a journal, the listing is queued to be stored as a snapshot (on a worker thread);
- with pins, the listing is handed to the ``PinGuard`` (``guard.py``), which pins, blocks
  and warns.

It reads the servers (their redactors, resource clients and timeouts) and the record store
(is the journal still writable), and may import ``toolbench._bench.overtime``,
``toolbench._bench.servers``, ``toolbench._bench.journal`` and ``_core``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

from toolbench._bench.overtime.diff import diff as _diff
from toolbench._bench.overtime.kinds import KindListings, Listing
from toolbench._bench.overtime.pins import Key, now_text
from toolbench._bench.overtime.snapshot_store import SnapshotWriter
from toolbench._bench.overtime.snapshots import fingerprint_tools, item_from_row, snapshot_frame
from toolbench._bench.servers.naming import prompt_name, resolve
from toolbench._core.errors import ToolError
from toolbench._core.ids import ToolId
from toolbench._core.offload import off_loop

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.overtime.guard import PinGuard
    from toolbench._bench.servers.servers import Servers
    from toolbench._routing.pegboard import PegBoard, PegEntry

T = TypeVar("T")


class ViewHasher(Protocol):
    """What fetches the tools' views for their fingerprints (the bench's ``Apps``)."""

    def views_declared(self, specs: Iterable[tuple[str, Any]]) -> dict[str, str]:
        """``{own name: view URI}`` of the tools that declare a view."""

    async def view_states(self, server: str, wanted: Mapping[str, str],
                          limit: float) -> dict[str, dict[str, str]]:
        """``{own name: {"sha256": ...} or {"error": ...}}`` of each wanted view."""


_log = logging.getLogger("toolbench.overtime")
Items = dict[str, dict[str, Any]]
_FINGERPRINT = re.compile(r"[0-9a-f]{64}")


def _now() -> datetime:
    return datetime.now(UTC)


class History:
    """Listings over time: remembered, stored as snapshots, checked against the pins."""

    def __init__(self, servers: Servers, store: RecordStore, guard: PinGuard,
                 pegboard: PegBoard, journal: str | os.PathLike[str] | None) -> None:
        self._servers = servers
        self._store = store
        self._guard = guard
        self._pegboard = pegboard
        self._listings: dict[str, tuple[datetime, Items]] = {}
        self._turns: dict[str, int] = {}  # per server: how many tool listings were applied
        self._previous: dict[str, tuple[datetime, Items]] = {}
        self._snapshots = SnapshotWriter(os.fspath(journal)) if journal is not None else None
        self._kinds = KindListings(servers, self.keep_kind)
        self._hasher: ViewHasher | None = None

    def hash_views_with(self, hasher: ViewHasher) -> None:
        """Fingerprint each tool's view HTML, fetched by ``hasher`` (the bench's apps)."""
        self._hasher = hasher

    @property
    def kinds(self) -> KindListings:
        """The non-tool kinds as last listed (read them; ``History`` keeps them)."""
        return self._kinds

    # -- the hook ---------------------------------------------------------------------------
    async def on_listing(self, server: str, entries: list[PegEntry], cause: str) -> None:
        """A listing was applied: fingerprint (beside the loop when it is big), store, check.

        With pins, the server's calls wait meanwhile (``PinGuard.relisting``), so none goes
        out between the board's new tools and their check. Listings of one server are kept
        in the order they were applied: one overtaken by a newer one is dropped."""
        taken = _now()
        turn = self._turns[server] = self._turns.get(server, 0) + 1
        pairs = [(e.tool, e.spec) for e in entries]
        redact = self._servers.redactor(server)
        # Shielded: the board holds the new tools already, so their check must follow even if
        # the listing's caller is cancelled now (the work is bounded: CPU, no I/O).
        with self._guard.relisting(server):
            views, cancelled = await self._views(server, pairs)
            with anyio.CancelScope(shield=True):
                items = await off_loop(
                    lambda: _redacted(fingerprint_tools(pairs, views), redact), len(pairs))
                if self._turns.get(server) == turn:  # else a newer listing is kept instead
                    self._keep_tools(server, taken, cause, items)
            if cancelled is not None:
                raise cancelled

    async def _views(self, server: str, pairs: list[tuple[str, Any]],
                     ) -> tuple[dict[str, dict[str, str]], BaseException | None]:
        """The state of each tool's view HTML (bounded by the server's timeout). Cancelled
        meanwhile, every view is "not fetched" (never "unchanged"), and the cancellation is
        handed back to be raised once the listing is checked."""
        if self._hasher is None:
            return {}, None
        wanted = self._hasher.views_declared(pairs)
        if not wanted:
            return {}, None
        try:
            return await self._hasher.view_states(server, wanted,
                                                  self._servers.limit(server, None)), None
        except anyio.get_cancelled_exc_class() as exc:
            return {name: {"error": "not fetched: the listing was cancelled"}
                    for name in wanted}, exc
        except Exception as exc:  # a bug there must not leave the listing unchecked
            _log.warning("fetching the views of %r failed: %s: %s", server,
                         type(exc).__name__, exc)
            return {name: {"error": f"not fetched: {type(exc).__name__}"}
                    for name in wanted}, None

    def _keep_tools(self, server: str, taken: datetime, cause: str, items: Items) -> None:
        old = self._listings.get(server)
        if old is not None:
            self._previous[server] = old
        self._listings[server] = (taken, items)
        if self._snapshots is not None and self._journal_writable():
            self._snapshots.store(server, "tool", taken, cause, list(items.values()))
        self._guard.check(server, items)

    def tool_items(self, server: str) -> Items | None:
        """The items of ``server``'s last tool listing kept (fingerprinted, redacted), or
        None: what the follower compares the next listing with, without fingerprinting the
        same listing twice."""
        listing = self._listings.get(server)
        return None if listing is None else listing[1]

    def _redacted(self, server: str, items: Items) -> Items:
        return _redacted(items, self._servers.redactor(server))

    def _journal_writable(self) -> bool:
        """False for a damaged journal file: nothing more is written into it (its records
        stay in memory, and so do the snapshots)."""
        journal = self._store.journal
        return journal is None or journal.closed or not journal.degraded

    # -- the other kinds --------------------------------------------------------------------
    def listing_applied(self, server: str, kinds: tuple[str, ...], why: str) -> None:
        """A listing was applied: with a journal or pins, list the other kinds it may have
        changed, in the background (``KindListings.listing_applied``)."""
        if self._snapshots is None and not self._guard.active:
            return
        self._kinds.listing_applied(server, kinds, why)

    def keep_kind(self, server: str, kind: str, taken: datetime, cause: str,
                  items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Keep one listing of a non-tool kind: remembered, stored, checked against pins."""
        items = list(self._redacted(server, {str(i): it for i, it in enumerate(items)})
                     .values())
        self._kinds.remember(server, kind, taken, items)
        if self._snapshots is not None and self._journal_writable():
            self._snapshots.store(server, kind, taken, cause, items)
        self._guard.check(server, {str(i["name"]): i for i in items}, kind)
        return items

    async def kinds_listed(self, server: str) -> None:
        """At connect, with a journal or pins: wait for the other kinds' first listing (it is
        bounded), so the connect's snapshot is whole and its PinWarning is the connect's."""
        await self._kinds.listed(server)
        await self._guard.warned(server)

    async def settled(self, timeout: float | None = None) -> None:
        """Wait (bounded) until every listing in flight is kept (tests, snapshot, close)."""
        await self._kinds.settled(timeout)
        await self._guard.warned()

    def written(self, timeout: float) -> bool:
        """Wait (the caller's thread, never the loop) until every snapshot queued so far is in
        the journal; False if some are still pending after ``timeout`` seconds. A test that
        fills the disk on purpose waits here first, so the warning it sees is its own."""
        return self._snapshots is None or self._snapshots.wait(timeout)

    def kind_baseline(self, server: str, kind: str) -> Items | None:
        """The listing of ``kind`` taken at connect (with a journal or pins), if any."""
        found = self._kinds.latest(server, kind)
        return None if found is None else {str(i["name"]): i for i in found[1]}

    async def gated(self, kind: str, server: str, name: str, limit: float,
                    run: Callable[[float], Awaitable[T]]) -> T:
        """``run(limit)``, unless ``name`` (a URI, or a prompt's own name) is a changed pin:
        then ``Refused`` and nothing is sent (``toolbench._bench.overtime.kinds``)."""
        if not self._guard.active:
            return await run(limit)
        await self._kinds.wait(server, limit)
        return await self._guard.gated(server, kind, name, lambda: run(limit))

    # -- snapshots --------------------------------------------------------------------------
    def _tool_items(self, server: str | None) -> list[tuple[str, datetime, dict[str, Any]]]:
        out: list[tuple[str, datetime, dict[str, Any]]] = []
        for name in sorted(self._listings if server is None else [server]):
            listing = self._listings.get(name)
            if listing is None or name not in self._servers:
                continue
            taken, items = listing
            out.extend((name, taken, item) for item in items.values())
        return out

    async def snapshot(self, server: str | None) -> pd.DataFrame:
        """Tools as last listed; resources, templates and prompts listed now (and kept)."""
        self._servers.check_open()
        if server is not None and server not in self._servers:
            raise ValueError(f"no server {server!r}; connected: {sorted(self._servers.names())}")
        rows = self._tool_items(server)
        taken = _now()
        kinds = (("resource", lambda c, s: c.list_resources(s), "resources"),
                 ("resource_template", lambda c, s: c.list_resource_templates(s),
                  "resource templates"),
                 ("prompt", lambda c, s: c.list_prompts(s), "prompts"))
        for kind, ask, what in kinds:
            try:
                found = await self._servers.gather(server, ask, what)
            except ToolError:  # the one server asked for does not offer them: none
                found = []
            except Exception as exc:  # a ToolBox or Toolset server: tools only
                _log.debug("no %s for %r: %s", what, server, exc)
                found = []
            per: dict[str, list[dict[str, Any]]] = {}
            for name, row in found:
                per.setdefault(name, []).append(item_from_row(kind, row))
            for name, items in per.items():  # stored, and checked against the pins
                kept = self.keep_kind(name, kind, taken, "snapshot", items)
                rows.extend((name, taken, item) for item in kept)
        await self._guard.warned(server)
        return snapshot_frame(rows)

    def changes_since(self) -> pd.DataFrame:
        """Per server, the diff of the listing before the last one and the last one."""
        import pandas as pd

        frames = []
        for server, (taken, items) in sorted(self._listings.items()):
            before = self._previous.get(server)
            if before is None:
                continue
            frames.append(_diff(snapshot_frame((server, before[0], i)
                                               for i in before[1].values()),
                                snapshot_frame((server, taken, i) for i in items.values())))
        for server, (then, old), (now, new) in self._kinds.changed():  # resources, prompts
            frames.append(_diff(snapshot_frame((server, then, i) for i in old),
                                snapshot_frame((server, now, i) for i in new)))
        if not frames:
            return _diff(snapshot_frame([]), snapshot_frame([]))
        out = pd.concat(frames, ignore_index=True)
        out.attrs["toolbench"] = "diff"
        return out

    def kind_listing(self, server: str, kind: str) -> Listing | None:
        """When ``kind`` of ``server`` was last listed, and what it listed."""
        return self._kinds.latest(server, kind)

    # -- pins -------------------------------------------------------------------------------
    async def pin(self) -> int:
        """Pin every item as last listed (``bench.pin()``)."""
        self._guard.need()
        stamp = now_text()
        entries: dict[Key, dict[str, Any]] = {}
        for server, (_, items) in self._listings.items():
            if server not in self._servers:
                continue
            for item in items.values():
                entries[(server, "tool", str(item["name"]))] = {
                    "fingerprint": item["fingerprint"], "item": item, "pinned": stamp}
        for server, kind, item in self._kinds.items():
            entries[(server, kind, str(item["name"]))] = {"fingerprint": item["fingerprint"],
                                                          "item": item, "pinned": stamp}
        return await self._guard.pin_all(entries)

    async def approve(self, name: str, fingerprint: str | None = None) -> str | None:
        """Accept a changed pinned item (``bench.approve``): the version its last
        PinWarning showed, or the one ``fingerprint`` names; None when it changed again
        since that warning (a new one shows the newer diff, and nothing is approved)."""
        self._guard.need()
        if fingerprint is not None and not (isinstance(fingerprint, str)
                                            and _FINGERPRINT.fullmatch(fingerprint)):
            raise ValueError(f"fingerprint {fingerprint!r} is not a fingerprint: 64 lowercase "
                             "hex digits (SHA-256), as bench.pins, a snapshot or a "
                             "PinWarning's diff shows it")
        other = (self._guard.changed_other(
            name, lambda server, prompt: prompt_name(self._pegboard, server, prompt))
            if isinstance(name, str) else None)
        if other is not None:
            shown = self._guard.shown(other)
            await self._kinds.wait(other[0], self._servers.limit(other[0], None))
            new = self._guard.current(other)
            if new is None:
                raise ValueError(f"{name!r} is no longer changed (approved or listed as pinned "
                                 "meanwhile); nothing to approve")
            if not await self._agreed(other, name, fingerprint, shown, new):
                return None
            return await self._guard.approve_other(other, new)
        tool = resolve(self._pegboard, name).tool
        item = self._listed_tool(tool)
        key = (tool.server, "tool", str(item["name"]))
        shown = self._guard.shown(key)  # what the user saw, before a re-list in flight lands
        await self._guard.settled(tool.server, self._servers.limit(tool.server, None))
        item = self._listed_tool(tool)
        if not await self._agreed(key, str(tool), fingerprint, shown, item):
            return None
        return await self._guard.approve_tool(tool, item)

    def _listed_tool(self, tool: ToolId) -> dict[str, Any]:
        listing = self._listings.get(tool.server)
        item = listing[1].get(tool.tool) if listing is not None else None
        if item is None:
            raise ValueError(f"tool {tool} has not been listed; nothing to approve")
        return item

    async def _agreed(self, key: Key, name: str, fingerprint: str | None,
                      shown: dict[str, Any] | None, new: dict[str, Any]) -> bool:
        """Whether ``new`` (listed now) is what approving ``name`` may pin: the version
        ``fingerprint`` names, else the one its last PinWarning showed."""
        if fingerprint is not None:
            if new["fingerprint"] != fingerprint:
                raise ValueError(
                    f"fingerprint {fingerprint!r} is not the version of {name} listed now "
                    f"({new['fingerprint']}): approve(name, fingerprint=...) approves that "
                    "version only; nothing was approved")
            return True
        if shown is None or shown["fingerprint"] == new["fingerprint"]:
            return True
        await self._guard.changed_again(key, shown, new)
        return False

    def close(self) -> None:
        """Finish writing snapshots and pins (a worker thread; bounded)."""
        if self._snapshots is not None:
            self._snapshots.close()
        self._guard.close()


def _redacted(items: Items, redact: Callable[[str], str] | None) -> Items:
    """The items with the server's secrets hidden in every string (a tool may be named
    after one): what is shown, stored in the journal and pinned. Fingerprints are of what
    the server declared; the keys stay the tools' own names, for routing."""
    if redact is None:
        return items
    return {name: _deep(item, redact) for name, item in items.items()}


def _deep(value: Any, redact: Any) -> Any:
    """``value`` with ``redact`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: _deep(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep(v, redact) for v in value]
    return value
