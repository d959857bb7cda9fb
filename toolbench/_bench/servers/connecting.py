"""Connecting servers to a bench: ``connect``, ``add``, ``disconnect``, ``load_config``.

``Connecting`` is mixed into ``BaseBench`` (``toolbench._bench.bench``). Each server has one
row (``_Row``), kept even when its connect failed, so the ``servers`` table tells why; the
row also holds the server's ``Redactor`` and what ``connect`` was given (what a Dask worker
rebuilds the server from).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack, cast

import anyio

from toolbench._bench.many.batch import progress_bar
from toolbench._bench.servers import config as _config
from toolbench._bench.servers.connected import Connected
from toolbench._bench.servers.scrub import scrubbed
from toolbench._core.checks import seconds
from toolbench._core.errors import ToolError, Unreachable
from toolbench._core.ids import Egress, check_server_name
from toolbench._core.redact import Redactor
from toolbench._loop import get_loop
from toolbench._routing.connections import (
    Connection,
    ConnectOptions,
    open_connection,
    secret_values,
)
from toolbench._routing.pegboard import USE_SERVER_NAME, Namespace
from toolbench._transports.toolbox import ToolBox

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.catalog.follow import ItemKind, Items, ListingKind, Why
    from toolbench._routing.pegboard import PegBoard
    from toolbench._routing.router import ToolRouter
    from toolbench._transports.notifications import Notifications
    from toolbench._transports.server_requests import ServerRequests

CLOSE_BOUND_S = 15.0
"""How long cleaning up after a failed connect may take (an McpClient needs up to 10 s)."""
REPLACEABLE = frozenset({"failed", "lost"})
"""Row statuses that ``connect``/``add`` under the same name replace instead of refusing."""
_NO_SECRETS = Redactor(())


@dataclass
class _Row:
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



class Connecting:
    """Connecting and disconnecting servers; mixed into ``BaseBench``."""

    if TYPE_CHECKING:  # what BaseBench (and its other parts) provide
        _rows: dict[str, _Row]
        timeout: float
        connect_timeout: float
        egress: Egress | None
        router: ToolRouter
        pegboard: PegBoard
        _requests: ServerRequests
        _notifications: Notifications

        def _check_open(self) -> None: ...

        def _follow(self, name: str, connection: Connection) -> None: ...

        def _apply_listing(self, server: str, kinds: tuple[ListingKind, ...], why: Why,
                           found: dict[ItemKind, Items] | None = None) -> None: ...

        def _servers_frame(self) -> pd.DataFrame: ...

        async def _kinds_listed(self, server: str) -> None: ...

    async def _connect(self, name: str, target: Any, namespace: Namespace,
                       given: ConnectOptions) -> Connected:
        """A failed row is kept (it tells why); it is replaced only once a new target is
        valid, and a config mistake (a name collision) keeps no row at all."""
        self._check_open()
        options: dict[str, Any] = dict(given)
        check_server_name(name)
        redact = Redactor(secret_values(options))
        existing = self._rows.get(name)
        if existing is not None and existing.current_status() not in REPLACEABLE:
            raise ValueError(f"server {name!r} is already connected; disconnect it first")
        own_timeout = seconds(options["timeout"], "timeout") if "timeout" in options else None
        options.setdefault("timeout", self.timeout)
        options.setdefault("connect_timeout", self.connect_timeout)
        try:
            connection = open_connection(name, target, options, self._requests,
                                         self._notifications)
        except Exception as exc:
            clean = scrubbed(exc, redact)
            if clean is exc:
                raise
            raise clean from None
        if existing is not None:  # a failed or lost row: it goes only once the new one is valid
            await self._disconnect(name)
        row = _Row(name, connection.transport, "connecting", connection, redact=redact,
                   given=(target, dict(options), namespace), timeout=own_timeout)
        self._rows[name] = row
        try:
            if self.egress is not None and not self.egress.allows(connection.destination):
                raise Unreachable(self.egress.refusal(connection.destination))
            await connection.open()
            # An MCP connection is followed by the bench (follow.py: list changes and
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
            clean = scrubbed(exc, redact)
            if clean is exc:
                raise
            raise clean from None
        row.status, row.error = "connected", None
        self._follow(name, connection)  # list changes and reconnects re-list (follow.py)
        self._apply_listing(name, ("tools",), "connect")
        await self._kinds_listed(name)  # with a journal or pins: the other kinds too
        return Connected(count, name, connection.transport)

    def connect(self, name: str, target: Any, /, *, namespace: Namespace = USE_SERVER_NAME,
                **options: Unpack[ConnectOptions]) -> Connected:
        """Connect ``target`` as server ``name``; its type picks the transport.

        Args:
            name: the server's local name (1 to 64 of ``[A-Za-z0-9_.-]``), the prefix of
                its tools' names unless ``namespace`` says otherwise.
            target: a command (``str`` or list: stdio), an ``http(s)://`` URL (streamable
                HTTP, or SSE), an MCP server object (in process), or any ``ToolClient`` (a
                ``Toolset``, a ``ToolBox``).
            namespace: the tools' name prefix: the server's name by default; ``None`` or
                ``""`` keeps the tools' own names.
            **options: typed keywords for the connection, documented on
                :class:`~toolbench._routing.connections.ConnectOptions`: ``env``, ``cwd``,
                ``headers``, ``transport``, ``timeout``, ``connect_timeout``,
                ``max_concurrent``, ``secrets``, ``max_message_bytes``, ``max_tools``,
                ``protocol_mode``, ``auth`` (``"oauth"``, ``tb.OAuth(...)``,
                ``tb.ClientCredentials(...)`` or an ``httpx2.Auth``: an http(s) server's
                sign-in). A ``ToolClient`` takes only ``timeout`` and
                ``connect_timeout``.

        Returns:
            How many tools the server added to the catalog: an ``int`` whose repr says what
            connected, e.g. ``<connected 'time': 2 tools (stdio)>``.

        Raises:
            Unreachable: the server did not start, answer or list its tools in time, or
                ``egress`` refused its host. Its row stays in ``servers``, marked
                ``failed``; a later ``connect`` under the same name replaces it.
            ValueError: the name is taken by a live server, or a target or option is bad.
            NameCollision: one of its tools' names is already on the pegboard.

        Example:
            >>> bench.connect("time", "mcp-server-time --local-timezone UTC")  # doctest: +SKIP
            <connected 'time': 2 tools (stdio)>
        """
        return get_loop().run(self._connect, name, target, namespace, options)

    async def aconnect(self, name: str, target: Any, /, *,
                       namespace: Namespace = USE_SERVER_NAME,
                       **options: Unpack[ConnectOptions]) -> Connected:
        """Awaitable :meth:`connect`: the same arguments, result and errors."""
        return await get_loop().arun(self._connect, name, target, namespace, options)

    async def _add(self, box: ToolBox) -> list[str]:
        """All of the box's servers, or none: a half-added box would leave names that no
        later ``add`` could take."""
        self._check_open()
        if not isinstance(box, ToolBox):
            raise TypeError(f"add() takes a ToolBox, not {box!r}; use connect() for servers")
        servers = box.servers()
        taken = [s for s in servers
                 if s in self._rows and self._rows[s].current_status() not in REPLACEABLE]
        if taken:
            raise ValueError(f"servers already connected: {taken}; nothing was added")
        for server in servers:
            if server in self._rows:  # a failed or lost row: replaced
                await self._disconnect(server)
        added: list[str] = []
        try:
            for server in servers:
                await self.pegboard.add_service(server, box)
                self._rows[server] = _Row(server, "toolbox", "connected",
                                          Connection.wrap(server, box, "toolbox"))
                added.append(server)
        except BaseException:
            for server in added:
                self.pegboard.remove_service(server)
                self._rows.pop(server, None)
            raise
        return servers

    def add(self, box: ToolBox) -> list[str]:
        """Add every server a ``ToolBox`` names (typed Python functions as tools).

        Args:
            box: the ToolBox; each of its servers becomes a row of ``servers``.

        Returns:
            The names of the servers added.

        Raises:
            TypeError: ``box`` is not a ToolBox (use ``connect`` for servers).
            ValueError: one of its servers' names is taken; nothing was added.

        Example:
            >>> box = tb.ToolBox("calc")                                # doctest: +SKIP
            >>> bench.add(box)                                          # doctest: +SKIP
            ['calc']
        """
        return get_loop().run(self._add, box)

    async def aadd(self, box: ToolBox) -> list[str]:
        """Awaitable :meth:`add`: the same argument, result and errors."""
        return await get_loop().arun(self._add, box)

    async def _disconnect(self, name: str) -> None:
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

    def disconnect(self, name: str) -> None:
        """Remove a server, its tools and its row, and close its connection.

        Args:
            name: the server's name, as in ``servers``.

        Raises:
            KeyError: no server has that name.

        Example:
            >>> bench.disconnect("time")                                # doctest: +SKIP
        """
        get_loop().run(self._disconnect, name)

    async def adisconnect(self, name: str) -> None:
        """Awaitable :meth:`disconnect`: the same argument and errors."""
        await get_loop().arun(self._disconnect, name)

    def _check_config(self, config: str | os.PathLike[str] | Mapping[str, Any],
                      stacklevel: int) -> _config.Parsed:
        """Read and check the whole config in the caller's thread; nothing starts here.

        Runs before the shared loop is involved, so a file read never blocks the loop and the
        unknown-key ``ConfigWarning`` is issued where the caller can see (and filter) it.
        """
        self._check_open()
        parsed = _config.parse(config)
        taken = sorted(e.name for e in parsed.servers if e.name in self._rows
                       and self._rows[e.name].current_status() not in REPLACEABLE)
        if taken:
            raise ValueError(f"servers already connected: {taken}; disconnect them first; "
                             "nothing was started")
        parsed.warn_unknown(stacklevel=stacklevel + 1)
        return parsed

    def load_config(self, config: str | os.PathLike[str] | Mapping[str, Any], *,
                    progress: bool | None = None) -> pd.DataFrame:
        """Connect every server of an ``mcpServers``/``servers`` config, all at once.

        The whole config is checked first, in the caller's thread, and nothing starts if
        anything is wrong. After that every server succeeds or fails on its own, whatever
        the exception: a failed row with the error, while the others connect. A name clash
        with an earlier server's tools is that server's failed row. A server with
        ``"disabled": true`` is not started and has no row.

        Args:
            config: a JSON file's path, or its parsed content (a mapping).
            progress: a progress bar while servers start (``None``: only in a notebook).

        Returns:
            The ``servers`` table.

        Raises:
            ConfigError: a mistake anywhere in the file, naming its JSON path.
            ValueError: a server's name is already connected.

        Warns:
            ConfigWarning: once, for keys the file has that toolbench does not know.

        Example:
            >>> bench.load_config("mcp.json")                           # doctest: +SKIP
        """
        parsed = self._check_config(config, stacklevel=2)
        return get_loop().run(self._connect_all, parsed, progress)

    async def aload_config(self, config: str | os.PathLike[str] | Mapping[str, Any], *,
                           progress: bool | None = None) -> pd.DataFrame:
        """Awaitable :meth:`load_config`: the same arguments, result and errors."""
        parsed = self._check_config(config, stacklevel=2)
        return await get_loop().arun(self._connect_all, parsed, progress)

    async def _connect_all(self, parsed: _config.Parsed, progress: bool | None,
                           ) -> pd.DataFrame:
        entries = parsed.servers
        bar = progress_bar(len(entries), "connecting", progress)

        async def one(entry: _config.ServerConfig) -> None:
            try:
                options = dict(entry.options)
                namespace = options.pop("namespace", USE_SERVER_NAME)
                await self._connect(entry.name, entry.target, namespace,
                                    cast(ConnectOptions, {**options, "secrets": entry.secrets}))
            except Exception as exc:  # every server on its own: the failed row tells it
                if entry.name not in self._rows:  # e.g. a NameCollision keeps no row
                    redact = Redactor(secret_values({**entry.options,
                                                     "secrets": entry.secrets}))
                    self._rows[entry.name] = _Row(entry.name, entry.transport, "failed",
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
        return self._servers_frame()
