"""What a connection's owner task hands the SDK: the transport, watched and capped.

- stdio: toolbench's own reader (``toolbench._transports.wire.stdio``: linear in a line's length,
  capped at ``max_message_bytes``), its stderr into the connection's ``StderrLog``;
- streamable HTTP and SSE: an ``httpx2`` client whose every response body is capped, with
  the connection's headers and sign-in (``toolbench._transports.auth.state``); legacy SSE's
  GET stream capped per event, its ``tools/list`` replies counted
  (``toolbench._transports.wire.sse``);
- in process: the server object itself.

Each stream transport's read side is wrapped (:class:`_Watched`) so the connection attempt
(``toolbench._transports.mcp.attempt.Conn``) hears of end-of-stream, of non-protocol output on
stdout, and of an oversized message our transport dropped (which restarts it). What this
module reads of the client's configuration is declared in :class:`Endpoint`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio
import httpx2
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from toolbench._transports.auth.state import LocalAnswers
from toolbench._transports.mcp.tracking import ReadWrapper
from toolbench._transports.wire.busy import BusyAnswers
from toolbench._transports.wire.limits import CappedTransport, oversize_text
from toolbench._transports.wire.sse import EventGuard, capped_sse_client
from toolbench._transports.wire.stdio import bounded_stdio_client

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    from toolbench._core.redact import Redactor
    from toolbench._transports.auth.state import AuthState
    from toolbench._transports.mcp.attempt import Conn
    from toolbench._transports.mcp.session import TransportName
    from toolbench._transports.wire.stderr import StderrLog

HTTP_TIMEOUT_S = 30.0
"""The HTTP client's connect, write and pool timeouts (the SDK's own default; a call's
``timeout`` is our own clock, so this only bounds the transport's single operations)."""
HTTP_READ_TIMEOUT_S = 300.0
"""The HTTP client's read timeout: an SSE stream may stay quiet this long (the SDK's own
default; its constant lives in a private module, so the value is written here)."""


class Endpoint(Protocol):
    """What a connection's transport is made from: ``McpClient``'s target and bounds."""

    transport: TransportName
    _server: MCPServer | Server[Any] | None
    _argv: list[str]
    _env: dict[str, str]
    _cwd: str | None
    _url: str
    _headers: dict[str, str]
    _auth: AuthState | None
    _stderr: StderrLog
    _redact: Redactor
    _connect_timeout: float
    _max_message_bytes: int
    _max_tools: int


class _Watched(ReadWrapper):
    """Read side of a transport that reports end-of-stream and unreadable stdout lines."""

    def __init__(self, inner: Any, conn: Conn, guard: EventGuard | None = None) -> None:
        super().__init__(inner)
        self._conn = conn
        self._guard = guard

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._conn.on_eof()
            raise
        if isinstance(item, Exception):
            self._conn.on_garbage(item)
        elif isinstance(item, SessionMessage):
            if self._guard is not None:
                self._guard.answered(item.message)
            if isinstance(item.message, types.JSONRPCError):
                # Our transport dropped an oversized message and answered its request: restart.
                detail = oversize_text(item.message.error.message)
                if detail is not None:
                    self._conn.lose(detail)
        return cast("SessionMessage | Exception", item)


@asynccontextmanager
async def _watched(transport: Any, conn: Conn,
                   guard: EventGuard | None = None) -> AsyncIterator[tuple[Any, Any]]:
    async with transport as (read_stream, write_stream):
        yield _Watched(read_stream, conn, guard), write_stream


async def transport_object(mcp: Endpoint, stack: AsyncExitStack, conn: Conn) -> Any:
    """What ``mcp.Client`` is given for this connection attempt (entered by ``stack``)."""
    if mcp._server is not None:
        return mcp._server
    if mcp.transport == "stdio":
        params = StdioServerParameters(
            command=mcp._argv[0], args=mcp._argv[1:], env=mcp._env or None, cwd=mcp._cwd
        )
        # Not the SDK's stdio_client: its reader is quadratic in a line's length and
        # unbounded (see toolbench/_transports/wire/stdio.py); this one is linear and capped.
        return _watched(bounded_stdio_client(params, errlog=mcp._stderr.file(),
                                             max_message_bytes=mcp._max_message_bytes,
                                             on_unwritten=conn.tracker.unwritten,
                                             max_tools=mcp._max_tools,
                                             redact=mcp._redact,
                                             first_output=conn.first_output),
                        conn)
    auth = mcp._auth.http_auth() if mcp._auth is not None else None

    if mcp.transport == "sse":
        guard = EventGuard(mcp._max_message_bytes, mcp._max_tools)

        def factory(headers: dict[str, str] | None = None,
                    timeout: httpx2.Timeout | None = None,
                    auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
            return http_client(mcp, headers, timeout, auth, guard, busy=conn.busy)

        # Not the SDK's sse_client: it caps every event at 1 MiB and answers no one when an
        # event is too large (see toolbench/_transports/wire/sse.py).
        return _watched(
            capped_sse_client(mcp._url, headers=dict(mcp._headers) or None,
                              timeout=mcp._connect_timeout, factory=factory, auth=auth,
                              max_event_size=2 * mcp._max_message_bytes,
                              on_dropped=conn.lose),
            conn, guard,
        )
    http = http_client(mcp, dict(mcp._headers) or None, None, auth, on_dropped=conn.lose,
                       busy=conn.busy)
    await stack.enter_async_context(http)
    return _watched(streamable_http_client(mcp._url, http_client=http,
                                           max_sse_event_size=mcp._max_message_bytes), conn)


def http_client(mcp: Endpoint, headers: dict[str, str] | None = None,
                timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None,
                guard: EventGuard | None = None,
                on_dropped: Callable[[str], None] | None = None,
                busy: BusyAnswers | None = None) -> httpx2.AsyncClient:
    """The SDK's HTTP client, but every response body capped at max_message_bytes, and
    a 429 or 503 remembered for the error mapping (``busy``; the SDK forgets the status)."""
    if timeout is None:
        timeout = httpx2.Timeout(HTTP_TIMEOUT_S, read=HTTP_READ_TIMEOUT_S)
    on_response = [*([mcp._auth.on_response] if mcp._auth is not None else []),
                   *([busy.note] if busy is not None else [])]
    hooks = {"response": on_response} if on_response else None
    return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=hooks,
                              transport=LocalAnswers(CappedTransport(
                                  mcp._max_message_bytes, max_tools=mcp._max_tools, guard=guard,
                                  on_dropped=on_dropped)))
