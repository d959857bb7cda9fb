"""The bench's servers: one row each, the settings they connect with, and what they share.

``Servers`` owns the rows (``Row``: kept even when a connect failed, so the ``servers``
table tells why; it also holds the server's ``Redactor`` and what ``connect`` was given,
what a Dask worker rebuilds the server from), the bench's ``timeout``, ``connect_timeout``
and ``egress``, the answers to servers' requests (``ServerRequests``: sampling, elicitation,
roots), their notifications (``Notifications``: logs, progress) and whether the bench is
closed. Only its methods change any of them; everyone else reads.

A connected server is announced to the ``on_connected`` listeners (the catalog follows it),
an added ToolBox's to ``on_added``: this module knows nothing above it. It may import
``_routing``, ``_transports``, ``_core`` and ``toolbench._bench.progress``.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio

from toolbench._bench.progress.bars import progress_bar
from toolbench._bench.servers import config as _config
from toolbench._bench.servers.connected import Connected
from toolbench._bench.servers.scrub import hinted, scrubbed
from toolbench._core import html as _html
from toolbench._core.checks import seconds
from toolbench._core.client import ResourceClient
from toolbench._core.errors import Refused, ToolError, Unreachable
from toolbench._core.ids import Egress, check_server_name, did_you_mean
from toolbench._core.redact import Redactor
from toolbench._loop import get_loop
from toolbench._routing.connections import (
    Connection,
    ConnectOptions,
    open_connection,
    secret_values,
)
from toolbench._routing.pegboard import USE_SERVER_NAME, Namespace
from toolbench._transports.mcp.client import NotOffered
from toolbench._transports.notifications import LEVELS
from toolbench._transports.toolbox import ToolBox

if TYPE_CHECKING:
    from toolbench._routing.pegboard import PegBoard
    from toolbench._routing.router import ToolRouter
    from toolbench._transports.notifications import LogLevel, Notifications
    from toolbench._transports.server_requests import ServerRequests

CLOSE_BOUND_S = 15.0
"""How long cleaning up after a failed connect may take (an McpClient needs up to 10 s)."""
REPLACEABLE = frozenset({"failed", "lost"})
"""Row statuses that ``connect``/``add`` under the same name replace instead of refusing."""
_NO_SECRETS = Redactor(())

OnConnected = Callable[[str, Connection], Awaitable[None]]
"""A listener told of each server that connected (its name and its connection)."""


class ListingWarning(UserWarning):
    """Some servers could not list their resources or prompts; the frame has the others."""


@dataclass
class Row:
    """One server of the bench; changed only by ``Servers``."""

    name: str
    transport: str
    status: str
    connection: Connection | None = None
    error: str | None = None
    stderr: str = ""
    """The stderr tail as it was when the connect failed (closing deletes the live file)."""
    redact: Redactor = field(default=_NO_SECRETS, repr=False)
    """Hides this server's secrets (env, headers, config expansions) in every cell shown."""
    given: tuple[Any, dict[str, Any], Any] | None = field(default=None, repr=False)
    """What ``connect`` was given (target, options, namespace): what a Dask worker rebuilds
    the server from (``map(..., cluster=)``). It holds secrets: never shown."""
    timeout: float | None = None
    """The server's own call timeout (``connect(..., timeout=)`` or its config), if given."""

    def current_status(self) -> str:
        """The row's status, or the connection's own once connected (it may fail or be lost)."""
        if self.status == "connected" and self.connection is not None:
            return self.connection.status()
        return self.status


class Servers:
    """The rows of the bench's servers and the settings every connection shares."""

    def __init__(self, router: ToolRouter, pegboard: PegBoard, *, timeout: float,
                 connect_timeout: float, egress: Egress | None, requests: ServerRequests,
                 notifications: Notifications) -> None:
        self.router = router
        self.pegboard = pegboard
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._egress = egress
        self._requests = requests
        self._notifications = notifications
        self._rows: dict[str, Row] = {}
        self._closed = False
        self._on_connected: list[OnConnected] = []
        self._on_added: list[Callable[[str], Awaitable[None]]] = []

    # -- what others read -------------------------------------------------------------------
    @property
    def timeout(self) -> float:
        return self._timeout

    @property
    def connect_timeout(self) -> float:
        return self._connect_timeout

    @property
    def egress(self) -> Egress | None:
        return self._egress

    @property
    def notifications(self) -> Notifications:
        """The servers' logs and progress updates (``bench.logs``)."""
        return self._notifications

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Bench is closed; make a new one")

    def row(self, name: str) -> Row | None:
        return self._rows.get(name)

    def rows(self) -> list[Row]:
        """Every row, in the order the servers came."""
        return list(self._rows.values())

    def names(self) -> list[str]:
        return list(self._rows)

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def unknown(self, name: str) -> str:
        """The end of a "no such server" message: who is connected, and close names."""
        return f"connected: {sorted(self._rows)}{did_you_mean(name, self._rows)}"

    def redactor(self, server: str) -> Redactor | None:
        """The server's secret hider, or None when it has no secrets."""
        row = self._rows.get(server)
        return row.redact if row is not None and row.redact.active else None

    def limit(self, server: str, timeout: float | None) -> float:
        """A call's timeout: the call's own, else its server's, else the bench's (DESIGN,
        "Which option wins"; ``None`` is the one "not given")."""
        if timeout is not None:
            return timeout
        row = self._rows.get(server)
        if row is not None and row.timeout is not None:
            return row.timeout
        return self._timeout

    def on_connected(self, listener: OnConnected) -> None:
        """Call ``listener(name, connection)`` (awaited) once each server has connected."""
        self._on_connected.append(listener)

    def on_added(self, listener: Callable[[str], Awaitable[None]]) -> None:  # await each
        """``listener(name)`` for each server of a ToolBox once ``add`` has added it."""
        self._on_added.append(listener)

    # -- in and out -------------------------------------------------------------------------
    async def connect(self, name: str, target: Any, namespace: Namespace,
                      given: ConnectOptions) -> Connected:
        """A failed row is kept (it tells why); it is replaced only once a new target is
        valid, and a config mistake (a name collision) keeps no row at all."""
        self.check_open()
        options: dict[str, Any] = dict(given)
        check_server_name(name)
        redact = Redactor(secret_values(options))
        existing = self._rows.get(name)
        if existing is not None and existing.current_status() not in REPLACEABLE:
            raise ValueError(f"server {name!r} is already connected; disconnect it first")
        own_timeout = seconds(options["timeout"], "timeout") if "timeout" in options else None
        options.setdefault("timeout", self._timeout)
        options.setdefault("connect_timeout", self._connect_timeout)
        try:
            connection = open_connection(name, target, options, self._requests,
                                         self._notifications)
        except Exception as exc:
            clean = scrubbed(exc, redact)
            if clean is exc:
                raise
            raise clean from None
        if existing is not None:  # a failed or lost row: it goes only once the new one is valid
            await self.disconnect(name)
        row = Row(name, connection.transport, "connecting", connection, redact=redact,
                  given=(target, dict(options), namespace), timeout=own_timeout)
        self._rows[name] = row
        try:
            if self._egress is not None and not self._egress.allows(connection.destination):
                raise Unreachable(self._egress.refusal(connection.destination))
            await connection.open()
            # An MCP connection is followed by the bench's catalog (list changes and
            # reconnects, one path); any other client by the pegboard itself.
            followed = getattr(connection, "mcp", None) is not None
            count = await self.pegboard.add_service(name, connection.client,
                                                    namespace=namespace, follow=not followed)
        except BaseException as exc:
            row.status, row.error = "failed", redact(str(exc))
            with contextlib.suppress(Exception):  # read before closing deletes the file
                row.stderr = redact(connection.stderr_tail())
            # Shielded, so an interrupted connect still ends its child; bounded all the same.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_BOUND_S):
                await connection.close()
            if not isinstance(exc, ToolError):  # a config mistake (collision): no row kept
                self._rows.pop(name, None)
            clean = scrubbed(hinted(exc, name), redact)
            if clean is exc:
                raise
            raise clean from None
        row.status, row.error = "connected", None
        for listener in self._on_connected:  # the catalog follows it (catalog/follow.py)
            await listener(name, connection)
        return Connected(count, name, connection.transport)

    async def add(self, box: ToolBox) -> list[str]:
        """All of the box's servers or none: half a box would leave names nothing can take."""
        self.check_open()
        if not isinstance(box, ToolBox):
            raise TypeError(f"add() takes a ToolBox, not {box!r}; use connect() for servers")
        servers = box.servers()
        taken = [s for s in servers
                 if s in self._rows and self._rows[s].current_status() not in REPLACEABLE]
        if taken:
            raise ValueError(f"servers already connected: {taken}; nothing was added")
        for server in servers:
            if server in self._rows:  # a failed or lost row: replaced
                await self.disconnect(server)
        added: list[str] = []
        try:
            for server in servers:
                await self.pegboard.add_service(server, box)
                self._rows[server] = Row(server, "toolbox", "connected",
                                         Connection.wrap(server, box, "toolbox"))
                added.append(server)
        except BaseException:
            for server in added:
                self.pegboard.remove_service(server)
                self._rows.pop(server, None)
            raise
        for server in servers:  # e.g. its PinWarning, built off the loop, issued first
            for listener in self._on_added:
                await listener(server)
        return servers

    async def disconnect(self, name: str) -> None:
        """The row and the names go first, so nothing new reaches a closing connection."""
        row = self._rows.pop(name, None)
        if row is None:
            raise KeyError(f"no server {name!r}; connected: {sorted(self._rows)}")
        if name in self.pegboard.list_services():
            self.pegboard.remove_service(name)
        self.router.unroute(name)
        self._requests.set_server_roots(name, None)
        if row.connection is not None:
            await row.connection.close()

    def check_config(self, config: str | os.PathLike[str] | Mapping[str, Any],
                     stacklevel: int) -> _config.Parsed:
        """Read and check the whole config in the caller's thread; nothing starts here.

        Runs before the shared loop is involved, so a file read never blocks the loop and the
        unknown-key ``ConfigWarning`` is issued where the caller can see (and filter) it.
        """
        self.check_open()
        parsed = _config.parse(config)
        taken = sorted(e.name for e in parsed.servers if e.name in self._rows
                       and self._rows[e.name].current_status() not in REPLACEABLE)
        if taken:
            raise ValueError(f"servers already connected: {taken}; disconnect them first; "
                             "nothing was started")
        parsed.warn_unknown(stacklevel=stacklevel + 1)
        return parsed

    async def connect_all(self, parsed: _config.Parsed, progress: bool | None) -> None:
        """Every server of a checked config at once, each succeeding or failing on its own."""
        entries = parsed.servers
        bar = progress_bar(len(entries), "connecting", progress)

        async def one(entry: _config.ServerConfig) -> None:
            try:
                options = dict(entry.options)
                namespace = options.pop("namespace", USE_SERVER_NAME)
                await self.connect(entry.name, entry.target, namespace,
                                   cast(ConnectOptions, {**options, "secrets": entry.secrets}))
            except Exception as exc:  # every server on its own: the failed row tells it
                if entry.name not in self._rows:  # e.g. a NameCollision keeps no row
                    redact = Redactor(secret_values({**entry.options,
                                                     "secrets": entry.secrets}))
                    self._rows[entry.name] = Row(entry.name, entry.transport, "failed",
                                                 error=redact(f"{type(exc).__name__}: {exc}"),
                                                 redact=redact)
            finally:
                bar.update(1)

        try:
            async with anyio.create_task_group() as tg:
                for entry in entries:
                    tg.start_soon(one, entry)
        finally:
            bar.close()

    def mark_closed(self) -> bool:
        """Close the door: nothing new connects or calls. False if it was closed already."""
        if self._closed:
            return False
        self._closed = True
        return True

    async def close_connections(self) -> None:
        """Connections close concurrently, so one slow server does not hold up the rest."""
        async with anyio.create_task_group() as tg:
            for row in self._rows.values():
                if row.connection is not None:
                    tg.start_soon(row.connection.close)
        for row in self._rows.values():
            row.status = "closed"

    # -- resources and prompts: which servers offer them ------------------------------------
    def resource_client(self, server: object) -> ResourceClient:
        """The client of ``server`` if it can offer resources and prompts (an MCP server)."""
        if not isinstance(server, str):
            raise TypeError(f"a server name is a str, not {type(server).__name__} {server!r}")
        row = self._rows.get(server)
        if row is None:
            raise Unreachable(f"no server {server!r}; {self.unknown(server)}")
        client = row.connection.client if row.connection is not None else None
        if not isinstance(client, ResourceClient):
            raise Refused(f"server {server!r} ({row.transport}) offers tools only: resources "
                          "and prompts are MCP's, and only an MCP server has them")
        return client

    def candidates(self, server: str | None) -> list[tuple[str, ResourceClient]]:
        """``server``'s resource client, or every open server's that has one."""
        if server is not None:
            return [(server, self.resource_client(server))]
        found: list[tuple[str, ResourceClient]] = []
        for name, row in list(self._rows.items()):
            client = row.connection.client if row.connection is not None else None
            if isinstance(client, ResourceClient) and row.current_status() != "closed":
                found.append((name, client))
        return found

    def connections_now(self) -> frozenset[tuple[str, int]]:
        """Which connections offer resources now (a change means a prompt index re-lists)."""
        return frozenset((name, id(self._rows[name].connection))
                         for name, _ in self.candidates(None))

    async def gather(self, server: str | None,
                     ask: Callable[[ResourceClient, str], Awaitable[list[dict[str, Any]]]],
                     what: str) -> list[tuple[str, dict[str, Any]]]:
        """Every server's rows at once; one server's failure is a warning, not the frame's.

        With ``server`` given, its failure (not offering ``what`` included) is raised.
        """
        candidates = self.candidates(server)
        if server is not None:  # its failure is the caller's, raised as it is
            return [(server, row) for row in await ask(candidates[0][1], server)]
        found: dict[str, list[dict[str, Any]]] = {}
        failed: dict[str, str] = {}

        async def one(name: str, client: ResourceClient) -> None:
            try:
                found[name] = await ask(client, name)
            except Refused as exc:
                if not isinstance(exc, NotOffered):  # not offering is no failure
                    failed[name] = exc.detail
            except ToolError as exc:
                failed[name] = exc.detail

        async with anyio.create_task_group() as group:
            for name, client in candidates:
                group.start_soon(one, name, client)
        if failed:
            told = "; ".join(f"{name}: {self._rows[name].redact(_html.shorten(detail, 300))}"
                             for name, detail in sorted(failed.items()))
            warnings.warn(f"listing {what} failed on {len(failed)} server(s), left out: {told}",
                          ListingWarning, stacklevel=4)
        return [(name, row) for name, _ in candidates for row in found.get(name, [])]

    def mcp(self, server: object) -> Any:
        """The ``McpClient`` of ``server`` (an MCP server), or a clear error."""
        self.resource_client(server)  # no such server, or tools only: raised there
        row = self._rows[str(server)]
        mcp = getattr(row.connection, "mcp", None)
        if mcp is None:
            raise Refused(f"server {server!r} ({row.transport}) is not an MCP connection: "
                          "completions and subscriptions are MCP's")
        return mcp

    # -- subscriptions ----------------------------------------------------------------------
    async def subscribe(self, server: str, uri: str, timeout: float | None, *,
                        on: bool) -> None:
        self.check_open()
        mcp = self.mcp(server)
        if on:
            await mcp.subscribe(server, uri, timeout=timeout)
        else:
            await mcp.unsubscribe(server, uri, timeout=timeout)

    def subscriptions(self, server: str | None = None) -> dict[str, list[str]]:
        names = [server] if server is not None else sorted(self._rows)
        found: dict[str, list[str]] = {}
        for name in names:
            row = self._rows.get(name)
            mcp = getattr(row.connection, "mcp", None) if row is not None else None
            if mcp is not None and mcp.subscriptions:
                found[name] = list(mcp.subscriptions)
        return found

    # -- roots ------------------------------------------------------------------------------
    def roots(self) -> list[str]:
        return [str(r.uri) for r in self._requests.roots or ()]

    def set_roots(self, values: Iterable[Any] | None) -> None:
        """New roots for the bench; connected servers are told (bounded, on the loop)."""
        self._requests.set_roots(values)
        loop = get_loop()
        if loop.in_loop_thread():
            loop.submit(self._notify_roots)
        else:
            loop.run(self._notify_roots)

    async def _notify_roots(self) -> int:
        """Tell the servers that use the bench's roots (not those with their own)."""
        rows = [row for row in self._rows.values() if row.connection is not None
                and not self._requests.has_own_roots(row.name)]
        told = [0]

        async def one(connection: Connection) -> None:
            if await connection.notify_roots_changed():
                told[0] += 1

        async with anyio.create_task_group() as group:
            for row in rows:
                assert row.connection is not None
                group.start_soon(one, row.connection)
        return told[0]

    async def set_server_roots(self, server: str, roots: Iterable[Any] | None) -> bool:
        self.check_open()
        row = self._rows.get(server)
        if row is None:
            raise KeyError(f"no server {server!r}; connected: {sorted(self._rows)}")
        self._requests.set_server_roots(server, roots)
        if row.connection is None:
            return False
        return bool(await row.connection.notify_roots_changed())

    def server_roots(self, server: str) -> list[str]:
        return [str(r.uri) for r in self._requests.roots_for(server) or ()]

    # -- log level --------------------------------------------------------------------------
    def log_level(self) -> str | None:
        return self._notifications.log_level

    def set_log_level(self, level: LogLevel) -> None:
        """Ask every connected server for ``level`` at once (on the loop)."""
        if level not in LEVELS:
            raise ValueError(f"invalid log_level {level!r}: one of {', '.join(LEVELS)}")
        self._notifications.log_level = level
        loop = get_loop()
        if loop.in_loop_thread():
            loop.submit(lambda: self._send_log_level(level))
        else:
            loop.run(self._send_log_level, level)

    async def _send_log_level(self, level: str) -> int:
        told = [0]

        async def one(mcp: Any) -> None:
            if await mcp.aset_log_level(level):
                told[0] += 1

        async with anyio.create_task_group() as group:
            for row in list(self._rows.values()):
                mcp = getattr(row.connection, "mcp", None)
                if mcp is not None:
                    group.start_soon(one, mcp)
        return told[0]
