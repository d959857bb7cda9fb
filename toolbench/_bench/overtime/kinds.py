"""Resources, resource templates and prompts over time: listed, stored, pinned and gated.

``CatalogKinds`` is a base class of ``OverTime``. Tools are fingerprinted where their listing
is applied (the pegboard's hook, ``OverTime._on_listing``). The other kinds are not listed at
connect by a bench without a journal or pins (a connect then costs one listing, of tools).
With either, :meth:`CatalogKinds._listing_applied` (called from
``FollowServers._apply_listing``: at connect, after a ``list_changed`` and after a reconnect)
starts one task per server that lists them (resources and templates after a resources
``list_changed``, prompts after a prompts one, all three at connect and on reconnect), stores
each listing as a snapshot (cause ``connect`` or ``relist``) and checks it
against the pins, as a tool listing is.

**The gate.** :meth:`CatalogKinds._pin_gated` wraps a read and a prompt fetch (one hook in
``resources.py``, inside the same ``attempt`` as the request): with pins, it first waits for
that server's listing still in flight (bounded by the request's timeout), then refuses a
read of a changed pinned resource, of a URI a changed pinned template produces, or a fetch of
a changed pinned prompt, with ``pins.refusal``: ``Refused`` (``did_not_happen``), recorded
like any other failure, until ``bench.approve(name)``. Without pins it is one truth test.

**Checked again at the session.** A request may pass the gate and then reconnect (the server
was restarted, changed): the reconnect's re-list is applied before the request is sent
(``toolbench._transports.mcp.lifecycle``, "Settling"), and the same check runs again there,
as the transport's ``SEND_CHECK``, so the request that reconnected is refused if what it
names changed (:meth:`CatalogKinds._pin_rechecked` does it for a tool call, in
``calling.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from toolbench._bench.overtime.pins import Key, PinFile, changed_key, refusal
from toolbench._bench.overtime.snapshots import item_from_row
from toolbench._core.errors import Refused, ToolError
from toolbench._transports.mcp.session import SEND_CHECK

if TYPE_CHECKING:
    from toolbench._bench.overtime.snapshot_store import SnapshotWriter
    from toolbench._core.client import ResourceClient, Result
    from toolbench._core.ids import ToolId

T = TypeVar("T")
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


class CatalogKinds:
    """The non-tool kinds of the catalog, over time; mixed into ``OverTime``."""

    if TYPE_CHECKING:  # what OverTime and BaseBench provide
        _rows: dict[str, Any]
        _pin_file: PinFile | None
        _snapshots: SnapshotWriter | None
        _pin_changes: dict[Key, tuple[dict[str, Any] | None, dict[str, Any]]]
        _pin_blocked: frozenset[ToolId]

        def _pin_refusal(self, tool: ToolId) -> ToolError: ...

        def _limit(self, server: str, timeout: float | None) -> float: ...

        def _redacted(self, server: str, items: dict[str, dict[str, Any]]
                      ) -> dict[str, dict[str, Any]]: ...

        def _journal_writable(self) -> bool: ...

        def _check_pins(self, server: str, items: Any, kind: str = "tool") -> None: ...

        def _resource_client(self, server: object) -> ResourceClient: ...

    def _init_kinds(self) -> None:
        self._kind_listings: dict[str, dict[str, tuple[datetime, list[dict[str, Any]]]]] = {}
        self._kind_previous: dict[str, dict[str, tuple[datetime, list[dict[str, Any]]]]] = {}
        self._kind_pending: dict[str, asyncio.Task[None]] = {}
        self._kind_tasks: set[asyncio.Task[None]] = set()

    # -- listing ----------------------------------------------------------------------------
    def _listing_applied(self, server: str, kinds: tuple[str, ...], why: str) -> None:
        """A listing was applied (on the loop): list the other kinds it may have changed,
        in a task of their own (nothing here waits)."""
        if self._snapshots is None and self._pin_file is None:
            return
        wanted: list[str] = []
        if why == "connect" or "resources" in kinds:
            wanted += ["resource", "resource_template"]
        if why == "connect" or "prompts" in kinds:
            wanted.append("prompt")
        if not wanted:
            return
        before = self._kind_pending.get(server)
        task = asyncio.get_running_loop().create_task(
            self._list_kinds(server, tuple(wanted), _CAUSE.get(why, why), before))
        self._kind_pending[server] = task
        self._kind_tasks.add(task)
        task.add_done_callback(self._kind_tasks.discard)

    async def _list_kinds(self, server: str, kinds: tuple[str, ...], cause: str,
                          before: asyncio.Task[None] | None) -> None:
        """List ``kinds`` of ``server`` now and keep them (after the round before it)."""
        if before is not None and not before.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(before)  # rounds of one server apply in order
        try:
            client = self._resource_client(server)
        except (ToolError, TypeError):  # gone, or tools only (a ToolBox): no other kinds
            return
        bound = self._limit(server, None) + LIST_BACKSTOP_S
        for kind in kinds:
            try:
                async with asyncio.timeout(bound):
                    rows = await _ASK[kind](client, server)
            except Refused as exc:
                if "does not offer" not in exc.detail:  # NotOffered: it lists none
                    _log.info("listing %s of %r (%s) refused: %s", kind, server, cause, exc)
                    continue
                rows = []
            except (ToolError, TimeoutError) as exc:  # the old listing stays in force
                _log.info("listing %s of %r (%s) failed: %s", kind, server, cause, exc)
                continue
            except Exception as exc:  # a client that is not ours: logged, never raised
                _log.warning("listing %s of %r (%s) failed: %r", kind, server, cause, exc)
                continue
            if server in self._rows:
                self._keep_kind(server, kind, datetime.now(UTC), cause,
                                [item_from_row(kind, row) for row in rows])

    def _keep_kind(self, server: str, kind: str, taken: datetime, cause: str,
                   items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Keep one listing of a non-tool kind: remembered, stored, checked against pins."""
        items = list(self._redacted(server, {str(i): it for i, it in enumerate(items)})
                     .values())
        old = self._kind_listings.setdefault(server, {}).get(kind)
        if old is not None:
            self._kind_previous.setdefault(server, {})[kind] = old
        self._kind_listings[server][kind] = (taken, items)
        if self._snapshots is not None and self._journal_writable():
            self._snapshots.store(server, kind, taken, cause, items)
        if self._pin_file is not None:
            self._check_pins(server, {str(i["name"]): i for i in items}, kind)
        return items

    def _kind_items(self) -> list[tuple[str, str, dict[str, Any]]]:
        """``(server, kind, item)`` of every non-tool item as last listed."""
        return [(server, kind, item) for server, kinds in self._kind_listings.items()
                if server in self._rows
                for kind, (_, items) in kinds.items() for item in items]

    async def _kinds_listed(self, server: str) -> None:
        """At connect, with a journal or pins: wait for the other kinds' first listing (it is
        bounded), so the connect's snapshot is whole and its PinWarning is the connect's."""
        pending = self._kind_pending.get(server)
        if pending is not None and not pending.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(pending)

    async def _kinds_settled(self, timeout: float | None = None) -> None:
        """Wait (bounded) until every listing in flight is kept (tests, snapshot, close)."""
        pending = [t for t in self._kind_tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    def _cancel_kinds(self) -> None:
        for task in list(self._kind_tasks):
            task.cancel()

    # -- the gate -----------------------------------------------------------------------
    async def _pin_gated(self, kind: str, server: str, name: str, limit: float,
                         run: Callable[[float], Awaitable[T]]) -> T:
        """``run(limit)``, unless ``name`` (a URI, or a prompt's own name) is a changed pin:
        then ``Refused`` and nothing is sent (see the module docstring)."""
        if self._pin_file is None:
            return await run(limit)
        pending = self._kind_pending.get(server)
        if pending is not None and not pending.done():
            with contextlib.suppress(TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(pending), limit)

        def check() -> None:
            found = changed_key(self._pin_changes, server, kind, name)
            if found is not None:
                key, through = found
                old, new = self._pin_changes[key]
                raise refusal(key[1], f"{server}/{key[2]}", old, new, through=through)

        check()
        return await _checked(check, run(limit))  # again once it has a session

    def _pin_rechecked(self, tool: ToolId, call: Awaitable[Result]) -> Awaitable[Result]:
        """A tool call that, with pins, is checked again once the transport has its session
        (after a reconnect's re-list), before it is sent; without pins, ``call`` itself."""
        if self._pin_file is None:
            return call

        def check() -> None:
            if tool in self._pin_blocked:
                raise self._pin_refusal(tool)

        return _checked(check, call)


async def _checked(check: Callable[[], None], request: Awaitable[T]) -> T:
    """``request`` with the transport's ``SEND_CHECK`` set to ``check``."""
    token = SEND_CHECK.set(check)
    try:
        return await request
    finally:
        SEND_CHECK.reset(token)
