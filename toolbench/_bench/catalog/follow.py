"""A bench's catalog follows its servers: list changes and reconnects re-list, one way.

``Follower`` owns the last listing of each kind per server (``kept``), the re-list counts
and the background baselines. At connect ``Servers`` registers the server's tools
(``PegBoard.add_service(..., follow=False)``) and then tells its ``on_connected`` listeners:
:meth:`Follower.adopt` hooks the connection's events (``toolbench._transports.mcp.events``):

- ``tools`` / ``resources`` / ``prompts``: the server said that list changed;
- ``connected``: the one event of a connection becoming ready, heard here for every reconnect
  (a restarted stdio server, an HTTP server that came back). Tools, resources, resource
  templates and prompts are all listed again, exactly as after a ``list_changed``: a server
  that came back with a renamed tool, resource or prompt has the new one in the catalog.
  The connection waits (within ``connect_timeout``) for this round before the request that
  reconnected is sent (``toolbench._transports.mcp.lifecycle``, "Settling"): the tools, and
  with pins every kind, are applied first, so that request is checked against them. Without
  pins, the other kinds are listed again in the background.

Each event is coalesced by the connection (one round in flight plus one pending), and every
round ends in :meth:`Follower.apply_listing`, **the one place where a server's listing
is applied** (at connect too). There:

- tools are on the pegboard already (its ``on_listing`` hook gave them to the snapshots and
  pins, ``toolbench._bench.overtime.history``);
- resources, resource templates and prompts are kept here (``kept``), and handed to
  ``History.keep_kind`` (a snapshot with a journal, a check against the pins),
  so a re-list is stored exactly as one of tools is, without listing twice;
- a change against the previous listing (added, removed, or changed by fingerprint) is one
  ``bench.logs`` row per kind (``kind`` ``log``, ``logger`` ``toolbench``, ``data["event"]``
  ``catalog_changed``).

At connect, the other kinds are listed once to have something to compare with: by
``History`` (awaited) with a journal or pins, else here in the background (a baseline,
neither stored nor pinned).

It may import ``toolbench._bench.catalog.listing``, ``toolbench._bench.overtime``,
``toolbench._bench.servers``, ``_routing``, ``_transports`` and ``_core``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from toolbench._bench.overtime.snapshots import item_from_row, item_from_spec
from toolbench._core import html as _html
from toolbench._core.errors import ToolError
from toolbench._transports.mcp.client import NotOffered

if TYPE_CHECKING:
    from toolbench._bench.catalog.listing import Listings
    from toolbench._bench.overtime.guard import PinGuard
    from toolbench._bench.overtime.history import History
    from toolbench._bench.servers.servers import Servers
    from toolbench._routing.connections import Connection
    from toolbench._routing.pegboard import PegBoard

_log = logging.getLogger(__name__)

ListingKind = Literal["tools", "resources", "prompts"]
ALL_KINDS: tuple[ListingKind, ...] = ("tools", "resources", "prompts")
Why = Literal["connect", "list_changed", "reconnect"]
ItemKind = Literal["tool", "resource", "resource_template", "prompt"]
Items = dict[str, dict[str, Any]]
"""A listing: ``{item name: snapshot item}`` (a resource's name is its URI)."""
SHOWN_NAMES = 20
"""Names a change row lists per kind of change (the count is always whole)."""
_WORDS = {"tool": "tools", "resource": "resources", "resource_template": "resource templates",
          "prompt": "prompts"}


class Follower:
    """Re-listing on list changes and reconnects, and the listings it keeps."""

    def __init__(self, servers: Servers, pegboard: PegBoard, history: History,
                 guard: PinGuard, listings: Listings, *, stored: bool) -> None:
        """``stored``: the bench has a journal (``History`` lists the other kinds at
        connect, as it does with pins)."""
        self._servers = servers
        self._pegboard = pegboard
        self._history = history
        self._guard = guard
        self._listings = listings
        self._listed_at_connect = stored or guard.active
        self._relist_counts: dict[str, dict[str, int]] = {}
        self._kept: dict[str, dict[ItemKind, Items]] = {}
        self._baselines: set[asyncio.Task[None]] = set()

    def relists(self) -> dict[str, dict[str, int]]:
        """Per server, how many re-lists of each kind were applied (a copy; tests and
        benchmarks)."""
        return {server: dict(counts) for server, counts in self._relist_counts.items()}

    def kept(self, server: str) -> dict[ItemKind, Items]:
        """The last listing of each kind of ``server`` (a copy; tools as fingerprinted
        items too)."""
        return dict(self._kept.get(server, {}))

    async def adopt(self, name: str, connection: Connection) -> None:
        """A server connected (``Servers.on_connected``): follow it, apply its tools'
        listing, and with a journal or pins wait for its other kinds' first listing (it is
        bounded), so the connect's snapshot is whole and its PinWarning is the connect's."""
        self._follow(name, connection)  # list changes and reconnects re-list
        self.apply_listing(name, ("tools",), "connect")
        await self._history.kinds_listed(name)

    def _follow(self, name: str, connection: Connection) -> None:
        """Hook ``connection``'s events to :meth:`_relist` (an MCP connection only), and take
        the baseline of its resources, templates and prompts in the background."""
        mcp = getattr(connection, "mcp", None)
        if mcp is None:
            return

        def on(kinds: tuple[ListingKind, ...], why: Why) -> Any:
            async def listener(_server: str) -> None:
                row = self._servers.row(name)
                if row is None or row.connection is not connection:
                    return  # disconnected or replaced since
                if why == "reconnect" and not self._guard.active:
                    # awaited: the tools only; the other kinds in the background
                    self._in_background(name, lambda server: self._relist(
                        server, ("resources", "prompts"), why))
                    await self._relist(name, ("tools",), why)
                    return
                await self._relist(name, kinds, why)
            return listener

        for kind in ALL_KINDS:
            mcp.add_listener(kind, on((kind,), "list_changed"))
        mcp.add_listener("connected", on(ALL_KINDS, "reconnect"))
        self._kept.pop(name, None)  # a new connection under an old name starts afresh
        self._kept.setdefault(name, {})["tool"] = self._listed_tools(name)
        if self._listed_at_connect:
            return  # History lists the other kinds at connect: that is the baseline
        self._in_background(name, on(("resources", "prompts"), "connect"))

    def _in_background(self, name: str, listener: Any) -> None:
        """Run ``listener(name)`` in a task of its own (a listing nothing waits for)."""
        task = asyncio.get_running_loop().create_task(listener(name),
                                                      name=f"toolbench-relist-{name}")
        self._baselines.add(task)  # asyncio keeps only weak references to tasks
        task.add_done_callback(self._baselines.discard)

    def _listed_tools(self, server: str) -> Items:
        """The tools as last listed: History fingerprinted them when the listing was applied
        (beside the loop, when many), so they are not fingerprinted here again."""
        entries = self._pegboard.entries(server)
        kept = self._history.tool_items(server)
        if kept is not None and kept.keys() == {e.tool for e in entries}:
            return dict(kept)
        return {e.tool: item_from_spec(e.spec, e.tool) for e in entries}

    async def _relist(self, server: str, kinds: Iterable[ListingKind], why: Why) -> None:
        """List ``kinds`` of ``server`` again and apply them; a failure keeps the old list and
        is shown in ``servers`` (``warnings``), never raised into the transport."""
        kinds = tuple(kinds)
        listed: list[ListingKind] = []
        found: dict[ItemKind, Items] = {}
        for kind in kinds:
            try:
                if kind == "tools":  # with pins, calls to the server wait meanwhile
                    with self._guard.relisting(server):
                        await self._pegboard.refresh(server, cause=_cause(why))
                    self._pegboard.refresh_errors.pop(server, None)
                    found["tool"] = self._listed_tools(server)
                elif kind == "prompts":
                    found["prompt"] = _items("prompt", await self._offered(
                        server, self._listings.prompt_rows(server)))
                else:
                    for item_kind, ask, what in _RESOURCE_LISTINGS:
                        found[item_kind] = _items(item_kind, await self._offered(
                            server, self._servers.gather(server, ask, what)))
                listed.append(kind)
                if why != "connect":  # counted at once: a test may wait on the count
                    counts = self._relist_counts.setdefault(server, {})
                    counts[kind] = counts.get(kind, 0) + 1
            except ToolError as exc:
                if kind == "tools":
                    self._pegboard.refresh_errors[server] = exc
                    self._guard.unverify(server, _html.shorten(str(exc), 300))
                _log.info("re-listing %s of %r after %s failed: %s", kind, server, why,
                          _html.shorten(str(exc), 300))
            except Exception as exc:  # a collision, a removed server: the old list stays
                if kind == "tools":
                    self._pegboard.refresh_errors[server] = exc
                    self._guard.unverify(server, _html.shorten(
                        f"{type(exc).__name__}: {exc}", 300))
                _log.warning("re-listing %s of %r after %s failed: %r", kind, server, why, exc)
        if listed:
            self.apply_listing(server, tuple(listed), why, found)
            await self._guard.warned(server)  # its PinWarning (built off the loop), first

    @staticmethod
    async def _offered(server: str, listing: Any) -> list[dict[str, Any]]:
        """The rows of one server's listing; a server that does not offer it lists none."""
        try:
            rows: list[tuple[str, dict[str, Any]]] = await listing
        except NotOffered:
            return []
        return [row for name, row in rows if name == server]

    def apply_listing(self, server: str, kinds: tuple[ListingKind, ...], why: Why,
                      found: dict[ItemKind, Items] | None = None) -> None:
        """**The one place where a server's listing has been applied**: at connect (tools,
        ``why="connect"``; then the background baseline of the rest), after a
        ``list_changed`` and after a reconnect (everything, ``why="reconnect"``), once the
        pegboard (tools) and the prompt index hold the new lists. ``found`` holds what was
        listed, per item kind.

        It runs on the shared loop and must not block it (nothing here waits on I/O: the
        snapshot store and the pins file write on their own threads).
        """
        if found is None:  # at connect: the tools only, on the pegboard already
            self._history.listing_applied(server, kinds, why)  # the other kinds
            return
        if server not in self._servers:
            return
        kept = self._kept.setdefault(server, {})
        taken = datetime.now(UTC)
        for kind, items in found.items():
            before = kept.get(kind)
            if before is None and kind != "tool":  # listed at connect by History
                before = self._history.kind_baseline(server, kind)
            kept[kind] = items
            if before is not None:
                self._announce(server, kind, before, items, why)
            if kind != "tool" and why != "connect":  # stored and checked against the pins
                try:
                    self._history.keep_kind(server, kind, taken, _cause(why),
                                            list(items.values()))
                except Exception as exc:  # the listing is applied; keeping it is a courtesy
                    _log.warning("keeping the %s of %r failed: %s: %s", _WORDS[kind], server,
                                 type(exc).__name__, exc)

    def _announce(self, server: str, kind: ItemKind, before: Items, after: Items,
                  why: Why) -> None:
        """One ``bench.logs`` row when a listing differs from the one before it."""
        added = sorted(set(after) - set(before))
        removed = sorted(set(before) - set(after))
        changed = sorted(name for name in set(after) & set(before)
                         if after[name].get("fingerprint") != before[name].get("fingerprint"))
        if not (added or removed or changed):
            return
        redact = self._servers.redactor(server)

        def names(found: list[str]) -> list[str]:
            shown = [_html.shorten(redact(n) if redact is not None else n, 200)
                     for n in found[:SHOWN_NAMES]]
            return shown + ([f"... and {len(found) - SHOWN_NAMES} more"]
                            if len(found) > SHOWN_NAMES else [])

        parts = [f"{word} {names(group)}" for word, group in
                 (("added", added), ("removed", removed), ("changed", changed)) if group]
        cause = "a reconnect" if why == "reconnect" else "the server's list_changed"
        self._servers.notifications.add(
            server, "log", level="info", logger="toolbench",
            message=f"{_WORDS[kind]} changed after {cause}: " + "; ".join(parts),
            data={"event": "catalog_changed", "why": why, "kind": kind, "added": names(added),
                  "removed": names(removed), "changed": names(changed)})


def _cause(why: Why) -> str:
    """A snapshot's ``cause`` for a listing applied because of ``why`` (a reconnect's is
    ``relist``, as ``KindListings`` and the tools' have it)."""
    return "connect" if why == "connect" else "relist"


def _items(kind: ItemKind, rows: list[dict[str, Any]]) -> Items:
    out: Items = {}
    for row in rows:
        item = item_from_row(kind, row)
        out[str(item["name"])] = item
    return out


_RESOURCE_LISTINGS: tuple[tuple[ItemKind, Any, str], ...] = (
    ("resource", lambda c, s: c.list_resources(s), "resources"),
    ("resource_template", lambda c, s: c.list_resource_templates(s), "resource templates"),
)
