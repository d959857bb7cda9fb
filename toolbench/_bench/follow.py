"""A bench's catalog follows its servers: list changes and reconnects re-list, one way.

``FollowServers`` is mixed into ``BaseBench``. At connect the bench registers the server's
tools (``PegBoard.add_service(..., follow=False)``) and then :meth:`FollowServers._follow`
hooks the connection's events (``toolbench._transports.mcp_events``):

- ``tools`` / ``resources`` / ``prompts``: the server said that list changed;
- ``connected``: the connection is up again after a loss (a restarted stdio server, an HTTP
  server that came back). Everything is listed again, exactly as after a ``list_changed``:
  a server that came back with a renamed tool has the new name in the catalog, and the old
  one is gone.

Each event is coalesced by the connection (one round in flight plus one pending), and every
round ends in :meth:`FollowServers._apply_listing`, **the one place where a server's listing
is applied** (at connect too). Whatever must happen when a server's catalog may have changed
(snapshots, pins, change events) hooks in there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from toolbench._core import html as _html
from toolbench._core.errors import ToolError

if TYPE_CHECKING:
    from toolbench._routing.connections import Connection
    from toolbench._routing.pegboard import PegBoard

_log = logging.getLogger(__name__)

ListingKind = Literal["tools", "resources", "prompts"]
ALL_KINDS: tuple[ListingKind, ...] = ("tools", "resources", "prompts")
Why = Literal["connect", "list_changed", "reconnect"]


class FollowServers:
    """Re-listing on list changes and reconnects; mixed into ``BaseBench``."""

    if TYPE_CHECKING:  # what BaseBench (and ResourcesAndPrompts) provide
        _rows: dict[str, Any]
        pegboard: PegBoard

        def _check_open(self) -> None: ...

        async def _prompt_rows(self, server: str | None) -> list[tuple[str, dict[str, Any]]]:
            ...

        def _listing_applied(self, server: str, kinds: tuple[str, ...], why: str) -> None: ...

    def _relists(self) -> dict[str, dict[str, int]]:
        """Per server, how many re-lists of each kind were applied (tests and benchmarks)."""
        found: dict[str, dict[str, int]] | None = getattr(self, "_relist_counts", None)
        if found is None:
            found = {}
            self._relist_counts = found
        return found

    def _follow(self, name: str, connection: Connection) -> None:
        """Hook ``connection``'s events to :meth:`_relist` (an MCP connection only)."""
        mcp = getattr(connection, "mcp", None)
        if mcp is None:
            return

        def on(kinds: tuple[ListingKind, ...], why: Why) -> Any:
            async def listener(_server: str) -> None:
                row = self._rows.get(name)
                if row is None or row.connection is not connection:
                    return  # disconnected or replaced since
                await self._relist(name, kinds, why)
            return listener

        for kind in ALL_KINDS:
            mcp.add_listener(kind, on((kind,), "list_changed"))
        mcp.add_listener("connected", on(ALL_KINDS, "reconnect"))

    async def _relist(self, server: str, kinds: Iterable[ListingKind], why: Why) -> None:
        """List ``kinds`` of ``server`` again and apply them; a failure keeps the old list and
        is shown in ``servers`` (``warnings``), never raised into the transport."""
        kinds = tuple(kinds)
        listed: list[ListingKind] = []
        for kind in kinds:
            try:
                if kind == "tools":
                    await self.pegboard.refresh(server)
                    self.pegboard.refresh_errors.pop(server, None)
                elif kind == "prompts":
                    await self._prompt_rows(server)
                listed.append(kind)
            except ToolError as exc:
                if kind == "tools":
                    self.pegboard.refresh_errors[server] = exc
                _log.info("re-listing %s of %r after %s failed: %s", kind, server, why,
                          _html.shorten(str(exc), 300))
            except Exception as exc:  # a collision, a removed server: the old list stays
                if kind == "tools":
                    self.pegboard.refresh_errors[server] = exc
                _log.warning("re-listing %s of %r after %s failed: %r", kind, server, why, exc)
        counts = self._relists().setdefault(server, {})
        for kind in listed:
            counts[kind] = counts.get(kind, 0) + 1
        if listed:
            self._apply_listing(server, tuple(listed), why)

    def _apply_listing(self, server: str, kinds: tuple[ListingKind, ...], why: Why) -> None:
        """**The one place where a server's listing has been applied**: at connect (tools,
        ``why="connect"``), after a ``list_changed`` and after a reconnect (everything,
        ``why="reconnect"``), once the pegboard (tools) and the prompt index hold the new
        lists. Resources and templates are listed when asked (``bench.resources()``), so a
        ``resources`` entry here means "may have changed": read them now if you keep them.

        Hook catalog snapshots, pins and change events here; it runs on the shared loop and
        must not block it (nothing here waits on I/O).
        """
        self._listing_applied(server, kinds, why)  # overtime_kinds: snapshots and pins
