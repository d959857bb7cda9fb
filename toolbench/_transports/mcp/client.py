"""One connection to one MCP server (stdio, streamable HTTP, SSE or in process), as a ToolClient.

``McpClient`` is purely async, as httpx's ``AsyncClient`` is, and starts no thread: it works
from any asyncio program (``anyio.run``, ``asyncio.run``). The synchronous face, and the
shared loop that keeps connections alive between notebook cells, belong to the ``Bench``.

It is put together from one concept per module (of ``toolbench._transports.mcp``):

- ``lifecycle``: the connection's life (one owner task per connection, which enters and
  exits the SDK client; settle, loss, close) and the one ``connected`` event; ``attempt``:
  one connection attempt and its owner task's signals; ``recovery``: when a lost or failed
  connection is tried again;
- ``wire``: the transport the owner hands the SDK (watched, capped);
- ``calls``: ``call`` and the envelope of every other request; ``tracking``: what each
  request went through; ``errors``: the error mapping;
- ``methods``: the one paginator and ``tools/list``, resources and prompts, completions,
  subscriptions, tasks; with ``notifications`` and ``server_requests`` (``_transports``),
  the rest of the protocol;
- ``events``: list changes and connects, told to listeners, coalesced;
- ``session``: the status, and ``McpSession``, what the modules below use of this client.

In-process servers connect in the SDK's default ``auto`` mode (direct dispatch): the same
server over stdio also negotiates the 2026 protocol, so behaviour matches, it needs no
JSON-RPC framing, and ``tools/list_changed`` still arrives (through ``message_handler`` and
through ``listen``). ``protocol_mode="legacy"`` selects the JSON-RPC wire path instead.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shlex
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
from mcp.server import Server
from mcp.server.mcpserver import MCPServer

from toolbench._core.checks import is_whole, seconds
from toolbench._core.client import ToolSpec
from toolbench._core.contents import PromptResult, ReadResult
from toolbench._core.errors import Unreachable
from toolbench._core.ids import Destination, Provenance, ToolId, check_server_name
from toolbench._core.redact import Redactor, display_url
from toolbench._transports.auth.state import AuthOption, AuthState, check_auth, paused
from toolbench._transports.mcp.attempt import Conn
from toolbench._transports.mcp.calls import NOT_OFFERED, ProgressFn, Requests
from toolbench._transports.mcp.errors import NotOffered
from toolbench._transports.mcp.events import EventKind, Events
from toolbench._transports.mcp.lifecycle import Lifecycle
from toolbench._transports.mcp.methods import completions as _completions
from toolbench._transports.mcp.methods import listing as _listing
from toolbench._transports.mcp.methods import resources as _resources
from toolbench._transports.mcp.methods import subscriptions as _subs
from toolbench._transports.mcp.methods.hints import ResponseCache
from toolbench._transports.mcp.recovery import Recovery
from toolbench._transports.mcp.session import Status, TransportName
from toolbench._transports.notifications import Notifications, send_log_level
from toolbench._transports.server_requests import ServerRequests, notify_roots_changed
from toolbench._transports.wire.limits import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_TOOLS,
    check_max_message_bytes,
    check_max_tools,
)
from toolbench._transports.wire.stderr import StderrLog

__all__ = ["NOT_OFFERED", "PROTOCOL_MODES", "McpClient", "NotOffered", "ProgressFn",
           "ProtocolMode", "Status", "TransportName"]

logger = logging.getLogger(__name__)

ToolsChangedFn = Callable[[str], Awaitable[None]]
ProtocolMode = Literal["fast", "auto", "legacy"]
PROTOCOL_MODES: tuple[ProtocolMode, ...] = ("fast", "auto", "legacy")
"""How a stdio or HTTP connection picks its protocol (``protocol_mode``). ``"fast"`` (the
default): the 2025 ``initialize`` handshake, and the SDK's ``auto`` (``server/discover``,
2026-07-28 where offered) only if the server refuses it with an error reply. Measured on the
SDK's own Python server over stdio (BENCHMARKS.md, "Per-call cost"), a call costs ~25 % more on a
2026 connection (per-request stamps and result validation), and nothing toolbench does needs
2026: ``tools/list_changed`` arrives as a notification there. ``"auto"`` and ``"legacy"``
are the SDK's modes, as they are. The ``protocol`` column of ``bench.servers`` shows what was
negotiated. In process, the SDK's direct dispatch stays, unless ``"legacy"`` asks for the
wire path."""


_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_TRANSPORTS = ("stdio", "http", "sse", "in-process")


class McpClient(Lifecycle, Requests):
    """A connection to one MCP server, named locally; async, bound to the loop it first runs on.

    ``async with McpClient(...) as client`` connects and closes; ``await client.call(...)``
    and ``await client.list_tools(server)`` are the ``ToolClient`` face (every method that
    does I/O is a coroutine; there are no blocking twins here). A notebook user wanting
    blocking calls connects it to a ``Bench``, which runs it on the shared loop.

    What one server may send is bounded (a server is untrusted input):
    ``max_message_bytes`` (default 32 MiB) caps each message; a bigger one is dropped unread,
    fails its call as ``Malformed`` and restarts the connection (stdio: our own linear-time
    reader; HTTP: a capped response body; legacy SSE: the stream ends, so the call is
    ``TimedOut``). ``max_tools`` (default 10,000) caps discovery, which is also bounded by
    ``connect_timeout`` and ``MAX_PAGES``; past a bound, listing is ``Unreachable``.
    """

    honours_timeout = True
    """``call(..., timeout=)`` always ends by then (its own scope): no backstop is needed."""

    def __init__(
        self,
        target: str | Sequence[str] | MCPServer | Server[Any],
        *,
        name: str = "server",
        transport: TransportName | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 30.0,
        max_concurrent: int | None = None,
        secrets: Iterable[str] = (),
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_tools: int = DEFAULT_MAX_TOOLS,
        protocol_mode: str = "fast",
        server_requests: ServerRequests | None = None,
        notifications: Notifications | None = None,
        auth: AuthOption | str | None = None,
    ) -> None:
        self.name = check_server_name(name)
        # Sampling, elicitation and roots answers (a Bench shares one among its servers).
        self._requests = server_requests
        # Where log messages go (a Bench's bounded book); None: no logs asked for.
        self._notifications = notifications
        if protocol_mode not in PROTOCOL_MODES:
            raise ValueError(f"invalid protocol_mode {protocol_mode!r}: use one of "
                             f"{list(PROTOCOL_MODES)}")
        self._protocol_mode = protocol_mode
        if transport is not None and transport not in _TRANSPORTS:
            raise ValueError(f"invalid transport {transport!r}: use one of {list(_TRANSPORTS)}")
        self._timeout = seconds(timeout, "timeout")
        self._connect_timeout = seconds(connect_timeout, "connect_timeout")
        if max_concurrent is not None and not is_whole(max_concurrent):
            raise ValueError(
                f"invalid max_concurrent {max_concurrent!r}: a positive integer, or None for no cap"
            )
        self._max_concurrent = max_concurrent
        # What one server may send (DESIGN, "The trust boundary"): a bigger message fails its
        # call as Malformed and restarts the connection; a bigger catalog fails discovery.
        self._max_message_bytes = check_max_message_bytes(max_message_bytes)
        self._max_tools = check_max_tools(max_tools)
        self._output_schemas: dict[str, dict[str, Any]] | None = None  # None: never listed
        self._task_tools: frozenset[str] = frozenset()  # tools that run only as tasks
        self.skipped_tools: list[tuple[str, str]] = []
        """``(name, reason)`` of each tool the last listing skipped as unreadable."""
        self.responses = ResponseCache(self.name, lambda: (  # as the servers' cache hints say
            self._server_info.get("protocol"), self._auth.signins if self._auth else 0))
        self._events = Events(self.name, self.responses.changed)  # list changes, reconnects
        self._subscribed: set[str] = set()  # resource URIs, subscribed again on reconnect
        self.connects = 0  # connections that became ready (the "connected" event's count)
        self._env = _string_map("env", env)
        self._headers = _string_map("headers", headers)
        self._cwd = os.fspath(cwd) if cwd is not None else None
        if isinstance(secrets, str):
            raise TypeError("secrets is an iterable of strings, not one str")
        # Values hidden from every message besides env and headers (config ${VAR} expansions).
        self._redact = Redactor([*self._env.values(), *self._headers.values(), *secrets])
        self._argv: list[str] = []
        self._url = ""
        self._server: MCPServer | Server[Any] | None = None
        self.transport: TransportName = self._resolve(target, transport)
        self._auth = self._auth_state(check_auth(auth))
        self._status = Status.NEW
        self._last_error: str | None = None
        self._server_info: dict[str, Any] = {
            "protocol": None, "server_name": None, "server_version": None
        }
        self._stderr = StderrLog(self.name)
        self._conn: Conn | None = None
        self._lock: anyio.Lock | None = None
        self._limiter: anyio.CapacityLimiter | None = None
        self._recovery = Recovery(self)  # the retry window, and the reconnect under way
        self._bound: asyncio.AbstractEventLoop | None = None  # the loop its primitives live on

    # -- target -----------------------------------------------------------------------------
    def _resolve(self, target: object, transport: TransportName | None) -> TransportName:
        if isinstance(target, MCPServer | Server):
            _require(transport, ("in-process",), "an MCPServer/Server object")
            self._server = target
            return "in-process"
        if isinstance(target, str) and _URL_RE.match(target):
            scheme = target.split("://", 1)[0].lower()
            if scheme not in ("http", "https"):
                raise ValueError(
                    f"unsupported URL scheme {scheme!r} in {display_url(target)!r}: an MCP server "
                    "URL starts with http:// or https://"
                )
            _require(transport, ("http", "sse"), "a URL")
            if not urlsplit(target).hostname:
                raise ValueError(f"URL {display_url(target)!r} has no host")
            self._url = target
            if transport == "sse" or urlsplit(target).path.rstrip("/").endswith("/sse"):
                return "sse"
            return "http"
        if isinstance(target, str):
            argv = shlex.split(target)
        elif isinstance(target, Sequence) and all(isinstance(a, str) for a in target):
            argv = list(target)
        else:
            raise ValueError(
                f"invalid target {type(target).__name__}: use a command (str or list of str), "
                "an http(s) URL, or an MCPServer/Server object"
            )
        if not argv or not argv[0].strip():
            raise ValueError(
                f"empty command {target!r}: a stdio target names the program to run"
            )
        _require(transport, ("stdio",), "a command")
        self._argv = argv
        return "stdio"

    def _auth_state(self, option: AuthOption | None) -> AuthState | None:
        """Sign-in for HTTP and SSE (see toolbench/_transports/auth/state.py); None otherwise."""
        if self.transport not in ("http", "sse"):
            if option is not None:
                raise ValueError(f"auth is for an http(s) server, not a {self.transport} one")
            return None
        state = AuthState(self.name, self._url, option, has_headers=bool(self._headers),
                          hide=self._redact.add)
        state.pause = lambda: paused(self._conn.starting if self._conn is not None else None)
        return state

    @property
    def auth_text(self) -> str:
        """The ``auth`` column: ``none``, ``headers``, ``oauth (expires in 12 min)``..."""
        return "none" if self._auth is None else self._auth.describe()

    def access_token(self) -> str | None:
        """The sign-in's access token, for ``map(cluster=, share_credentials=True)`` only."""
        return None if self._auth is None else self._auth.access_token()

    @property
    def target_text(self) -> str:
        """The target as it may be shown: env and header values never appear."""
        if self.transport == "stdio":
            return self._redact(shlex.join(self._argv))
        if self.transport in ("http", "sse"):
            return self._redact(display_url(self._url))
        return f"<in-process {type(self._server).__name__}>"

    # -- introspection (``status`` and ``last_error`` are the lifecycle's) -------------------
    @property
    def server_info(self) -> dict[str, Any]:
        return dict(self._server_info)

    @property
    def timeout(self) -> float:
        """Seconds each call or request may take, unless it says otherwise."""
        return self._timeout

    @property
    def connect_timeout(self) -> float:
        """Seconds connecting, and each whole listing, may take."""
        return self._connect_timeout

    @property
    def max_tools(self) -> int:
        """The most items a listing (tools, resources, prompts) may hold."""
        return self._max_tools

    @property
    def max_message_bytes(self) -> int:
        """The largest message read from the server."""
        return self._max_message_bytes

    def stderr_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines a stdio child wrote to stderr, secrets hidden (else "")."""
        return self._redact(self._stderr.tail(lines))

    def add_tools_changed_listener(self, callback: ToolsChangedFn) -> Callable[[], None]:
        """``await callback(server_name)`` runs whenever the server says its tools changed.

        Returns a function that removes the listener again (a pegboard that drops this
        server calls it, so removed services stop refreshing).
        """
        return self._events.add("tools", callback)

    def add_listener(self, kind: EventKind, callback: ToolsChangedFn) -> Callable[[], None]:
        """``await callback(server_name)`` on each event of ``kind``, coalesced per kind:
        ``"tools"``, ``"resources"``, ``"prompts"`` (the server's list changed) or
        ``"connected"`` (a connection became ready: the first connect and every reconnect;
        ``connects`` counts them; see ``toolbench._transports.mcp.events``). Returns the
        function that removes it."""
        return self._events.add(kind, callback)

    def servers(self) -> list[str]:
        """``[name]``: one client serves one server (the ``ToolClient`` protocol)."""
        return [self.name]

    def destination(self, tool: ToolId) -> Destination:
        """The URL's host for HTTP and SSE (``Egress`` judges it); ``LOCAL`` otherwise."""
        if self.transport in ("http", "sse"):
            return Destination.remote(urlsplit(self._url).hostname or "")
        return Destination.LOCAL

    def __repr__(self) -> str:
        extra = f", env keys={sorted(self._env)}" if self._env else ""
        extra += f", header keys={sorted(self._headers)}" if self._headers else ""
        return (
            f"McpClient(name={self.name!r}, transport={self.transport!r}, "
            f"target={self.target_text!r}, status={self._status.value!r}{extra})"
        )

    async def anotify_roots_changed(self) -> bool:
        """Tell a connected server that the bench's roots changed; False if not connected.

        Bounded by the call timeout; a server that cannot take the notification is logged.
        """
        conn = self._conn
        if self._status is not Status.CONNECTED or conn is None or conn.client is None:
            return False
        try:
            with anyio.fail_after(self._timeout):
                await notify_roots_changed(conn.client)
        except Exception as exc:
            logger.debug("roots/list_changed to %s failed: %r", self.name, exc)
            return False
        return True

    async def __aenter__(self) -> McpClient:
        await self.aconnect()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- discovery and calls ----------------------------------------------------------------
    def check_server(self, server: str, tool: ToolId | None = None) -> None:
        """Refuse, before anything is sent, a request for a server this client does not serve.

        Raises:
            Unreachable: ``server`` is not this client's ``name``.
        """
        if server != self.name:
            raise Unreachable(
                f"this connection serves {self.name!r}, not {server!r}", tool=tool
            )

    async def list_tools(self, server: str) -> list[ToolSpec]:
        """Every tool, following ``nextCursor`` to the end, never from the SDK's cache.

        Bounded (a server is untrusted input): the whole listing by ``connect_timeout``,
        each page by ``timeout``, the count by ``max_tools`` and the pages by ``MAX_PAGES``,
        and every page by ``max_message_bytes``. Exceeding a bound is ``Unreachable`` (at
        connect, the bench keeps the failed row); a repeated cursor is ``Malformed``.
        """
        listed = await _listing.list_tools(self, server)
        self._output_schemas = listed.output_schemas
        self._task_tools = listed.task_tools
        self.skipped_tools = listed.skipped
        return listed.specs

    # -- resources and prompts (the requests live in toolbench._transports.mcp.methods) -----
    async def list_resources(self, server: str) -> list[dict[str, Any]]:
        """Every resource the server lists (all pages, bounded as ``list_tools`` is).

        Returns:
            One dict per resource: ``name``, ``uri``, ``title``, ``description``,
            ``mime_type``, ``size``, ``annotations``.

        Raises:
            Refused: the server does not offer resources (nothing was sent).
            Unreachable, TimedOut, Malformed: as for a call (an error reply is ``Refused``).
        """
        return await _resources.list_resources(self, server)

    async def list_resource_templates(self, server: str) -> list[dict[str, Any]]:
        """Every resource template the server lists; ``uri`` holds the template (RFC 6570).

        Raises:
            Refused: the server does not offer resources (nothing was sent).
        """
        return await _resources.list_resource_templates(self, server)

    async def read_resource(self, server: str, uri: str, *, timeout: float | None = None,
                            provenance: Provenance | None = None) -> ReadResult:
        """Read one resource (or a template's URI filled in); a read is idempotent.

        Args:
            server: this client's server name.
            uri: the resource's URI.
            timeout: seconds (default: the client's ``timeout``).
            provenance: sent along as the request's ``_meta``.

        Raises:
            Refused: no resources offered, a bad URI, or the server refused (unknown URI).
            Malformed: the contents exceed ``max_message_bytes``, or are unreadable.
            TimedOut: sent, and no answer in time (asking again is safe).
        """
        return await _resources.read_resource(self, server, uri, timeout=timeout,
                                              provenance=provenance)

    async def list_prompts(self, server: str) -> list[dict[str, Any]]:
        """Every prompt the server lists: ``prompt``, ``title``, ``description``, ``arguments``.

        Raises:
            Refused: the server does not offer prompts (nothing was sent).
        """
        return await _resources.list_prompts(self, server)

    async def get_prompt(self, server: str, name: str,
                         arguments: Mapping[str, str] | None = None, *,
                         timeout: float | None = None,
                         provenance: Provenance | None = None) -> PromptResult:
        """Fetch a prompt's messages; its arguments are strings (MCP's rule, checked first).

        Raises:
            Refused: no prompts offered, a non-string argument, or the server refused.
            TimedOut: sent, and no answer in time (asking again is safe).
        """
        return await _resources.get_prompt(self, server, name, arguments, timeout=timeout,
                                           provenance=provenance)

    # -- completions, subscriptions, log level (their own modules) -------------------------
    async def complete(self, server: str, ref: _completions.Ref, argument: str, value: str,
                       context: Mapping[str, str] | None = None, *,
                       timeout: float | None = None) -> list[str]:
        """The server's suggestions for one argument of a prompt or resource template.

        Args:
            server: this client's server name.
            ref: ``("prompt", name)`` or ``("template", uri_template)``.
            argument: the argument's name; value: what has been typed so far.
            context: the other arguments already chosen (strings).

        Raises:
            Refused: no completions offered, a bad argument, or the server refused.
            TimedOut: no answer in time (asking again is safe).
        """
        return await _completions.complete(self, server, ref, argument, value, context,
                                           timeout=timeout)

    async def subscribe(self, server: str, uri: str, *, timeout: float | None = None) -> None:
        """Subscribe to updates of one resource (both eras; kept across reconnects).

        Updates become ``resource_updated`` entries in the bench's log book.

        Raises:
            Refused: the server offers no subscriptions, a bad URI, or it refused.
        """
        await _subs.subscribe(self, server, uri, timeout=timeout)

    async def unsubscribe(self, server: str, uri: str, *, timeout: float | None = None) -> None:
        """Stop the updates of one subscribed resource.

        Raises:
            Refused: not subscribed to ``uri`` (nothing sent), or the server refused.
        """
        await _subs.unsubscribe(self, server, uri, timeout=timeout)

    @property
    def subscriptions(self) -> list[str]:
        """The resource URIs subscribed to, sorted."""
        return sorted(self._subscribed)

    async def aset_log_level(self, level: str) -> bool:
        """Ask a connected handshake-era server for ``level`` now (``logging/setLevel``); a
        2026 connection carries it on every request instead. False if not connected."""
        conn = self._conn
        if self._status is not Status.CONNECTED or conn is None or conn.client is None:
            return False
        return await send_log_level(conn.client, level, self._timeout, self.name)


def _string_map(label: str, value: Mapping[str, str] | None) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"invalid {label}: a mapping of strings to strings, "
                         f"not {type(value).__name__}")
    bad = [k for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        # Name the key only: the value may be a secret.
        raise ValueError(f"invalid {label} entry {bad[0]!r}: keys and values must be strings")
    return dict(value)


def _require(given: str | None, allowed: tuple[str, ...], what: str) -> None:
    if given is not None and given not in allowed:
        raise ValueError(f"transport {given!r} does not fit {what}; it allows {list(allowed)}")

