"""A bench's catalog follows its servers: list changes and reconnects re-list, one way.

``FollowServers`` is mixed into ``BaseBench``. At connect the bench registers the server's
tools (``PegBoard.add_service(..., follow=False)``) and then :meth:`FollowServers._follow`
hooks the connection's events (``toolbench._transports.mcp.events``):

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
round ends in :meth:`FollowServers._apply_listing`, **the one place where a server's listing
is applied** (at connect too). There:

- tools are on the pegboard already (its ``on_listing`` hook gave them to the snapshots and
  pins, ``toolbench._bench.overtime.overtime``);
- resources, resource templates and prompts are kept here (``_kept``), and handed to
  ``overtime_kinds`` (``_keep_kind``: a snapshot with a journal, a check against the pins),
  so a re-list is stored exactly as one of tools is, without listing twice;
- a change against the previous listing (added, removed, or changed by fingerprint) is one
  ``bench.logs`` row per kind (``kind`` ``log``, ``logger`` ``toolbench``, ``data["event"]``
  ``catalog_changed``).

At connect, the other kinds are listed once to have something to compare with: by
``overtime_kinds`` (awaited) with a journal or pins, else here in the background (a baseline,
neither stored nor pinned).
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
    from toolbench._bench.overtime.pins import PinFile
    from toolbench._bench.overtime.snapshot_store import SnapshotWriter
    from toolbench._routing.connections import Connection
    from toolbench._routing.pegboard import PegBoard
    from toolbench._transports.notifications import Notifications

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


class FollowServers:
    """Re-listing on list changes and reconnects; mixed into ``BaseBench``."""

    if TYPE_CHECKING:  # what BaseBench, ResourcesAndPrompts and OverTime provide
        _rows: dict[str, Any]
        pegboard: PegBoard
        _notifications: Notifications
        _snapshots: SnapshotWriter | None
        _pin_file: PinFile | None

        def _check_open(self) -> None: ...

        async def _prompt_rows(self, server: str | None) -> list[tuple[str, dict[str, Any]]]:
            ...

        async def _gather(self, server: str | None, ask: Any,
                          what: str) -> list[tuple[str, dict[str, Any]]]: ...

        def _listing_applied(self, server: str, kinds: tuple[str, ...], why: str) -> None: ...

        def _keep_kind(self, server: str, kind: str, taken: datetime, cause: str,
                       items: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    def _relists(self) -> dict[str, dict[str, int]]:
        """Per server, how many re-lists of each kind were applied (tests and benchmarks)."""
        found: dict[str, dict[str, int]] | None = getattr(self, "_relist_counts", None)
        if found is None:
            found = {}
            self._relist_counts = found
        return found

    def _kept(self) -> dict[str, dict[ItemKind, Items]]:
        """Per server, the last listing of each kind (tools as fingerprinted items too)."""
        found: dict[str, dict[ItemKind, Items]] | None = getattr(self, "_kept_lists", None)
        if found is None:
            found = {}
            self._kept_lists = found
        return found

    def _follow(self, name: str, connection: Connection) -> None:
        """Hook ``connection``'s events to :meth:`_relist` (an MCP connection only), and take
        the baseline of its resources, templates and prompts in the background."""
        mcp = getattr(connection, "mcp", None)
        if mcp is None:
            return

        def on(kinds: tuple[ListingKind, ...], why: Why) -> Any:
            async def listener(_server: str) -> None:
                row = self._rows.get(name)
                if row is None or row.connection is not connection:
                    return  # disconnected or replaced since
                if why == "reconnect" and self._pin_file is None:
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
        self._kept().pop(name, None)  # a new connection under an old name starts afresh
        self._kept().setdefault(name, {})["tool"] = self._listed_tools(name)
        if self._snapshots is not None or self._pin_file is not None:
            return  # overtime_kinds lists the other kinds at connect: that is the baseline
        self._in_background(name, on(("resources", "prompts"), "connect"))

    def _in_background(self, name: str, listener: Any) -> None:
        """Run ``listener(name)`` in a task of its own (a listing nothing waits for)."""
        task = asyncio.get_running_loop().create_task(listener(name),
                                                      name=f"toolbench-relist-{name}")
        tasks: set[asyncio.Task[None]] = getattr(self, "_baselines", set())
        self._baselines = tasks
        tasks.add(task)  # asyncio keeps only weak references to tasks
        task.add_done_callback(tasks.discard)

    def _listed_tools(self, server: str) -> Items:
        return {e.tool: item_from_spec(e.spec, e.tool) for e in self.pegboard.entries(server)}

    async def _relist(self, server: str, kinds: Iterable[ListingKind], why: Why) -> None:
        """List ``kinds`` of ``server`` again and apply them; a failure keeps the old list and
        is shown in ``servers`` (``warnings``), never raised into the transport."""
        kinds = tuple(kinds)
        listed: list[ListingKind] = []
        found: dict[ItemKind, Items] = {}
        for kind in kinds:
            try:
                if kind == "tools":
                    await self.pegboard.refresh(server, cause=_cause(why))
                    self.pegboard.refresh_errors.pop(server, None)
                    found["tool"] = self._listed_tools(server)
                elif kind == "prompts":
                    found["prompt"] = _items("prompt", await self._offered(
                        server, self._prompt_rows(server)))
                else:
                    for item_kind, ask, what in _RESOURCE_LISTINGS:
                        found[item_kind] = _items(item_kind, await self._offered(
                            server, self._gather(server, ask, what)))
                listed.append(kind)
                if why != "connect":  # counted at once: a test may wait on the count
                    counts = self._relists().setdefault(server, {})
                    counts[kind] = counts.get(kind, 0) + 1
            except ToolError as exc:
                if kind == "tools":
                    self.pegboard.refresh_errors[server] = exc
                _log.info("re-listing %s of %r after %s failed: %s", kind, server, why,
                          _html.shorten(str(exc), 300))
            except Exception as exc:  # a collision, a removed server: the old list stays
                if kind == "tools":
                    self.pegboard.refresh_errors[server] = exc
                _log.warning("re-listing %s of %r after %s failed: %r", kind, server, why, exc)
        if listed:
            self._apply_listing(server, tuple(listed), why, found)

    @staticmethod
    async def _offered(server: str, listing: Any) -> list[dict[str, Any]]:
        """The rows of one server's listing; a server that does not offer it lists none."""
        try:
            rows: list[tuple[str, dict[str, Any]]] = await listing
        except NotOffered:
            return []
        return [row for name, row in rows if name == server]

    def _apply_listing(self, server: str, kinds: tuple[ListingKind, ...], why: Why,
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
            self._listing_applied(server, kinds, why)  # overtime_kinds: the other kinds
            return
        if self._rows.get(server) is None:
            return
        kept = self._kept().setdefault(server, {})
        taken = datetime.now(UTC)
        for kind, items in found.items():
            before = kept.get(kind)
            if before is None and kind != "tool":  # listed at connect by overtime_kinds
                before = self._kind_baseline(server, kind)
            kept[kind] = items
            if before is not None:
                self._announce(server, kind, before, items, why)
            if kind != "tool" and why != "connect":  # stored and checked against the pins
                try:
                    self._keep_kind(server, kind, taken, _cause(why), list(items.values()))
                except Exception as exc:  # the listing is applied; keeping it is a courtesy
                    _log.warning("keeping the %s of %r failed: %s: %s", _WORDS[kind], server,
                                 type(exc).__name__, exc)

    def _kind_baseline(self, server: str, kind: ItemKind) -> Items | None:
        """The listing ``overtime_kinds`` took at connect (with a journal or pins), if any."""
        listings: dict[str, dict[str, Any]] = getattr(self, "_kind_listings", {})
        found = listings.get(server, {}).get(kind)
        return None if found is None else {str(i["name"]): i for i in found[1]}

    def _announce(self, server: str, kind: ItemKind, before: Items, after: Items,
                  why: Why) -> None:
        """One ``bench.logs`` row when a listing differs from the one before it."""
        added = sorted(set(after) - set(before))
        removed = sorted(set(before) - set(after))
        changed = sorted(name for name in set(after) & set(before)
                         if after[name].get("fingerprint") != before[name].get("fingerprint"))
        if not (added or removed or changed):
            return
        row = self._rows.get(server)
        redact = getattr(row, "redact", None)

        def names(found: list[str]) -> list[str]:
            shown = [_html.shorten(redact(n) if redact is not None else n, 200)
                     for n in found[:SHOWN_NAMES]]
            return shown + ([f"... and {len(found) - SHOWN_NAMES} more"]
                            if len(found) > SHOWN_NAMES else [])

        parts = [f"{word} {names(group)}" for word, group in
                 (("added", added), ("removed", removed), ("changed", changed)) if group]
        cause = "a reconnect" if why == "reconnect" else "the server's list_changed"
        self._notifications.add(
            server, "log", level="info", logger="toolbench",
            message=f"{_WORDS[kind]} changed after {cause}: " + "; ".join(parts),
            data={"event": "catalog_changed", "why": why, "kind": kind, "added": names(added),
                  "removed": names(removed), "changed": names(changed)})


def _cause(why: Why) -> str:
    """A snapshot's ``cause`` for a listing applied because of ``why`` (a reconnect's is
    ``relist``, as ``overtime_kinds`` and the tools' have it)."""
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
