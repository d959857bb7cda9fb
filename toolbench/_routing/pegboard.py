"""The pegboard: one unique, prefixed name per tool, routed back to its server and original name.

Two servers may both offer ``search``. Anything downstream (a notebook user, an LLM, another
MCP client) needs names that are unique, so each service's tools are hung on the board as
``{namespace}{separator}{tool}`` (``web-search``, ``files-search``). The board remembers the
(server, original name) behind every name, so a call always reaches the right server with
the name that server knows.

**Why collisions are refused, never resolved.** Server names and tool names may both contain
the separator, so ``a-b`` + ``c`` and ``a`` + ``b-c`` give the same name ``a-b-c``. A name
could not be parsed back reliably; instead every registration that would produce a name
already taken is refused as a whole with ``NameCollision`` before anything changes. The
mapping is stored, never parsed, so each handed-out name maps back to exactly one (server,
tool).

**Why a broken tool is skipped, not refused.** A tool whose name breaks the MCP rule (or
whose prefixed name would), or a name its server lists twice, says nothing about the rest of
that server. Refusing the whole server for it made one careless tool cost every other tool,
so such tools are skipped, logged, and remembered per service (``skipped(server)``) for the
bench's ``servers`` table. Collisions *between* servers are still refused whole: there the
later server cannot be told apart from the earlier one by name.

**Why the separator must be in the MCP tool-name alphabet.** The prefixed name is what gets
sent onward as a tool name (to a model's tool list, to a Toolset, to another MCP client), so
it must itself be a valid MCP tool name, ``[A-Za-z0-9_.-]``. ``web::search`` is not one:
accepting ``"::"`` would defer the failure to some later, distant consumer that rejects it.
So ``"::"`` is refused at construction with a message saying why, and ``"-"``, ``"__"``,
``"."`` or ``"_"`` work (DESIGN.md, "Names and identity", says the same).

**Why reads take no lock.** The whole registry is an immutable snapshot. Writers build a new
snapshot and swap it in under a lock (copy-on-write); readers take one reference to the
current snapshot and never see a half-registered service. A method that reads several
facts reads them all from one snapshot; ``entries()`` hands out one consistent list for
callers (the Bench's catalog) that need several facts per tool.

Namespaces: ``add_service`` defaults the namespace to the server name. ``None`` or ``""``
means the service's tools keep their original names. A non-empty namespace belongs to one
server; a server has one namespace. Removing a service (``remove_service`` or
``unregister_namespace``) drops its tools, its related-name entries and, when the router
sends that server to the client the service was added with, its route, so re-adding works.

**Each value is checked once, at the door.** A public method checks its arguments (the
server name, the namespace, the client) and passes them on checked: the naming rules and a
listing's entries are ``toolbench._routing.pegboard_names``; the snapshot, and every change
to it as one call that checks the whole change and returns the next snapshot, are
``toolbench._routing.pegboard_board``. This module is the board's behaviour: listing through
the client, the lock, routing, following a server's changes, the listing hooks.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from toolbench._core.client import Result, ToolClient, ToolSpec
from toolbench._core.ids import TOOL_RULE, Provenance, ToolId, check_server_name, is_tool_name
from toolbench._core.offload import off_loop
from toolbench._routing.pegboard_board import EMPTY, Board
from toolbench._routing.pegboard_names import (
    NAMESPACE_RULE,
    SEPARATOR_RULE,
    SKIP_INVALID,
    SKIP_REPEATED,
    SKIP_TOO_LONG,
    USE_SERVER_NAME,
    Namespace,
    PegEntry,
    check_name_arg,
    check_namespace,
    check_separator,
    check_tool_arg,
    describe_skipped,
    entries_for,
    prefixed_name,
)
from toolbench._routing.router import ToolRouter

__all__ = ["NAMESPACE_RULE", "SEPARATOR_RULE", "SKIP_INVALID", "SKIP_REPEATED", "SKIP_TOO_LONG",
           "USE_SERVER_NAME", "ListingHook", "Namespace", "PegBoard", "PegEntry",
           "describe_skipped"]

_log = logging.getLogger("toolbench.pegboard")

ToolsChangedCallback = Callable[[str], Awaitable[None]]
ListingHook = Callable[[str, "list[PegEntry]", str], "Awaitable[None] | None"]
"""Told ``(server, entries, cause)`` each time a listing is applied (``cause``: ``connect``
or ``relist``), in the step that publishes it; the bench's snapshots and pins hang here."""


class PegBoard:
    """A namespaced registry of tools from many services, sitting on a ToolRouter.

    Works with any ToolClient (ToolBox, Toolset, McpClient, a test double). Reads are
    lock-free and safe from any thread while another thread registers or removes.
    """

    def __init__(self, router: ToolRouter | None = None, separator: str = "-") -> None:
        if router is None:
            router = ToolRouter()
        elif not isinstance(router, ToolRouter):
            raise TypeError(f"router must be a ToolRouter or None, not {router!r}")
        self.router: ToolRouter = router
        self.separator = check_separator(separator)
        self._board = EMPTY
        self._lock = threading.Lock()
        self._tokens = itertools.count(1)
        self._seq = itertools.count(1)
        self.refresh_errors: dict[str, Exception] = {}
        """The last failure of a refresh started by a tools-changed notification, per server."""
        self._listing_hooks: list[ListingHook] = []

    def on_listing(self, hook: ListingHook) -> None:
        """Call ``hook(server, entries, cause)`` whenever a server's listing is applied; a
        hook may return an awaitable (it is awaited before the listing returns)."""
        self._listing_hooks.append(hook)

    async def _listed(self, server: str, entries: list[PegEntry], cause: str) -> None:
        for hook in self._listing_hooks:
            try:
                pending = hook(server, entries, cause)
                if pending is not None:  # an async hook: the listing returns once it is kept
                    await pending
            except Exception as exc:  # a hook's bug must not undo or fail a listing
                _log.warning("a listing hook failed for %r: %s: %s", server,
                             type(exc).__name__, exc)

    # -- naming ---------------------------------------------------------------------------
    def prefixed(self, namespace: str | None, tool: str) -> str:
        """The name ``tool`` gets in ``namespace``; raises if it is not a valid tool name."""
        ns = check_namespace(namespace)
        return prefixed_name(self.separator, ns, check_tool_arg(tool))

    # -- registering ----------------------------------------------------------------------
    async def add_service(self, server: str, client: ToolClient,
                          namespace: Namespace = USE_SERVER_NAME, *, follow: bool = True,
                          ) -> int:
        """List ``server``'s tools through ``client``, prefix them and register all or none.

        Routes ``server`` to ``client`` unless it is already routed there. A collision raises
        ``NameCollision`` listing every clashing name, and leaves no tool and no route behind.
        Returns the number of tools registered. With ``follow`` (the default), the board
        refreshes the server itself when the client says its tools changed; a caller that
        re-lists on its own (a Bench, which also re-lists after reconnects) passes False and
        calls :meth:`refresh`.
        """
        check_server_name(server)
        if not isinstance(client, ToolClient):
            raise TypeError(f"client for {server!r} is not a ToolClient: {client!r}")
        ns = server if namespace is USE_SERVER_NAME else check_namespace(namespace)
        self._check_can_add(self._board, server, client)
        seq = next(self._seq)
        entries, skipped = await self._entries(server, ns, await self._list(client, server))
        token = next(self._tokens)

        def route(board: Board) -> None:  # under the lock, on the board about to be swapped
            self._check_can_add(board, server, client)
            if server not in self.router:
                self.router.server(server, client)

        await self._swap(lambda board: board.with_service(
            server, ns, client, entries, skipped, token=token, seq=seq), len(entries), route)
        try:
            if follow:
                self._subscribe(server, client, token)
        except Exception:
            self.remove_service(server)
            raise
        await self._listed(server, entries, "connect")
        return len(entries)

    async def _swap(self, change: Callable[[Board], Board | None], items: int,
                    before: Callable[[Board], None] | None = None) -> Board | None:
        """The board that ``change`` makes of the current one, swapped in under the lock.

        A board is immutable, so a big change (10,000 entries) is made beside the loop
        (``off_loop``); if another change landed meanwhile, it is made again here, on the
        board now current. ``before(current)`` runs under the lock just before the swap (it
        may raise); ``change`` returning None swaps nothing; one that raises changes nothing.
        """
        board = self._board
        made = await off_loop(lambda: change(board), items)
        with self._lock:
            if self._board is not board:
                board = self._board
                made = change(board)
            if made is not None:
                if before is not None:
                    before(board)
                self._board = made
        return made

    async def _entries(self, server: str, namespace: str, specs: list[ToolSpec],
                       ) -> tuple[list[PegEntry], list[tuple[str, str]]]:
        """The listing's entries, built beside the loop when it is big (``off_loop``)."""
        separator = self.separator
        return await off_loop(lambda: entries_for(separator, server, namespace, specs),
                              len(specs))

    @staticmethod
    async def _list(client: ToolClient, server: str) -> list[ToolSpec]:
        specs = await client.list_tools(server)
        if not isinstance(specs, list):
            raise TypeError(f"{client!r}.list_tools({server!r}) returned {specs!r}, not a list")
        return specs

    def _check_can_add(self, board: Board, server: str, client: ToolClient) -> None:
        if server in board.services:
            raise ValueError(
                f"server {server!r} is already on this pegboard; refresh it, or remove it "
                "first"
            )
        if server in self.router and self.router.client(server) is not client:
            raise ValueError(
                f"server {server!r} is already routed to another client "
                f"({self.router.client(server)!r}); one client per server"
            )

    def _subscribe(self, server: str, client: ToolClient, token: int) -> None:
        add_listener = getattr(client, "add_tools_changed_listener", None)
        if not callable(add_listener):
            return

        async def on_tools_changed(server_name: str) -> None:
            # A multi-server client names the server that changed; a single-server client
            # may use its own name for it, which this board may not know.
            if server_name != server and self._served_by(client, server_name):
                return
            service = self._board.services.get(server)
            if service is None or service.token != token:
                return  # removed (or replaced) since: nothing of ours to refresh
            try:
                await self.refresh(server)
                self.refresh_errors.pop(server, None)
            except Exception as exc:  # a notification handler must not raise into transport
                self.refresh_errors[server] = exc
                _log.warning("refreshing %r after a change or a reconnect failed: %s", server, exc)

        handle = add_listener(on_tools_changed)
        remove_listener = getattr(client, "remove_tools_changed_listener", None)
        unsubscribe: Callable[[], Any] | None = None
        if callable(handle):
            unsubscribe = handle
        elif callable(remove_listener):
            unsubscribe = functools.partial(remove_listener, on_tools_changed)
        # A client with the one "connected" event (McpClient): a reconnect re-lists too, so a
        # server restarted with other tools is followed (toolbench._transports.mcp.events).
        add_kind = getattr(client, "add_listener", None)
        if unsubscribe is not None and callable(add_kind):
            on_connected = add_kind("connected", on_tools_changed)
            if callable(on_connected):
                unsubscribe = _both(unsubscribe, on_connected)
        if unsubscribe is not None:
            with self._lock:
                following = self._board.subscribed(server, token, unsubscribe)
                if following is not None:
                    self._board = following
                    return
            unsubscribe()  # removed while subscribing

    def _served_by(self, client: ToolClient, server: str) -> bool:
        service = self._board.services.get(server)
        return service is not None and service.client is client

    def register_tool(self, server: str, spec: ToolSpec, namespace: str | None = None) -> str:
        """Register one tool by hand (same collision rules); returns the name it got.

        The server need not be routed yet; a call fails with ``Unreachable`` until it is.
        """
        check_server_name(server)
        if not isinstance(spec, ToolSpec):
            raise TypeError(f"register_tool takes a ToolSpec, not {spec!r}")
        ns = check_namespace(namespace)
        if not is_tool_name(spec.name):
            raise ValueError(f"invalid tool name {spec.name!r}: a tool name is {TOOL_RULE}")
        # by hand: a name too long once prefixed is the caller's mistake, not a skip
        name = prefixed_name(self.separator, ns, spec.name)
        entry = PegEntry(name, server, spec.name, ns,
                         spec if name == spec.name else spec.renamed(name),
                         ToolId(server, spec.name))
        with self._lock:
            self._board = self._board.with_tool(entry, token=next(self._tokens))
        return entry.name

    async def refresh(self, server: str, *, cause: str = "relist") -> int:
        """Re-list ``server`` and replace its entries all at once; returns the new count.

        If the new list would collide, ``NameCollision`` is raised and the old entries stay.
        ``cause`` is what the listing hooks are told (``relist``, ``reconnect``).
        """
        check_server_name(server)
        service = self._board.services.get(server)
        if service is None:
            raise ValueError(f"server {server!r} is not on this pegboard; add_service it first")
        client = service.client if service.client is not None else self.router.client(server)
        seq = next(self._seq)
        entries, skipped = await self._entries(server, service.namespace,
                                               await self._list(client, server))
        token = service.token
        kept = await self._swap(
            lambda board: board.relisted(server, token, entries, skipped, seq), len(entries))
        if kept is None:  # a later listing already landed; keep it
            return len(self._board.services[server].names)
        await self._listed(server, entries, cause)
        return len(entries)

    # -- removing -------------------------------------------------------------------------
    def unregister_tool(self, name: str) -> None:
        """Remove one name; its service (and route) stay."""
        with self._lock:
            self._board = self._board.without_tool(name)

    def remove_service(self, server: str) -> int:
        """Drop a server's tools, namespace, listener and route; returns how many tools went.

        An unknown server removes nothing and returns 0. The route is removed only when it
        still sends ``server`` to the client that this service was added with.
        """
        check_name_arg(server, "server name")
        with self._lock:
            removed = self._board.without_service(server)
            if removed is None:
                return 0
            self._board, service = removed
            if (service.client is not None and server in self.router
                    and self.router.client(server) is service.client):
                self.router.unroute(server)
            self.refresh_errors.pop(server, None)
        if service.unsubscribe is not None:
            try:
                service.unsubscribe()
            except Exception as exc:  # removal has happened; a stale listener is harmless
                _log.warning("unsubscribing from %r failed: %s", server, exc)
        return len(service.names)

    def unregister_namespace(self, namespace: str) -> int:
        """Remove the service owning ``namespace`` (tools, related entries, route)."""
        ns = check_name_arg(namespace, "namespace")
        if not ns:
            raise ValueError(
                "unregister_namespace('') is ambiguous: unprefixed tools belong to several "
                "servers; use remove_service(server) for each"
            )
        server = self._board.namespaces.get(ns)
        return 0 if server is None else self.remove_service(server)

    # -- looking up -----------------------------------------------------------------------
    def get_tool(self, name: str) -> ToolSpec:
        """The spec under its pegboard name (exact match only)."""
        return self._board.entry(name).spec

    @property
    def board(self) -> object:
        """The current board, as an opaque token: boards are immutable and every listing
        swaps in a new one, so an unchanged token means nothing was re-listed (what a
        ``map`` checks before reusing what it looked up once)."""
        return self._board

    def entry(self, name: str) -> PegEntry:
        """Everything known about one name, from one snapshot."""
        board = self._board
        entry = board.entries.get(name) if type(name) is str else None
        return entry if entry is not None else board.entry(name)  # refusals: the board's

    def tool_id(self, name: str) -> ToolId:
        """The (server, original name) a pegboard name routes to, as a ToolId."""
        return self._board.entry(name).tool_id

    def get_tool_route(self, name: str) -> tuple[str, str]:
        """``(server, tool)`` behind a pegboard name.

        Raises:
            Unreachable: no such name (with close names).
        """
        tid = self._board.entry(name).tool_id
        return tid.server, tid.tool

    def select_tools(self, names: Iterable[str]) -> list[ToolSpec] | None:
        """All the named specs, in the order asked, or ``None`` if any is missing."""
        if isinstance(names, str):
            raise TypeError(f"select_tools takes an iterable of names, not the str {names!r}")
        board = self._board
        specs: list[ToolSpec] = []
        for name in names:
            entry = board.entries.get(check_name_arg(name))
            if entry is None:
                return None
            specs.append(entry.spec)
        return specs

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._board.entries

    def __len__(self) -> int:
        return len(self._board.entries)

    # -- listing --------------------------------------------------------------------------
    def list_tools_in_namespace(self, namespace: str | None) -> list[str]:
        """Sorted names in ``namespace``; ``None``/``""`` lists the unprefixed ones."""
        return self._board.names_in(namespace)

    def get_tools_in_namespace(self, namespace: str | None) -> list[ToolSpec]:
        """Specs (under their pegboard names) in ``namespace``, sorted by name."""
        board = self._board
        return [board.entries[n].spec for n in board.names_in(namespace)]

    def list_all_tools(self) -> list[str]:
        """Every pegboard name, sorted."""
        return list(self._board.sorted_names())

    def get_all_tools(self) -> list[ToolSpec]:
        """Every spec under its pegboard name, sorted by name (what an agent is offered)."""
        board = self._board
        return [board.entries[n].spec for n in board.sorted_names()]

    def entries(self, server: str | None = None) -> list[PegEntry]:
        """Every entry (or one server's), sorted by name, all from one snapshot."""
        board = self._board
        if server is None:
            return [board.entries[n] for n in board.sorted_names()]
        service = board.services.get(check_name_arg(server, "server name"))
        return [] if service is None else [board.entries[n] for n in service.names]

    def list_namespaces(self) -> list[str]:
        """Sorted non-empty namespaces (unprefixed services have none)."""
        return sorted(self._board.namespaces)

    def list_services(self) -> list[str]:
        """Sorted servers on this board (added, or with tools registered by hand)."""
        return sorted(self._board.services)

    def names_for_server(self, server: str) -> list[str]:
        """Sorted pegboard names of one server's tools; [] for a server not on the board."""
        service = self._board.services.get(check_name_arg(server, "server name"))
        return [] if service is None else list(service.names)

    def skipped(self, server: str) -> list[tuple[str, str]]:
        """``(tool name, reason)`` for each tool of ``server`` its last listing skipped."""
        service = self._board.services.get(check_name_arg(server, "server name"))
        return [] if service is None else list(service.skipped)

    def namespace_of(self, server: str) -> str | None:
        """The server's namespace ('' when unprefixed), or None if it is not on the board."""
        service = self._board.services.get(check_name_arg(server, "server name"))
        return None if service is None else service.namespace

    # -- counting -------------------------------------------------------------------------
    def tool_count(self) -> int:
        """How many names are on the board."""
        return len(self._board.entries)

    def service_count(self) -> int:
        """How many services (servers) have tools on the board."""
        return len(self._board.services)

    def namespace_count(self) -> int:
        """How many distinct namespaces are in use (the empty one counts)."""
        return len(self._board.namespaces)

    # -- related names --------------------------------------------------------------------
    def related(self, name: str) -> list[str]:
        """Names of tools with the same original name on other servers, sorted."""
        return self._board.related(name)

    def same_named(self) -> dict[str, list[str]]:
        """Each original name offered by two or more servers -> their pegboard names."""
        return self._board.same_named()

    # -- calling --------------------------------------------------------------------------
    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None,
                        provenance: Provenance | None = None) -> Result:
        """Send the call, under the tool's original name, to its server through the router."""
        tid = self._board.entry(name).tool_id
        return await self.router.call(tid, {} if arguments is None else arguments, provenance)

    def __repr__(self) -> str:
        board = self._board
        return (f"PegBoard({len(board.services)} services, {len(board.entries)} tools, "
                f"separator={self.separator!r})")


def _both(first: Callable[[], Any], second: Callable[[], Any]) -> Callable[[], None]:
    def remove() -> None:
        first()
        second()
    return remove
