"""The servers' faces on ``Bench``: connect, add, disconnect, load a config; roots,
subscriptions and the log level.

``ServerFaces`` holds no state: each public method keeps its signature and docstring here,
beside the concept, and hands off to ``Servers`` (``toolbench._bench.servers.servers``) in
one step. It may import ``toolbench._bench.servers``, ``_routing``, ``_transports``, ``_core``
and ``_loop``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Unpack

from toolbench._loop import get_loop
from toolbench._routing.connections import ConnectOptions
from toolbench._routing.pegboard import USE_SERVER_NAME, Namespace
from toolbench._transports.toolbox import ToolBox

if TYPE_CHECKING:

    from toolbench._bench.servers.connected import Connected
    from toolbench._bench.servers.servers import Servers
    from toolbench._core.ids import Egress
    from toolbench._transports.notifications import LogLevel


class ServerFaces:
    """Servers in and out, and what every server is told; a face over ``Servers``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        connections: Servers

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
                sign-in), ``rate`` (``"10/s"``, ``"600/min"``: at most that many calls to
                this server; a call waits its turn within its timeout). A ``ToolClient``
                takes only ``timeout``, ``connect_timeout`` and ``rate``.

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
        return get_loop().run(self.connections.connect, name, target, namespace, options)

    async def aconnect(self, name: str, target: Any, /, *,
                       namespace: Namespace = USE_SERVER_NAME,
                       **options: Unpack[ConnectOptions]) -> Connected:
        """Awaitable :meth:`connect`: the same arguments, result and errors."""
        return await get_loop().arun(self.connections.connect, name, target, namespace, options)

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
        return get_loop().run(self.connections.add, box)

    async def aadd(self, box: ToolBox) -> list[str]:
        """Awaitable :meth:`add`: the same argument, result and errors."""
        return await get_loop().arun(self.connections.add, box)

    def disconnect(self, name: str) -> None:
        """Remove a server, its tools and its row, and close its connection.

        Args:
            name: the server's name, as in ``servers``.

        Raises:
            KeyError: no server has that name.

        Example:
            >>> bench.disconnect("time")                                # doctest: +SKIP
        """
        get_loop().run(self.connections.disconnect, name)

    async def adisconnect(self, name: str) -> None:
        """Awaitable :meth:`disconnect`: the same argument and errors."""
        await get_loop().arun(self.connections.disconnect, name)

    @property
    def timeout(self) -> float:
        """Seconds each call may take unless its server or the call says otherwise."""
        return self.connections.timeout

    @property
    def connect_timeout(self) -> float:
        """Seconds each server may take to start and list its tools."""
        return self.connections.connect_timeout

    @property
    def egress(self) -> Egress | None:
        """The only network hosts a call or a connect may reach (``None``: not judged)."""
        return self.connections.egress

    @property
    def closed(self) -> bool:
        """True once ``close()`` has begun: nothing can be connected or called any more."""
        return self.connections.closed

    @property
    def roots(self) -> list[str]:
        """The ``file://`` URIs advertised to servers as roots (``[]`` when none).

        Assign paths or ``file://`` URIs to change them; connected servers get
        ``notifications/roots/list_changed`` (bounded by each server's call timeout). A bench
        made with ``roots=None`` advertises no roots, so new roots reach only servers
        connected later.
        """
        return self.connections.roots()

    @roots.setter
    def roots(self, values: Iterable[Any] | None) -> None:
        self.connections.set_roots(values)

    def set_roots(self, server: str, roots: Iterable[Any] | None) -> bool:
        """Give one server its own roots and tell that server only.

        Args:
            server: the server's name.
            roots: paths or ``file://`` URIs; ``None`` goes back to the bench's ``roots``.

        Returns:
            Whether the server was told (it is connected).

        Raises:
            KeyError: no such server. ValueError: a root is not a path or file:// URI.

        Example:
            >>> bench.set_roots("files", ["~/data"])                    # doctest: +SKIP
        """
        return get_loop().run(self.connections.set_server_roots, server, roots)

    async def aset_roots(self, server: str, roots: Iterable[Any] | None) -> bool:
        """Awaitable :meth:`set_roots`: the same arguments, result and errors."""
        return await get_loop().arun(self.connections.set_server_roots, server, roots)

    def server_roots(self, server: str) -> list[str]:
        """The ``file://`` URIs ``server`` is answered with (its own, else the bench's)."""
        return self.connections.server_roots(server)

    @property
    def log_level(self) -> str | None:
        """The least severe log message servers are asked for (``bench.logs``).

        Assigning a level asks every connected server for it at once (``logging/setLevel``
        on handshake-era servers; 2026 connections carry it on each request). A bench made
        with ``log_level=None`` gets no log callback, so it stays without logs.
        """
        return self.connections.log_level()

    @log_level.setter
    def log_level(self, level: LogLevel) -> None:
        self.connections.set_log_level(level)

    def subscribe(self, server: str, uri: str, *, timeout: float | None = None) -> None:
        """Hear about changes to one resource: each update is a ``bench.logs`` row.

        Works on both protocol eras (``resources/subscribe``, or a ``subscriptions/listen``
        stream), and survives reconnects (the bench subscribes again). Rows have ``kind``
        ``resource_updated`` and the URI as ``message``.

        Args:
            server: the server's name, as in ``servers``.
            uri: the resource's URI (as in ``bench.resources()``).
            timeout: seconds (default: the server's call timeout).

        Raises:
            Refused: the server offers no subscriptions, the URI is invalid, or it refused.
            Unreachable: no such server, or it cannot be reached.

        Example:
            >>> bench.subscribe("docs", "file:///notes.md")            # doctest: +SKIP
        """
        get_loop().run(self.connections.subscribe, server, uri, timeout, on=True)

    async def asubscribe(self, server: str, uri: str, *, timeout: float | None = None) -> None:
        """Awaitable :meth:`subscribe`: the same arguments and errors."""
        await get_loop().arun(self.connections.subscribe, server, uri, timeout, on=True)

    def unsubscribe(self, server: str, uri: str, *, timeout: float | None = None) -> None:
        """Stop hearing about one resource (see :meth:`subscribe`).

        Raises:
            Refused: not subscribed to ``uri`` (nothing sent), or the server refused.
        """
        get_loop().run(self.connections.subscribe, server, uri, timeout, on=False)

    async def aunsubscribe(self, server: str, uri: str, *,
                           timeout: float | None = None) -> None:
        """Awaitable :meth:`unsubscribe`: the same arguments and errors."""
        await get_loop().arun(self.connections.subscribe, server, uri, timeout, on=False)

    def subscriptions(self, server: str | None = None) -> dict[str, list[str]]:
        """The subscribed URIs, per server (or of one server)."""
        return self.connections.subscriptions(server)
