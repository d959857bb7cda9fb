"""What ``Bench.connect`` was given, turned into a connection with one uniform face.

The target's type picks the transport: a command (str or list) is stdio, an http(s) URL is
streamable HTTP (or SSE), an MCP server object runs in process, and any ToolClient (a
Toolset, a ToolBox, a test double) is used as it is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from toolbench._core.client import Result, ToolClient, ToolSpec
from toolbench._core.ids import Destination, Provenance, ToolId
from toolbench._core.rates import parse_rate
from toolbench._routing.router import call_client
from toolbench._transports.auth.state import AuthOption
from toolbench._transports.mcp.client import ProtocolMode, TransportName
from toolbench._transports.notifications import Notifications
from toolbench._transports.server_requests import ServerRequests


class ConnectOptions(TypedDict, total=False):
    """The keywords of ``Bench.connect`` besides ``namespace``; each may be left out.

    The defaults are the bench's (``timeout``, ``connect_timeout``) or the transport's.
    Only ``timeout`` and ``connect_timeout`` apply to a ``ToolClient`` target.
    """

    env: Mapping[str, str]
    """A stdio child's environment variables; every value is secret."""
    cwd: str | os.PathLike[str]
    """A stdio child's working directory."""
    headers: Mapping[str, str]
    """HTTP headers sent with every request; every value is secret."""
    transport: TransportName
    """Force ``"stdio"``, ``"http"``, ``"sse"`` or ``"in-process"`` (default: by target)."""
    timeout: float
    """Seconds each call, read or prompt fetch on this server may take, unless the call
    gives its own ``timeout=`` (which wins); without either, the bench's ``timeout``. An MCP
    server also bounds each page of its tool listing by it. Applies to every target."""
    connect_timeout: float
    """Seconds the server may take to start and list its tools (default: the bench's)."""
    max_concurrent: int | None
    """Calls in flight at once to this server; the rest queue (default: no cap)."""
    secrets: Iterable[str]
    """Further values (besides env and header values) never to show anywhere."""
    max_message_bytes: int
    """The largest message read from the server; a bigger one fails its call."""
    max_tools: int
    """The most tools the server may list; more fails the connect."""
    protocol_mode: ProtocolMode
    """``"fast"`` (the 2025 handshake first), ``"auto"`` or ``"legacy"``; see
    ``toolbench._transports.mcp.client.PROTOCOL_MODES``. ``servers`` shows the outcome."""
    auth: AuthOption | str
    """An http(s) server's sign-in: ``"oauth"``, ``tb.OAuth(...)``,
    ``tb.ClientCredentials(...)`` or an ``httpx2.Auth``; see toolbench/_transports/auth/state.py."""
    rate: str | None
    """At most this many calls to this server: ``"10/s"``, ``"600/min"`` (a token bucket on
    the loop; a call waits its turn within its timeout, recorded as ``queued_ms``). Applies
    to every target."""
    roots: Iterable[str | os.PathLike[str]]
    """This server's own roots (paths or ``file://`` URIs); the bench's ``roots`` is only the
    default for servers without their own. No server ever sees another server's roots."""


MCP_OPTIONS = frozenset(ConnectOptions.__optional_keys__)
SECRET_OPTIONS = ("env", "headers")
"""Options whose every value is a secret (never shown), wherever it came from."""


class _Renamed:
    """Serves a single-server client under the bench's local name (a Toolset's address may
    differ from the name the user connects it as)."""

    def __init__(self, name: str, inner: ToolClient, inner_server: str) -> None:
        self._name, self._inner, self._inner_server = name, inner, inner_server

    def servers(self) -> Iterable[str]:
        return [self._name]

    def _inner_id(self, tool: ToolId) -> ToolId:
        return ToolId(self._inner_server, tool.tool)

    def destination(self, tool: ToolId) -> Destination:
        return self._inner.destination(self._inner_id(tool))

    async def list_tools(self, server: str) -> list[ToolSpec]:
        return await self._inner.list_tools(self._inner_server)

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],
                   provenance: Provenance | None = None, *,
                   timeout: float | None = None) -> Result:
        # The router's rule, so the inner client still decides what a timeout means.
        result = await call_client(self._inner, self._inner_id(tool), arguments, provenance,
                                   timeout)
        result.tool = tool
        return result


class Connection:
    """One server as the bench sees it: open, close, status, info and stderr."""

    def __init__(self, name: str, client: ToolClient, transport: str, *,
                 owned: bool, mcp: Any = None) -> None:
        self.name, self.client, self.transport = name, client, transport
        self.owned = owned
        self._mcp = mcp  # the McpClient, when there is one

    @classmethod
    def wrap(cls, name: str, client: ToolClient, transport: str) -> Connection:
        return cls(name, client, transport, owned=False)

    @property
    def destination(self) -> Destination:
        return self.client.destination(ToolId(self.name, "_"))

    async def open(self) -> None:
        if self._mcp is not None:
            await self._mcp.aconnect()

    async def close(self) -> None:
        if self._mcp is not None and self.owned:
            await self._mcp.aclose()

    def status(self) -> str:
        if self._mcp is not None:
            return str(self._mcp.status)
        return "connected"

    def info(self) -> dict[str, Any]:
        if self._mcp is None:
            return {}
        info = dict(self._mcp.server_info or {})
        info["error"] = self._mcp.last_error
        return info

    def stderr_tail(self) -> str:
        return str(self._mcp.stderr_tail()) if self._mcp is not None else ""

    def auth_text(self) -> str:
        """The ``auth`` column: the kind of sign-in and its state, never a token."""
        return str(self._mcp.auth_text) if self._mcp is not None else "none"
    @property
    def mcp(self) -> Any:
        """The ``McpClient`` under this connection, or None (a ToolBox, a Toolset)."""
        return self._mcp

    async def notify_roots_changed(self) -> bool:
        """Tell an MCP server its client's roots changed; False if there is no one to tell."""
        if self._mcp is None:
            return False
        return bool(await self._mcp.anotify_roots_changed())


def _is_mcp_server(target: object) -> bool:
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    return isinstance(target, (Server, MCPServer))


def open_connection(name: str, target: Any, options: Mapping[str, Any],
                    requests: ServerRequests | None = None,
                    notifications: Notifications | None = None) -> Connection:
    """Build (not open) the connection for ``target``; bad targets and options raise here.

    ``requests`` (the bench's sampling, elicitation and roots answers) and
    ``notifications`` (its bounded log book) go to an MCP connection the bench creates; an
    ``McpClient`` given as the target keeps its own.
    """
    from toolbench._transports.mcp.client import McpClient
    from toolbench._transports.toolbox import ToolBox
    from toolbench._transports.toolset.toolset import Toolset

    # ``secrets`` only hides text; a client that shows no target has nothing to hide. A
    # ``rate`` is the bench's to keep (calls/retry.py), checked here with the rest.
    parse_rate(options.get("rate"))
    given = {k for k in options if k not in ("timeout", "connect_timeout", "secrets", "rate")}
    if isinstance(target, McpClient):
        _no_options(name, given, set(), "an McpClient")
        return Connection(name, target, target.transport, owned=True, mcp=target)
    if isinstance(target, (str, list, tuple)) or _is_mcp_server(target):
        unknown = set(options) - MCP_OPTIONS
        if unknown:
            raise TypeError(f"connect({name!r}, ...) got unknown options {sorted(unknown)}; "
                            f"known: {sorted(MCP_OPTIONS)}")
        target = list(target) if isinstance(target, tuple) else target
        kwargs = dict(options)
        kwargs["secrets"] = tuple(kwargs.get("secrets", ()))
        kwargs.pop("rate", None)
        own_roots = kwargs.pop("roots", None)
        if own_roots is not None:
            if requests is None:
                raise ValueError(f"connect({name!r}, roots=...) needs a bench to answer roots")
            requests.set_server_roots(name, own_roots)  # checked here; a bad root raises
        if requests is not None and requests.active_for(name):
            kwargs["server_requests"] = requests
        if notifications is not None:
            kwargs["notifications"] = notifications
        client = McpClient(target, name=name, **kwargs)
        return Connection(name, client, client.transport, owned=True, mcp=client)
    if isinstance(target, ToolClient):
        kind = ("toolset" if isinstance(target, Toolset)
                else "toolbox" if isinstance(target, ToolBox) else "in-process")
        _no_options(name, given, set(), f"a {type(target).__name__}")
        served = list(target.servers())
        if name in served:
            return Connection(name, target, kind, owned=False)
        if len(served) == 1:
            return Connection(name, _Renamed(name, target, served[0]), kind, owned=False)
        raise ValueError(
            f"{type(target).__name__} serves {served}, not {name!r}; connect it under one of "
            "those names, or use bench.add() for a ToolBox"
        )
    raise TypeError(
        f"cannot connect {name!r} to {type(target).__name__} {target!r}: a target is a command "
        "(str or list), an http(s) URL, an MCP server object, or a ToolClient"
    )


def secret_values(options: Mapping[str, Any]) -> list[str]:
    """Every value ``options`` says must never be shown: ``secrets``, env and header values."""
    found: list[str] = []
    raw = options.get("secrets", ())
    if isinstance(raw, str) or not isinstance(raw, Iterable):
        raise TypeError(f"secrets is an iterable of strings, not {type(raw).__name__}")
    found.extend(s for s in raw if isinstance(s, str))
    for key in SECRET_OPTIONS:
        values = options.get(key)
        if isinstance(values, Mapping):
            found.extend(v for v in values.values() if isinstance(v, str))
    return found


def _no_options(name: str, given: set[str], allowed: set[str], what: str) -> None:
    extra = given - allowed
    if extra:
        raise TypeError(f"connect({name!r}, {what}) takes no options {sorted(extra)}; they "
                        "belong to the client itself")
