"""Resources, resource templates and prompts over time: listed in the background, kept.

``KindListings`` (owned by ``History``) holds the last two listings of each non-tool kind per
server, and the listing tasks in flight. Tools are fingerprinted where their listing is
applied (the pegboard's hook, ``History.on_listing``). The other kinds are not listed at
connect by a bench without a journal or pins (a connect then costs one listing, of tools).
With either, :meth:`KindListings.listing_applied` (called from the catalog's
``Follower.apply_listing`` through ``History``: at connect, after a ``list_changed`` and after
a reconnect) starts one task per server that lists them (resources and templates after a
resources ``list_changed``, prompts after a prompts one, all three at connect and on
reconnect) and hands each listing to ``History.keep_kind``: stored as a snapshot (cause
``connect`` or ``relist``) and checked against the pins, as a tool listing is.

**The gate** waits here: a read or a prompt fetch with pins first waits for that server's
listing still in flight (bounded by the request's timeout, :meth:`KindListings.wait`), then
the ``PinGuard`` refuses it if what it names changed.

It may import ``toolbench._bench.overtime.snapshots``, ``toolbench._bench.servers``,
``_core``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolbench._bench.overtime.snapshots import item_from_row
from toolbench._core.errors import Refused, ToolError
from toolbench._transports.mcp.client import NotOffered

if TYPE_CHECKING:
    from toolbench._bench.servers.servers import Servers

_log = logging.getLogger("toolbench.overtime")
OTHER_KINDS = ("resource", "resource_template", "prompt")
_ASK: dict[str, Callable[[Any, str], Awaitable[list[dict[str, Any]]]]] = {
    "resource": lambda c, s: c.list_resources(s),
    "resource_template": lambda c, s: c.list_resource_templates(s),
    "prompt": lambda c, s: c.list_prompts(s),
}
_CAUSE = {"connect": "connect", "list_changed": "relist", "reconnect": "relist"}
"""A snapshot's ``cause``, as the tools' (the pegboard re-lists tools alike for both)."""
LIST_BACKSTOP_S = 2.0
"""How long after the server's timeout a background listing is given up."""

Listing = tuple[datetime, list[dict[str, Any]]]
Keep = Callable[[str, str, datetime, str, list[dict[str, Any]]], list[dict[str, Any]]]
"""``History.keep_kind``: keep one listing (remembered, stored, checked against pins)."""


class KindListings:
    """The non-tool kinds of each server's catalog as last listed, and their listing tasks."""

    def __init__(self, servers: Servers, keep: Keep) -> None:
        self._servers = servers
        self._keep = keep
        self._listings: dict[str, dict[str, Listing]] = {}
        self._previous: dict[str, dict[str, Listing]] = {}
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- listing ----------------------------------------------------------------------------
    def listing_applied(self, server: str, kinds: tuple[str, ...], why: str) -> None:
        """A listing was applied (on the loop): list the other kinds it may have changed,
        in a task of their own (nothing here waits)."""
        wanted: list[str] = []
        if why == "connect" or "resources" in kinds:
            wanted += ["resource", "resource_template"]
        if why == "connect" or "prompts" in kinds:
            wanted.append("prompt")
        if not wanted:
            return
        before = self._pending.get(server)
        task = asyncio.get_running_loop().create_task(
            self._list_kinds(server, tuple(wanted), _CAUSE.get(why, why), before))
        self._pending[server] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _list_kinds(self, server: str, kinds: tuple[str, ...], cause: str,
                          before: asyncio.Task[None] | None) -> None:
        """List ``kinds`` of ``server`` now and keep them (after the round before it)."""
        if before is not None and not before.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(before)  # rounds of one server apply in order
        try:
            client = self._servers.resource_client(server)
        except (ToolError, TypeError):  # gone, or tools only (a ToolBox): no other kinds
            return
        bound = self._servers.limit(server, None) + LIST_BACKSTOP_S
        for kind in kinds:
            try:
                async with asyncio.timeout(bound):
                    rows = await _ASK[kind](client, server)
            except Refused as exc:
                if not isinstance(exc, NotOffered):  # by capability and code, not text
                    _log.info("listing %s of %r (%s) refused: %s", kind, server, cause, exc)
                    continue
                rows = []
            except (ToolError, TimeoutError) as exc:  # the old listing stays in force
                _log.info("listing %s of %r (%s) failed: %s", kind, server, cause, exc)
                continue
            except Exception as exc:  # a client that is not ours: logged, never raised
                _log.warning("listing %s of %r (%s) failed: %r", kind, server, cause, exc)
                continue
            if server in self._servers:
                self._keep(server, kind, datetime.now(UTC), cause,
                           [item_from_row(kind, row) for row in rows])

    def remember(self, server: str, kind: str, taken: datetime,
                 items: list[dict[str, Any]]) -> None:
        """The newest listing of ``kind``; the one before it is kept for ``changes``."""
        old = self._listings.setdefault(server, {}).get(kind)
        if old is not None:
            self._previous.setdefault(server, {})[kind] = old
        self._listings[server][kind] = (taken, items)

    # -- reading ----------------------------------------------------------------------------
    def items(self) -> list[tuple[str, str, dict[str, Any]]]:
        """``(server, kind, item)`` of every non-tool item as last listed."""
        return [(server, kind, item) for server, kinds in self._listings.items()
                if server in self._servers
                for kind, (_, items) in kinds.items() for item in items]

    def latest(self, server: str, kind: str) -> Listing | None:
        """When ``kind`` of ``server`` was last listed, and what it listed."""
        return self._listings.get(server, {}).get(kind)

    def changed(self) -> Iterator[tuple[str, Listing, Listing]]:
        """``(server, before, now)`` of every kind listed more than once, by server, kind."""
        for server, kinds in sorted(self._previous.items()):
            for kind, before in sorted(kinds.items()):
                yield server, before, self._listings[server][kind]

    def idle(self) -> bool:
        """True while nothing was listed and nothing is being listed."""
        return not self._listings and not self._tasks

    # -- waiting ----------------------------------------------------------------------------
    async def listed(self, server: str) -> None:
        """Wait for ``server``'s listing in flight, if any (it is bounded)."""
        pending = self._pending.get(server)
        if pending is not None and not pending.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(pending)

    async def wait(self, server: str, limit: float) -> None:
        """Wait at most ``limit`` seconds for ``server``'s listing in flight (the gate)."""
        pending = self._pending.get(server)
        if pending is not None and not pending.done():
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(pending), limit)

    async def settled(self, timeout: float | None = None) -> None:
        """Wait (bounded) until every listing in flight is kept (tests, snapshot, close)."""
        pending = [t for t in self._tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)
