"""The life of one MCP connection: open, own, serve, settle, lose, close.

The SDK's ``mcp.Client`` is an async context manager full of anyio cancel scopes, which must
be entered and exited by the same task (python-sdk #79, #922). A notebook runs each cell in a
new task, so the client cannot live in the caller's task. Each connection therefore has one
*owner task* on the event loop the client runs on (:meth:`Lifecycle._own`): it enters the
client, reports ready, waits for a stop request, and exits the client itself. Calls run in
other tasks on the same loop and use the entered client, which anyio allows.

``Lifecycle`` is a base class of ``McpClient`` (``toolbench._transports.mcp.client``), which holds
the configuration this module reads. One connection attempt is a ``Conn``
(``toolbench._transports.mcp.attempt``), whose owner task is spawned there. A lost or failed
connection is reconnected by the next request (:meth:`Lifecycle._session`): *when*, and one
attempt at a time, is the connection's ``Recovery`` (``toolbench._transports.mcp.recovery``);
*what* a reconnect does is :meth:`Lifecycle._reconnect`. This class alone starts or stops an
owner task, or changes the connection's status.

Every time a connection becomes ready, first connect and every reconnect alike, the one
``connected`` event fires (``toolbench._transports.mcp.events``): whoever keeps a copy of the
server's lists (the pegboard, the bench's follow layer) lists again on it. The URIs
subscribed to are subscribed again before the reconnect counts as done
(:meth:`Lifecycle._resubscribed`), so the request that reconnected is answered on a
connection whose subscriptions are in force.

**Settling.** A connection that became ready is not used until it has *settled*
(:meth:`Lifecycle._settle`, bounded by ``connect_timeout``): the ``connected`` round (the
re-list) has ended and the subscriptions are in force. The request that reconnected, every
request waiting on that attempt, and any that arrives meanwhile (:meth:`Lifecycle._session`)
wait for it, so each is checked against the listing of the server it is sent to (issue 26:
a pinned tool that changed across a restart). The re-list's own requests run in a context
marked ``SETTLING`` (``toolbench._transports.mcp.attempt``) and pass; they never start a
reconnect of their own. Once a request has its session, the caller's ``SEND_CHECK``
(``toolbench._transports.mcp.session``, the bench's pin check) runs, last, before anything is
sent.
"""

from __future__ import annotations

import asyncio
import logging
import math
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client

from toolbench._core.errors import Unreachable
from toolbench._core.ids import ToolId
from toolbench._core.redact import Redactor, describe
from toolbench._core.version import __version__
from toolbench._transports.auth.state import AuthState
from toolbench._transports.mcp.about import about
from toolbench._transports.mcp.attempt import (
    GARBAGE_GRACE_S,
    SETTLING,
    Conn,
    Started,
    abandon,
    spawn,
)
from toolbench._transports.mcp.compat import default_result_type
from toolbench._transports.mcp.errors import handshake_refused
from toolbench._transports.mcp.events import Events
from toolbench._transports.mcp.methods import subscriptions as _subs
from toolbench._transports.mcp.methods.hints import ResponseCache
from toolbench._transports.mcp.methods.receiver import TaskClient
from toolbench._transports.mcp.not_mcp import not_an_mcp_server
from toolbench._transports.mcp.recovery import Recovery
from toolbench._transports.mcp.session import RECONNECTABLE, SEND_CHECK, Status, TransportName
from toolbench._transports.mcp.tracking import tracked
from toolbench._transports.mcp.wire import transport_object
from toolbench._transports.notifications import Notifications, send_log_level
from toolbench._transports.server_requests import ServerRequests
from toolbench._transports.wire.stderr import StderrLog

if TYPE_CHECKING:
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

logger = logging.getLogger("toolbench._transports.mcp.client")

CLOSE_GRACE_S = 10.0
"""How long closing may take (the SDK alone may spend ~4 s stopping a hung child)."""


class Lifecycle:
    """Opening, owning, settling, losing, reconnecting and closing ``McpClient``'s connection.

    The attributes below are ``McpClient``'s (set in its ``__init__``); the methods here are
    the only ones that start or stop an owner task or change ``_status``. When to reconnect
    is ``_recovery``'s (``toolbench._transports.mcp.recovery``).
    """

    name: str
    transport: TransportName
    _requests: ServerRequests | None
    _notifications: Notifications | None
    _protocol_mode: str
    _timeout: float
    _connect_timeout: float
    _max_concurrent: int | None
    _max_message_bytes: int
    _max_tools: int
    _events: Events
    responses: ResponseCache
    _subscribed: set[str]
    _env: dict[str, str]
    _headers: dict[str, str]
    _cwd: str | None
    _redact: Redactor
    _argv: list[str]
    _url: str
    _server: MCPServer | Server[Any] | None
    _auth: AuthState | None
    _status: Status
    _last_error: str | None
    _server_info: dict[str, Any]
    _stderr: StderrLog
    _conn: Conn | None
    _lock: anyio.Lock | None
    _limiter: anyio.CapacityLimiter | None
    _recovery: Recovery
    _bound: asyncio.AbstractEventLoop | None
    connects: int
    """How many times a connection became ready: 1 after the first connect, +1 per reconnect."""

    @property
    def status(self) -> Status:
        """Where the connection stands: ``new``, ``connected``, ``lost``, ``failed``, ``closed``."""
        return self._status

    @property
    def last_error(self) -> str | None:
        """Why the connection is not up (None once it is)."""
        return self._last_error

    if TYPE_CHECKING:  # McpClient's own, and the call path's (toolbench._transports.mcp.calls)
        @property
        def target_text(self) -> str: ...

        async def _check_output(self, name: str, result: types.CallToolResult) -> None: ...

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
        conn = Conn(self)
        self._conn = conn
        if self._auth is not None:
            self._auth.resume()  # a close stopped its sign-ins (#37)
        mark = self._stderr.mark()
        started = Started()
        try:
            with anyio.fail_after(self._connect_timeout) as conn.starting:
                conn.task = spawn(self._own(conn, task_status=started),
                                  f"toolbench-mcp-{self.name}")
                ready = await started.future
            timed_out = False
        except TimeoutError:
            ready, timed_out = False, True
        except BaseException:
            abandon(conn)
            self._status = Status.FAILED
            self._recovery.failed()
            raise
        finally:
            conn.starting = None
        if ready:
            self._status = Status.CONNECTED
            self._last_error = None
            self._recovery.succeeded()
            await self._settle(conn)
            return
        # Not awaited: stopping a hung child takes the SDK seconds, and the caller was promised
        # an answer within connect_timeout. _retire (next connect, or close) waits for it.
        abandon(conn)
        if timed_out and conn.garbage is not None:
            reason = f"no protocol answer within {GARBAGE_GRACE_S:g} s of unreadable output"
        elif timed_out:
            reason = f"no answer within connect_timeout={self._connect_timeout:g} s"
            if self._auth is not None and (held := self._auth.stalled()) is not None:
                reason += f": its sign-in held the handshake back ({held})"
        elif self._auth is not None and (
            denied := self._auth.explain(None, None, None, "handshake")) is not None:
            reason = self._redact(denied.detail)
        elif conn.error is not None:
            reason = describe(conn.error, self._redact)
        else:
            reason = "the connection ended during the handshake"
        reason = not_an_mcp_server(conn, reason, self._redact)  # cat, a banner, a usage text
        message = f"server {self.name!r} failed to start ({self.transport} {self.target_text}): "
        message += reason
        tail = self._redact(self._stderr.tail(20, since=mark))
        if tail:
            message += f"\n--- stderr (last lines) ---\n{tail}"
        self._status = Status.FAILED
        self._last_error = message
        self._recovery.failed()
        raise Unreachable(message) from conn.error

    async def _settle(self, conn: Conn) -> None:
        """Wait, within ``connect_timeout``, until a connection that just became ready has
        been listed again (the ``connected`` round) and subscribed again; meanwhile other
        requests wait in :meth:`_session`. The work goes on past the bound."""
        settling = conn.settling = anyio.Event()
        try:
            waits = [done for done in (self._on_ready(conn), self._resubscribed(conn))
                     if done is not None]
            with anyio.move_on_after(self._connect_timeout):
                for done in waits:
                    await done.wait()
        finally:
            conn.settling = None
            settling.set()

    def _on_ready(self, conn: Conn) -> anyio.Event | None:
        """A connection is up (the first time, or again): count it, ask for the log level
        (handshake era), and fire the one ``connected`` event, whose listeners (the pegboard,
        the bench's follow layer) list the server again; returns the event set when they
        have. Their tasks run marked ``SETTLING``, without the caller's ``SEND_CHECK``."""
        self.connects += 1
        group, client = conn.task_group, conn.client
        if group is None or client is None:
            return None
        if self._notifications is not None and self._notifications.log_level is not None:
            group.start_soon(send_log_level, client, self._notifications.log_level,
                             self._timeout, self.name)
        settling, check = SETTLING.set(True), SEND_CHECK.set(None)
        try:  # the round's tasks copy this context when they start
            return self._events.fire("connected", group)
        finally:
            SEND_CHECK.reset(check)
            SETTLING.reset(settling)

    def _resubscribed(self, conn: Conn) -> anyio.Event | None:
        """After a reconnect, subscribe every URI subscribed to again; returns the event set
        once they are, which :meth:`_settle` waits for (bounded), so the request that
        reconnected, and every one after it, is answered on a connection whose subscriptions
        are in force (else an update it causes is lost).

        2026-07-28: the connection's ``subscriptions/listen`` stream names them all; wait for
        its acknowledgment. Handshake era: ``resources/subscribe`` each again. A URI refused
        is logged, never raised.
        """
        group, client = conn.task_group, conn.client
        if not self._subscribed or group is None or client is None:
            return None
        if conn.listening is not None:
            return conn.listening.changed
        done = anyio.Event()

        async def again() -> None:
            try:
                await _subs.resubscribe(self, client)
            finally:
                done.set()

        group.start_soon(again)
        return done

    async def _own(self, conn: Conn, *, task_status: Started) -> None:
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

    async def _enter(self, stack: AsyncExitStack, conn: Conn, mode: str, *,
                     last: bool) -> Client | None:
        """Enter the SDK client in ``mode``; None when the server refused that handshake
        (an error reply to ``initialize``) and another mode is left to try."""
        target = await transport_object(self, stack, conn)
        if self._server is None:  # a stream transport: watch what leaves and returns
            target = tracked(target, conn.tracker)
        client = TaskClient(  # advertises and serves client tasks (issue 37, item 15)
            target,
            mode=mode,
            cache=None,
            message_handler=lambda message: self._on_message(conn, message),
            client_info=types.Implementation(name="toolbench", version=__version__),
            **(self._requests.callbacks(self.name) if self._requests is not None else {}),
            **(self._notifications.callbacks(self.name) if self._notifications is not None else {}),
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

    async def _serve(self, conn: Conn, client: Client, task_status: Started) -> None:
        """Hold the entered client open for calls until the connection is asked to stop."""
        # The SDK re-checks structured content with stock jsonschema (Python's backtracking
        # ``re``, no size limits) and re-lists tools it has not seen; a hostile output schema
        # could stall the shared loop there. Our bounded check replaces it on this session
        # (the SDK has no public switch).
        client.session.validate_tool_result = self._check_output  # type: ignore[method-assign]
        default_result_type(client, self.responses.received)
        self._server_info = about(client)
        async with anyio.create_task_group() as task_group:
            conn.task_group = task_group
            conn.client = client
            conn.ready = True
            if _subs.is_modern(client):  # list changes and updates come on one stream
                conn.listening = _subs.Listening(self, client)
                if conn.listening.wanted():  # it names every URI subscribed to
                    conn.listening.start(task_group)
            task_status.started()
            await conn.stop.wait()
            task_group.cancel_scope.cancel()

    def _lost(self, conn: Conn, why: str) -> None:
        if self._conn is conn and self._status is Status.CONNECTED:
            self._status = Status.LOST
            self._last_error = f"connection to {self.name!r} lost: {why}"
        conn.stop.set()

    async def _stop_conn(self, conn: Conn, *, cancel: bool = False) -> None:
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
        if conn is not None and (not conn.ready or conn.settling is not None):
            conn.scope.cancel()  # a close must not wait out a hanging connect or re-list
        if self._auth is not None:
            self._auth.stop()  # nor a sign-in that waits for a person (#37)
        async with self._primitives():
            await self._retire()
            self._status = Status.CLOSED
            self._stderr.delete()

    async def _on_message(self, conn: Conn, message: Any) -> None:
        _subs.on_notification(self, conn.task_group, conn.client, message)

    def _listening(self) -> tuple[_subs.Listening, anyio.abc.TaskGroup] | None:
        """The live connection's 2026 listen stream and its task group (a (un)subscribe
        re-opens it); None without one."""
        conn = self._conn
        if conn is None or conn.listening is None or conn.task_group is None:
            return None
        return conn.listening, conn.task_group

    async def _client(self, tool: ToolId | None) -> Client:
        """The entered SDK client, connecting or reconnecting first when needed."""
        return (await self._session(tool))[1]

    async def _session(
        self, tool: ToolId | None, deadline: float = math.inf, limit: float | None = None
    ) -> tuple[Conn, Client]:
        """The live connection and its client; a new, lost or failed server is (re)connected.

        A ``failed`` or ``lost`` server is retried on its next call, but not within the retry
        window after a failed attempt (0.5 s, doubling to 30 s): there a call fails fast and
        says when the next attempt is due. The attempt runs on the shared loop, bounded by
        ``connect_timeout``, so a caller whose ``deadline`` passes first gives up waiting
        (nothing was sent) while the attempt goes on for the next call.

        A connection still settling (see the module docstring) is waited for, within the
        same ``deadline``; then the caller's ``SEND_CHECK`` runs.
        """
        if self._status in RECONNECTABLE:
            if SETTLING.get():  # the re-list of a connection lost again: no reconnect here
                raise Unreachable(f"server {self.name!r} was lost again while it was being "
                                  "listed after connecting; nothing was sent", tool=tool)
            await self._recovery.recover(tool, deadline, limit)
        conn = self._conn
        if conn is not None and conn.settling is not None and not SETTLING.get():
            await self._wait_settled(conn.settling, tool, deadline, limit)
            conn = self._conn
        if self._status is not Status.CONNECTED:
            why = self._last_error or "it is not connected"
            raise Unreachable(f"server {self.name!r} is {self._status}: {why}", tool=tool)
        if conn is None or conn.client is None:  # still marked connected while it closes
            raise Unreachable(f"server {self.name!r} has no live connection: it closed while "
                              "this request waited; nothing was sent", tool=tool)
        check = SEND_CHECK.get()
        if check is not None:
            check()
        return conn, conn.client

    async def _wait_settled(self, settling: anyio.Event, tool: ToolId | None, deadline: float,
                       limit: float | None) -> None:
        """Wait for a connection to settle (it does within ``connect_timeout``), or until
        the request's ``deadline``: then nothing was sent."""
        with anyio.move_on_at(deadline):
            await settling.wait()
        if not settling.is_set():
            raise Unreachable(
                f"server {self.name!r} was still being listed after connecting when the "
                f"call's timeout of {limit or 0:g} s ran out; nothing was sent", tool=tool)

    async def _reconnect(self) -> None:
        """One (re)connect attempt: retire what is left of the old connection, open a new one,
        and say why it failed. The recovery runs it in a task of its own, so no caller's
        timeout can cut it short."""
        async with self._primitives():
            if self._status not in RECONNECTABLE:
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
                self._recovery.failed()
