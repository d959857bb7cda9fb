"""One connection to one MCP server (stdio, streamable HTTP, SSE or in process), as a ToolClient.

The SDK's ``mcp.Client`` is an async context manager full of anyio cancel scopes, which must
be entered and exited by the same task (python-sdk #79, #922). A notebook runs each cell in a
new task, so the client cannot live in the caller's task. Each connection therefore has one
*owner task* on the event loop the client runs on: it enters the client, reports ready, waits
for a close request, and exits the client itself. Calls run in other tasks on the same loop
and use the entered client, which anyio allows.

``McpClient`` is purely async, as httpx's ``AsyncClient`` is, and starts no thread: it works
from any asyncio program (``anyio.run``, ``asyncio.run``). The synchronous face, and the
shared loop that keeps connections alive between notebook cells, belong to the ``Bench``.

In-process servers connect in the SDK's default ``auto`` mode (direct dispatch): the same
server over stdio also negotiates the 2026 protocol, so behaviour matches, it needs no
JSON-RPC framing, and ``tools/list_changed`` still arrives (through ``message_handler`` and
through ``listen``). ``protocol_mode="legacy"`` selects the JSON-RPC wire path instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import math
import os
import re
import shlex
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any, Literal, TypeVar, cast
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.message import SessionMessage
from mcp_types import RequestParamsMeta

from toolbench._core import html as _html
from toolbench._core.checks import is_whole, seconds
from toolbench._core.client import Result, ToolSpec, check_arguments
from toolbench._core.contents import PromptResult, ReadResult
from toolbench._core.errors import Malformed, Refused, ToolError, ToolFailed, Unreachable
from toolbench._core.ids import Destination, Provenance, ToolId, check_server_name, is_tool_name
from toolbench._core.validate import validate_output
from toolbench._core.version import __version__
from toolbench._transports import mcp_completions as _completions
from toolbench._transports import mcp_resources as _resources
from toolbench._transports import mcp_subscriptions as _subs
from toolbench._transports.auth import AuthOption, AuthState, LocalAnswers, check_auth, paused
from toolbench._transports.limits import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_TOOLS,
    CappedTransport,
    check_max_message_bytes,
    check_max_tools,
    oversize,
    oversize_text,
)
from toolbench._transports.mcp_about import about
from toolbench._transports.mcp_compat import default_result_type
from toolbench._transports.mcp_errors import (
    TICKET,
    CallTicket,
    ReadWrapper,
    Redactor,
    Tracker,
    describe,
    display_url,
    handshake_refused,
    is_transport_failure,
    map_call_error,
    refused_connect,
    tracked,
)
from toolbench._transports.mcp_events import EventKind, Events
from toolbench._transports.mcp_listing import extras, list_tools_page
from toolbench._transports.mcp_tasks import call_as_task, requires_task
from toolbench._transports.notifications import Notifications, send_log_level
from toolbench._transports.server_requests import (
    ServerRequests,
    call_error,
    notify_roots_changed,
)
from toolbench._transports.stderr import StderrLog
from toolbench._transports.stdio import bounded_stdio_client

logger = logging.getLogger(__name__)

TransportName = Literal["stdio", "http", "sse", "in-process"]
ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
ToolsChangedFn = Callable[[str], Awaitable[None]]
T = TypeVar("T")
NOT_OFFERED = "does not offer"
"""In the message of a :class:`NotOffered`."""


class NotOffered(Refused):
    """The server does not offer the capability a request needs (``resources``,
    ``prompts``): refused before anything was sent. A bench listing every server leaves
    such a server out quietly (by this type, not by its message)."""

GARBAGE_GRACE_S = 3.0
"""After non-protocol output on stdout, how much longer a starting server gets to answer."""
CLOSE_GRACE_S = 10.0
"""How long closing may take (the SDK alone may spend ~4 s stopping a hung child)."""
MAX_PAGES = 10_000
"""A paginator that never ends must not hang discovery."""
BACKOFF_FIRST_S = 0.5
"""After a failed (re)connect, calls fail fast this long before the next attempt..."""
BACKOFF_MAX_S = 30.0
"""...and the wait doubles with each failure up to this (a server that is back is found)."""
REFUSAL_WAIT_S = 2.0
"""How long a failed HTTP call waits for its transport to report why it ended."""
HTTP_TIMEOUT_S = 30.0
"""The HTTP client's connect, write and pool timeouts (the SDK's own default; a call's
``timeout`` is our own clock, so this only bounds the transport's single operations)."""
HTTP_READ_TIMEOUT_S = 300.0
"""The HTTP client's read timeout: an SSE stream may stay quiet this long (the SDK's own
default; its constant lives in a private module, so the value is written here)."""

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



class Status(enum.StrEnum):
    """Where a connection stands; the values are what ``status`` and ``bench.servers`` show."""

    NEW = "new"
    """Never connected: the first call connects."""
    CONNECTED = "connected"
    LOST = "lost"
    """It was connected and the connection ended: the next call reconnects once."""
    FAILED = "failed"
    """The last (re)connect failed: retried by a call after the backoff window."""
    CLOSED = "closed"


_RECONNECTABLE = frozenset({Status.NEW, Status.LOST, Status.FAILED})
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_TRANSPORTS = ("stdio", "http", "sse", "in-process")


class _Watched(ReadWrapper):
    """Read side of a transport that reports end-of-stream and unreadable stdout lines."""

    def __init__(self, inner: Any, conn: _Conn) -> None:
        super().__init__(inner)
        self._conn = conn

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._conn.on_eof()
            raise
        if isinstance(item, Exception):
            self._conn.on_garbage(item)
        elif isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCError):
            # Our transport dropped an oversized message and answered its request: restart.
            detail = oversize_text(item.message.error.message)
            if detail is not None:
                self._conn.owner._lost(self._conn, detail)
        return cast("SessionMessage | Exception", item)


@asynccontextmanager
async def _watched(transport: Any, conn: _Conn) -> AsyncIterator[tuple[Any, Any]]:
    async with transport as (read_stream, write_stream):
        yield _Watched(read_stream, conn), write_stream


class _Conn:
    """One connection attempt and its owner task's signals (all touched on the loop only)."""

    def __init__(self, owner: McpClient) -> None:
        self.owner = owner
        self.scope = anyio.CancelScope()
        self.stop = anyio.Event()
        self.done = anyio.Event()
        self.starting: anyio.CancelScope | None = None  # connect_timeout, until ready
        self.ready = False
        self.closing = False
        self.client: Client | None = None
        self.task_group: anyio.abc.TaskGroup | None = None
        self.error: BaseException | None = None
        self.garbage: str | None = None
        self.tracker = Tracker()  # what each call's request went through
        self.task: asyncio.Task[None] | None = None  # the owner task
        self.listening: _subs.Listening | None = None  # a 2026 subscriptions/listen stream

    def on_eof(self) -> None:
        if not self.closing and self.ready:
            self.owner._lost(self, "the server closed the connection")

    def on_garbage(self, exc: Exception) -> None:
        if self.garbage is None:
            errors = getattr(exc, "errors", None)
            try:
                line = repr(errors()[0]["input"]) if callable(errors) else str(exc)
            except Exception:
                line = str(exc)
            self.garbage = _html.shorten(line.replace("\n", " "), 200)
            if self.starting is not None:  # a server writing garbage gets a short grace
                self.starting.deadline = min(self.starting.deadline,
                                             anyio.current_time() + GARBAGE_GRACE_S)


class McpClient:
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
        self._events = Events(self.name)  # list changes and reconnects, coalesced
        self._subscribed: set[str] = set()  # resource URIs, subscribed again on reconnect
        self._ever_ready = False  # a later ready connection is a reconnect ("connected")
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
        self._conn: _Conn | None = None
        self._lock: anyio.Lock | None = None
        self._limiter: anyio.CapacityLimiter | None = None
        self._backoff = 0.0  # seconds of the current retry window; 0 after a success
        self._retry_at = 0.0  # loop time before which a failed/lost server is not retried
        self._attempt: anyio.Event | None = None  # set when the reconnect under way ends
        self._attempt_task: asyncio.Task[None] | None = None
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
        """Sign-in for HTTP and SSE (see toolbench/_transports/auth.py); None otherwise."""
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
        if self._auth is None:
            return "none"
        return self._auth.describe()

    @property
    def target_text(self) -> str:
        """The target as it may be shown: env and header values never appear."""
        if self.transport == "stdio":
            return self._redact(shlex.join(self._argv))
        if self.transport in ("http", "sse"):
            return self._redact(display_url(self._url))
        return f"<in-process {type(self._server).__name__}>"

    # -- introspection ----------------------------------------------------------------------
    @property
    def status(self) -> Status:
        return self._status

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

    @property
    def last_error(self) -> str | None:
        return self._last_error

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
        ``"connected"`` (up again after a loss or a failure; see
        ``toolbench._transports.mcp_events``). Returns the function that removes it."""
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

    # -- lifecycle --------------------------------------------------------------------------
    def _primitives(self) -> anyio.Lock:
        """anyio primitives must be made on the loop, so they are made on first use there.

        A client belongs to the event loop it first ran on, as httpx's ``AsyncClient`` does
        (its connection's tasks live there); a Bench runs it on its shared loop.
        """
        loop = asyncio.get_running_loop()
        if self._bound is not loop:
            if self._bound is not None and not self._bound.is_closed():
                raise RuntimeError(
                    f"McpClient {self.name!r} is in use on another event loop; use it on the loop "
                    "it first ran on (a Bench runs its connections on its own shared loop)"
                )
            self._bound, self._lock, self._limiter = loop, None, None
        if self._lock is None:
            self._lock = anyio.Lock()
            if self._max_concurrent is not None:
                self._limiter = anyio.CapacityLimiter(self._max_concurrent)
        return self._lock

    async def aconnect(self) -> None:
        """Connect (or reconnect after a failure, a loss or a close); no-op when connected.

        A call connects on first use, so this is needed only to fail early. ``async with``
        connects on entry and closes on exit.

        Raises:
            Unreachable: the server did not start, answer the handshake or list its tools
                within ``connect_timeout``; its stderr tail and the reason are in the error.
        """
        async with self._primitives():
            if self._status is Status.CONNECTED:
                return
            await self._retire()
            await self._open()

    async def _open(self) -> None:
        """Start the owner task and wait, within ``connect_timeout``, until it is ready.

        The owner reports ready with ``task_status.started()``; the wait is shortened to
        ``GARBAGE_GRACE_S`` once a stdio server writes non-protocol output (``on_garbage``).
        """
        conn = _Conn(self)
        self._conn = conn
        mark = self._stderr.mark()
        started = _Started()
        try:
            with anyio.fail_after(self._connect_timeout) as conn.starting:
                conn.task = _spawn(self._own(conn, task_status=started),
                                   f"toolbench-mcp-{self.name}")
                ready = await started.future
            timed_out = False
        except TimeoutError:
            ready, timed_out = False, True
        except BaseException:
            _abandon(conn)
            self._status = Status.FAILED
            self._note_failure()
            raise
        finally:
            conn.starting = None
        if ready:
            self._status = Status.CONNECTED
            self._last_error = None
            self._backoff = self._retry_at = 0.0
            self._on_ready(conn)
            return
        # Not awaited: stopping a hung child takes the SDK seconds, and the caller was promised
        # an answer within connect_timeout. _retire (next connect, or close) waits for it.
        _abandon(conn)
        if timed_out and conn.garbage is not None:
            reason = f"no protocol answer within {GARBAGE_GRACE_S:g} s of unreadable output"
        elif timed_out:
            reason = f"no answer within connect_timeout={self._connect_timeout:g} s"
        elif self._auth is not None and (
            denied := self._auth.explain(None, None, None, "handshake")) is not None:
            reason = self._redact(denied.detail)
        elif conn.error is not None:
            reason = describe(conn.error, self._redact)
        else:
            reason = "the connection ended during the handshake"
        if conn.garbage is not None:
            reason += f"; it wrote non-protocol output to stdout: {self._redact(conn.garbage)}"
        message = f"server {self.name!r} failed to start ({self.transport} {self.target_text}): "
        message += reason
        tail = self._redact(self._stderr.tail(20, since=mark))
        if tail:
            message += f"\n--- stderr (last lines) ---\n{tail}"
        self._status = Status.FAILED
        self._last_error = message
        self._note_failure()
        raise Unreachable(message) from conn.error

    def _on_ready(self, conn: _Conn) -> None:
        """A connection is up: ask for the log level (handshake era), and after a reconnect
        subscribe again and tell the ``connected`` listeners (who re-list)."""
        group, client = conn.task_group, conn.client
        if group is None or client is None:
            return
        if self._notifications is not None and self._notifications.log_level is not None:
            group.start_soon(send_log_level, client, self._notifications.log_level,
                             self._timeout, self.name)
        if self._ever_ready:
            group.start_soon(_subs.resubscribe, self, client)
            self._events.fire("connected", group)
        self._ever_ready = True

    def _note_failure(self) -> None:
        """Open the retry window: 0.5 s after the first failure, doubling up to 30 s."""
        self._backoff = min(BACKOFF_MAX_S, self._backoff * 2) if self._backoff else BACKOFF_FIRST_S
        self._retry_at = anyio.current_time() + self._backoff

    async def _own(self, conn: _Conn, *, task_status: _Started) -> None:
        """The owner task: enter the SDK client, report ready, wait, and exit it in this task."""
        try:
            with conn.scope:
                modes = self._wire_modes()
                for attempt, mode in enumerate(modes):
                    async with AsyncExitStack() as stack:
                        client = await self._enter(stack, conn, mode,
                                                   last=attempt == len(modes) - 1)
                        if client is None:  # refused this handshake: the next mode, anew
                            continue
                        await self._serve(conn, client, task_status)
                        break
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:  # the owner must never take the shared loop down
            conn.error = exc
            if conn.ready and not conn.closing:
                self._lost(conn, describe(exc, self._redact))
        finally:
            conn.client = None
            conn.task_group = None
            if conn.ready and not conn.closing and self._conn is conn:
                self._lost(conn, "the connection ended")
            conn.done.set()
            task_status.ended()

    def _wire_modes(self) -> tuple[str, ...]:
        """The SDK connect modes to try, in order (see ``protocol_mode``)."""
        if self._server is not None:
            return ("legacy",) if self._protocol_mode == "legacy" else ("auto",)
        if self._protocol_mode == "fast":
            return ("legacy", "auto")
        return (self._protocol_mode,)

    async def _enter(self, stack: AsyncExitStack, conn: _Conn, mode: str, *,
                     last: bool) -> Client | None:
        """Enter the SDK client in ``mode``; None when the server refused that handshake
        (an error reply to ``initialize``) and another mode is left to try."""
        target = await self._transport_object(stack, conn)
        if self._server is None:  # a stream transport: watch what leaves and returns
            target = tracked(target, conn.tracker)
        client = Client(
            target,
            mode=mode,
            cache=None,
            message_handler=lambda message: self._on_message(conn, message),
            client_info=types.Implementation(name="toolbench", version=__version__),
            **(self._requests.callbacks(self.name) if self._requests is not None else {}),
            **(self._notifications.callbacks(self.name)
               if self._notifications is not None else {}),
        )
        try:
            await stack.enter_async_context(client)
        except Exception as exc:
            if last or not handshake_refused(exc):
                raise
            logger.debug("%s refused the %s handshake (%r); trying the next mode",
                         self.name, mode, exc)
            return None
        return client

    async def _serve(self, conn: _Conn, client: Client, task_status: _Started) -> None:
        """Hold the entered client open for calls until the connection is asked to stop."""
        # The SDK re-checks structured content with stock jsonschema (Python's backtracking
        # ``re``, no size limits) and re-lists tools it has not seen; a hostile output schema
        # could stall the shared loop there. Our bounded check replaces it on this session
        # (the SDK has no public switch).
        client.session.validate_tool_result = self._check_output  # type: ignore[method-assign]
        default_result_type(client)
        self._server_info = about(client)
        async with anyio.create_task_group() as task_group:
            conn.task_group = task_group
            conn.client = client
            conn.ready = True
            task_status.started()
            if _subs.is_modern(client):  # list changes and updates come on one stream
                conn.listening = _subs.Listening(self, client)
                if conn.listening.wanted():
                    conn.listening.start(task_group)
            await conn.stop.wait()
            task_group.cancel_scope.cancel()

    async def _transport_object(self, stack: AsyncExitStack, conn: _Conn) -> Any:
        if self._server is not None:
            return self._server
        if self.transport == "stdio":
            params = StdioServerParameters(
                command=self._argv[0], args=self._argv[1:], env=self._env or None, cwd=self._cwd
            )
            # Not the SDK's stdio_client: its reader is quadratic in a line's length and
            # unbounded (see toolbench/_transports/stdio.py); this one is linear and capped.
            return _watched(bounded_stdio_client(params, errlog=self._stderr.file(),
                                                 max_message_bytes=self._max_message_bytes,
                                                 on_unwritten=conn.tracker.unwritten,
                                                 max_tools=self._max_tools,
                                                 redact=self._redact),
                            conn)
        if self.transport == "sse":
            return _watched(
                sse_client(self._url, headers=dict(self._headers) or None,
                           timeout=self._connect_timeout, httpx_client_factory=self._http_client,
                           auth=self._auth.http_auth() if self._auth is not None else None),
                conn,
            )
        http = self._http_client(headers=dict(self._headers) or None,
                                 auth=self._auth.http_auth() if self._auth is not None else None)
        await stack.enter_async_context(http)
        return _watched(streamable_http_client(self._url, http_client=http,
                                               max_sse_event_size=self._max_message_bytes), conn)

    def _http_client(self, headers: dict[str, str] | None = None,
                     timeout: httpx2.Timeout | None = None,
                     auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        """The SDK's HTTP client, but every response body capped at max_message_bytes."""
        if timeout is None:
            timeout = httpx2.Timeout(HTTP_TIMEOUT_S, read=HTTP_READ_TIMEOUT_S)
        hooks = {"response": [self._auth.on_response]} if self._auth is not None else None
        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=hooks,
                                  transport=LocalAnswers(CappedTransport(
                                      self._max_message_bytes, max_tools=self._max_tools)))

    def _lost(self, conn: _Conn, why: str) -> None:
        if self._conn is conn and self._status is Status.CONNECTED:
            self._status = Status.LOST
            self._last_error = f"connection to {self.name!r} lost: {why}"
        conn.stop.set()

    async def _stop_conn(self, conn: _Conn, *, cancel: bool = False) -> None:
        """Ask the owner to exit and wait for it, bounded; shielded so closing always finishes."""
        conn.closing = True
        conn.stop.set()
        if cancel or not conn.ready:
            conn.scope.cancel()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(CLOSE_GRACE_S):
                await conn.done.wait()
            if not conn.done.is_set():
                conn.scope.cancel()
                with anyio.move_on_after(CLOSE_GRACE_S):
                    await conn.done.wait()

    async def _retire(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.done.is_set():
            await self._stop_conn(conn)

    async def aclose(self) -> None:
        """Close the connection and end a stdio child (bounded); safe to call twice."""
        conn = self._conn
        if conn is not None and not conn.ready:
            conn.scope.cancel()  # a close must not wait out a hanging connect
        async with self._primitives():
            await self._retire()
            self._status = Status.CLOSED
            self._stderr.delete()

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

    # -- what the server says unasked (toolbench._transports.mcp_subscriptions) -------------
    async def _on_message(self, conn: _Conn, message: Any) -> None:
        _subs.on_notification(self, conn.task_group, conn.client, message)

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

    async def _client(self, tool: ToolId | None) -> Client:
        """The entered SDK client, connecting or reconnecting first when needed."""
        return (await self._session(tool))[1]

    async def _session(
        self, tool: ToolId | None, deadline: float = math.inf, limit: float | None = None
    ) -> tuple[_Conn, Client]:
        """The live connection and its client; a new, lost or failed server is (re)connected.

        A ``failed`` or ``lost`` server is retried on its next call, but not within the retry
        window after a failed attempt (0.5 s, doubling to 30 s): there a call fails fast and
        says when the next attempt is due. The attempt runs on the shared loop, bounded by
        ``connect_timeout``, so a caller whose ``deadline`` passes first gives up waiting
        (nothing was sent) while the attempt goes on for the next call.
        """
        if self._status in _RECONNECTABLE:
            await self._recover(tool, deadline, limit)
        conn = self._conn
        if self._status is not Status.CONNECTED or conn is None or conn.client is None:
            why = self._last_error or "it is not connected"
            raise Unreachable(f"server {self.name!r} is {self._status}: {why}", tool=tool)
        return conn, conn.client

    async def _recover(self, tool: ToolId | None, deadline: float, limit: float | None) -> None:
        attempt = self._attempt
        if attempt is None:
            wait = self._retry_at - anyio.current_time()
            if self._status is not Status.NEW and wait > 0:
                why = self._last_error or "it is not connected"
                raise Unreachable(
                    f"server {self.name!r} is {self._status}: {why}\n(nothing was sent; the "
                    f"next reconnect attempt is in {wait:.1f} s)", tool=tool
                )
            attempt = self._attempt = anyio.Event()
            self._primitives()
            self._attempt_task = _spawn(self._reconnect(attempt),
                                        f"toolbench-reconnect-{self.name}")
        with anyio.move_on_at(deadline):
            await attempt.wait()
        if not attempt.is_set():
            raise Unreachable(
                f"server {self.name!r} is still connecting after the call's timeout of "
                f"{limit:g} s; nothing was sent (the attempt goes on)", tool=tool
            )
        if self._status is not Status.CONNECTED:
            why = self._last_error or f"server {self.name!r} is {self._status}"
            raise Unreachable(why, tool=tool)

    async def _reconnect(self, attempt: anyio.Event) -> None:
        """One (re)connect attempt, in its own task so no caller's timeout can cut it short."""
        try:
            async with self._primitives():
                if self._status not in _RECONNECTABLE:
                    return  # connected by someone else meanwhile, or closed
                was_lost = self._status is Status.LOST
                await self._retire()
                try:
                    await self._open()
                except Unreachable as exc:
                    if was_lost:
                        self._last_error = (f"the connection to {self.name!r} was lost and "
                                            f"reconnecting failed: {exc.detail}")
                except Exception as exc:  # the shared loop must not lose its task group
                    self._status = Status.FAILED
                    self._last_error = (f"reconnecting to {self.name!r} failed: "
                                        f"{describe(exc, self._redact)}")
                    self._note_failure()
        finally:
            self._attempt = None
            self._attempt_task = None
            attempt.set()

    async def list_tools(self, server: str) -> list[ToolSpec]:
        """Every tool, following ``nextCursor`` to the end, never from the SDK's cache.

        Bounded (a server is untrusted input): the whole listing by ``connect_timeout``,
        each page by ``timeout``, the count by ``max_tools`` and the pages by ``MAX_PAGES``,
        and every page by ``max_message_bytes``. Exceeding a bound is ``Unreachable`` (at
        connect, the bench keeps the failed row); a repeated cursor is ``Malformed``.
        """
        self.check_server(server)
        client = await self._client(None)
        specs: list[ToolSpec] = []
        unreadable: list[tuple[str, str]] = []  # tools the SDK's page validation would reject
        as_tasks: set[str] = set()
        cursor: str | None = None
        seen: set[str] = set()
        pages = 0
        with anyio.move_on_after(self._connect_timeout):
            try:
                while pages < MAX_PAGES:
                    with anyio.fail_after(self._timeout):
                        page, skipped = await list_tools_page(client, cursor)
                    pages += 1
                    unreadable.extend(skipped)
                    if len(specs) + len(page.tools) > self._max_tools:
                        raise Unreachable(
                            f"server {self.name!r} offers more than max_tools="
                            f"{self._max_tools:,} tools; discovery stopped after {pages} pages"
                        )
                    specs.extend(_spec(tool) for tool in page.tools)
                    as_tasks.update(tool.name for tool in page.tools if requires_task(tool))
                    cursor = page.next_cursor
                    if cursor is None:
                        self._output_schemas = {
                            s.name: s.output_schema for s in specs if s.output_schema is not None
                        }
                        self._task_tools = frozenset(as_tasks)
                        self.skipped_tools = unreadable
                        return specs
                    if cursor in seen:
                        raise Malformed(f"server {self.name!r} repeated the tools/list cursor "
                                        f"{_html.shorten(cursor, 60)!r}; the list never ends")
                    seen.add(cursor)
            except Exception as exc:
                error = self._mapped(exc, None, self._timeout, "tools/list")
                if oversize(exc) is not None:
                    raise Unreachable(f"discovering the tools of {self.name!r} failed: "
                                      f"{error.detail}") from self._redact.cause(exc)
                raise error from self._redact.cause(exc)
            raise Unreachable(f"server {self.name!r} sent more than {MAX_PAGES:,} pages of "
                              f"tools ({len(specs):,} tools so far); discovery stopped")
        raise Unreachable(
            f"discovering the tools of {self.name!r} took longer than connect_timeout="
            f"{self._connect_timeout:g} s ({len(specs):,} tools in {pages} pages so far)"
        )

    async def call(
        self,
        tool: ToolId,
        arguments: Mapping[str, Any] | None,
        provenance: Provenance | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressFn | None = None,
    ) -> Result:
        """Call one tool; every failure is a ToolError (``help(toolbench.ToolError)``).

        Args:
            tool: ``ToolId(name, tool)`` of this client's server.
            arguments: a JSON object (checked locally first: NaN, lone surrogates and
                non-JSON values are refused before anything is sent).
            provenance: sent along as the request's ``_meta``.
            timeout: seconds for this call (default: the client's ``timeout``).
            progress: called with ``(progress, total, message)`` as the server reports.

        Returns:
            The ``Result``: content blocks, structured content, latency.

        Raises:
            Refused: bad arguments, or the server refused the request.
            Unreachable: not sent (not connected, queued past the timeout, egress).
            TimedOut: sent, no answer in time: it may have run.
            ToolFailed: the tool ran and reported an error.
            Malformed: an answer that breaks the protocol or the output schema.
        """
        args = check_arguments(tool, arguments)
        self.check_server(tool.server, tool)
        limit = self._timeout if timeout is None else seconds(timeout, "timeout")
        meta = _meta(provenance)
        # The shared loop is asyncio: its clock is anyio's, read without anyio's backend
        # lookup (a few µs per read, twice per call).
        loop = asyncio.get_running_loop()
        if loop is not self._bound:
            self._primitives()  # binds a new client; refuses a second live loop
        deadline = loop.time() + limit
        conn, client = await self._session(tool, deadline, limit)
        limiter = await self._slot(deadline, limit, "call", tool)
        ticket = CallTicket(tracked=conn.tracker.active)
        task_ids: list[str] = []  # a tool that runs only as a task: the server's task id
        token = TICKET.set(ticket)
        try:
            started = time.perf_counter()
            try:
                client.session  # noqa: B018 - raises RuntimeError once the client has exited
            except RuntimeError as exc:
                raise Unreachable(
                    f"the connection to {self.name!r} closed before the call was sent", tool=tool
                ) from exc
            try:
                # Our own clock, not the SDK's read timeout: then a REQUEST_TIMEOUT error can
                # only be one the server sent, and a timeout before the hand-over is ours.
                # The call's one timeout scope: asyncio's, about half the cost of
                # anyio.fail_after per call; the bench adds no backstop around it.
                async with asyncio.timeout_at(deadline):
                    if tool.tool in self._task_tools:
                        raw = await call_as_task(client, tool, args, meta, task_ids.append)
                    else:
                        raw = await client.call_tool(
                            tool.tool, args, read_timeout_seconds=None,
                            progress_callback=cast("ProgressFnT | None", progress),
                            meta=cast("RequestParamsMeta | None", meta),
                        )
            except Exception as exc:
                error = await self._failure(exc, tool, limit, "call", ticket, conn)
                if self._requests is not None:  # a failed sampling/elicitation answer says so
                    error = call_error(error, exc, self._requests, self.name, started)
                if task_ids:  # the server's task was cancelled (tasks/cancel) on the way out
                    error.detail = f"{error.detail} (task {task_ids[0]})"
                    error.task_id = task_ids[0]  # type: ignore[attr-defined]  # the record's
                raise error from self._redact.cause(exc)
        finally:
            self._settled(ticket, token, conn, limiter)
        latency = time.perf_counter() - started
        result = self._result(raw, tool, latency)
        if task_ids:
            result.task_id = task_ids[0]
        if raw.is_error:
            # Redact before shortening: a cut must never leave half a secret behind.
            text = _html.shorten(self._redact(result.text or "(no text)"), 500)
            failed = ToolFailed(f"the tool reported an error: {text}", tool=tool, result=result)
            if self._requests is not None:
                raise call_error(failed, None, self._requests, self.name, started)
            raise failed
        return result

    async def request(self, method: str, send: Callable[[Client], Awaitable[T]], *,
                      timeout: float | None = None, offers: str | None = None) -> T:
        """One request other than a tool call (``resources/read``, ``prompts/get``, ...),
        sent as ``send(sdk_client)`` inside the same envelope as :meth:`call`.

        The envelope: connecting on first use, a ``max_concurrent`` slot, one timeout over
        all of it, and the error table, with a ticket that tells a request that never left
        (``did_not_happen``) from one that got no answer (``in_doubt``).

        Args:
            method: the MCP method, for the ticket and the error messages.
            send: makes the request through the entered SDK client.
            timeout: seconds for all of it (default: the client's ``timeout``).
            offers: a server capability (``"resources"``, ``"prompts"``) the request needs;
                a server whose capabilities lack it is refused before anything is sent.

        Raises:
            ToolError: as for :meth:`call`; ``Refused`` when ``offers`` is not offered.
        """
        limit = self._timeout if timeout is None else seconds(timeout, "timeout")
        loop = asyncio.get_running_loop()
        if loop is not self._bound:
            self._primitives()
        deadline = loop.time() + limit
        conn, client = await self._session(None, deadline, limit)
        if offers is not None and getattr(client.server_capabilities, offers, None) is None:
            raise NotOffered(f"server {self.name!r} {NOT_OFFERED} {offers} (its capabilities "
                          "list none); nothing was sent")
        limiter = await self._slot(deadline, limit, method, None)
        ticket = CallTicket(method=method, tracked=conn.tracker.active)
        token = TICKET.set(ticket)
        try:
            try:
                async with asyncio.timeout_at(deadline):
                    return await send(client)
            except Exception as exc:
                error = await self._failure(exc, None, limit, method, ticket, conn)
                raise error from self._redact.cause(exc)
        finally:
            self._settled(ticket, token, conn, limiter)

    async def _slot(self, deadline: float, limit: float, what: str,
                    tool: ToolId | None) -> anyio.CapacityLimiter | None:
        """One of ``max_concurrent`` slots, waited for within the request's timeout: the
        timeout covers connecting, queueing and the request, and what runs out before the
        request reaches the transport did not happen (Unreachable), never in doubt."""
        limiter = self._limiter
        if limiter is not None:
            with anyio.move_on_at(deadline) as queued:
                await limiter.acquire()
            if queued.cancelled_caught:
                raise Unreachable(
                    f"the {what} was not sent: it waited {limit:g} s for one of "
                    f"max_concurrent={self._max_concurrent} slots", tool=tool
                )
        return limiter

    async def _failure(self, exc: Exception, tool: ToolId | None, limit: float, method: str,
                       ticket: CallTicket, conn: _Conn) -> ToolError:
        """A request's exception as the error table's ToolError (an HTTP connect that was
        refused under a sent request is found first: then it never reached the server)."""
        if (self.transport == "http" and ticket.sent and not ticket.error_reply
                and is_transport_failure(exc, ticket, connection_up=False)):
            ticket.refused = await self._refusal(conn, ticket)
        return self._mapped(exc, tool, limit, method, ticket=ticket, conn=conn)

    @staticmethod
    def _settled(ticket: CallTicket, token: Any, conn: _Conn,
                 limiter: anyio.CapacityLimiter | None) -> None:
        TICKET.reset(token)
        conn.tracker.forget(ticket)
        if limiter is not None:
            limiter.release()

    async def _check_output(self, name: str, result: types.CallToolResult) -> None:
        """The SDK's output check, bounded: the tool ran, so a mismatch is ``Malformed``.

        The schemas come from the last discovery (one bounded listing if there was none); a
        tool missing from it is not re-listed on every call, as the SDK would.
        """
        if self._output_schemas is None:  # never listed: discover once, bounded as always
            with contextlib.suppress(ToolError):
                await self.list_tools(self.name)
        schema = (self._output_schemas or {}).get(name)
        if schema is None:
            return
        tool = ToolId(self.name, name) if is_tool_name(name) else None
        if result.structured_content is None and "structured_content" not in (
            result.model_fields_set
        ):
            raise Malformed("the tool declares an output schema but returned no structured "
                            "content", tool=tool)
        validate_output(tool, schema, result.structured_content)

    def _mapped(
        self, exc: Exception, tool: ToolId | None, limit: float, action: str,
        *, ticket: CallTicket | None = None, conn: _Conn | None = None,
    ) -> ToolError:
        too_large = oversize(exc)  # the transport dropped an oversized reply unread
        if too_large is not None:
            if self._conn is not None:
                self._lost(self._conn, too_large)
            return Malformed(f"the {action} failed: {too_large}", tool=tool)
        # Only a transport failure restarts the connection; an error reply never does.
        conn = conn if conn is not None else self._conn
        up = (conn is not None and conn is self._conn and self._status is Status.CONNECTED
              and not conn.done.is_set())
        if self._auth is not None and not isinstance(exc, ToolError):
            denied = self._auth.explain(ticket.request_id if ticket is not None else None,
                                        action, tool, action)
            if denied is not None:
                denied.detail = self._redact(denied.detail)
                return denied
        if not isinstance(exc, ToolError) and conn is not None and is_transport_failure(
            exc, ticket, up
        ):
            self._lost(conn, describe(exc, self._redact))
        return map_call_error(exc, tool, timeout=limit, redact=self._redact, action=action,
                              ticket=ticket, connection_up=up)

    async def _refusal(self, conn: _Conn, ticket: CallTicket) -> BaseException | None:
        """The HTTP connect failure that ended this call's POST, if that is what happened.

        The SDK reports any transport failure as "Connection closed"; the reason is the
        exception the transport ended with, which the owner task records when it exits.
        """
        with anyio.move_on_after(REFUSAL_WAIT_S):
            await conn.done.wait()
        return refused_connect(conn.error, ticket)

    def _result(self, raw: Any, tool: ToolId, latency: float) -> Result:
        try:
            content = [
                # A plain text block (the usual answer) as pydantic would dump it, without
                # pydantic's ~3 µs per block.
                {"type": "text", "text": block.text}
                if type(block) is types.TextContent and block.annotations is None
                and block.meta is None
                else block.model_dump(by_alias=True, exclude_none=True, mode="json")
                for block in raw.content
            ]
            structured = raw.structured_content
        except Exception as exc:
            raise Malformed(f"unreadable tool result: {describe(exc, self._redact)}",
                            tool=tool) from exc
        if structured is not None and not isinstance(structured, dict):
            raise Malformed(
                f"structuredContent is {type(structured).__name__}, not an object", tool=tool
            )
        return Result(content, structured, bool(raw.is_error), latency, tool)

    # -- resources and prompts (the requests live in toolbench._transports.mcp_resources) ---
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


class _Started:
    """``task_status`` for an owner task that outlives its starter (see :func:`_spawn`).

    anyio's ``TaskGroup.start`` does the same handshake, but ties the owner to a task group
    and, when the starter's ``connect_timeout`` runs out first, waits (shielded, unbounded) for
    the owner to wind down: a hung child takes the SDK seconds to stop, and connecting promised
    an answer within ``connect_timeout``. Here the starter awaits ``future``: ``True`` once
    the owner is ready, ``False`` if it ended first.
    """

    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def started(self, value: None = None) -> None:
        if not self.future.done():
            self.future.set_result(True)

    def ended(self) -> None:
        if not self.future.done():
            self.future.set_result(False)


def _spawn(coroutine: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
    """A task that outlives the caller's task: a connection's owner, a reconnect attempt.

    Plain asyncio, not a task group: the caller may be a notebook cell's task, which ends long
    before the connection does. The core needs no loop thread of its own (DESIGN.md,
    "Layers"); whoever opens a client closes it (a Bench does, for its connections). asyncio
    keeps only weak references to tasks, so the caller keeps the one returned.
    """
    return asyncio.get_running_loop().create_task(coroutine, name=name)


def _abandon(conn: _Conn) -> None:
    """Tell a failed attempt's owner to wind down, without waiting for it."""
    conn.closing = True
    conn.stop.set()
    conn.scope.cancel()


def _spec(tool: types.Tool) -> ToolSpec:
    def plain(value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        if hasattr(value, "model_dump"):
            return cast(dict[str, Any], value.model_dump(by_alias=True, exclude_none=True))
        return dict(value)

    return ToolSpec(
        name=tool.name,
        description=tool.description or "",
        input_schema=plain(tool.input_schema) or {"type": "object"},
        output_schema=plain(tool.output_schema),
        annotations=plain(tool.annotations),
        title=tool.title,
        **extras(tool),
    )


def _meta(provenance: Provenance | None) -> dict[str, Any] | None:
    if provenance is None:
        return None
    if not isinstance(provenance, Provenance):
        raise TypeError(f"provenance must be a Provenance, not {type(provenance).__name__}")
    return provenance.as_meta()


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
