"""One connection attempt: its owner task's signals, and how that task is started and let go.

The SDK's ``mcp.Client`` must be entered and exited by the same task, so each connection has
one *owner task* (``toolbench._transports.mcp.lifecycle``). A :class:`Conn` is what that task
and everyone else share about one attempt: its cancel scope, its stop and done events, the
entered client once it is ready, what the transport saw (end of stream, non-protocol output),
the ``Tracker`` of its requests and its 2026 listen stream. The task is spawned with
:func:`spawn` (it outlives the caller's task) and reports through :class:`Started`; a failed
attempt is let go with :func:`abandon`.

A ``Conn`` tells its owner (an :class:`Owner`: the lifecycle) that the connection was lost; it
knows nothing else of it.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc

from toolbench._core import html as _html
from toolbench._transports.mcp.session import SEND_CHECK
from toolbench._transports.mcp.tracking import Tracker
from toolbench._transports.wire.busy import BusyAnswers

if TYPE_CHECKING:
    from mcp import Client

    from toolbench._transports.mcp.methods.subscriptions import Listening

GARBAGE_GRACE_S = 3.0
"""After non-protocol output on stdout, how much longer a starting server gets to answer."""

SETTLING: contextvars.ContextVar[bool] = contextvars.ContextVar("toolbench_settling",
                                                                default=False)
"""True in the tasks of a ``connected`` round: their requests use the connection that is
settling, and never wait on it or reconnect it."""


class Owner(Protocol):
    """Whoever keeps the connection (the lifecycle): told when it is lost."""

    def _lost(self, conn: Conn, why: str) -> None:
        """The connection ended or must restart, for this reason (a no-op once replaced)."""
        ...


class Conn:
    """One connection attempt and its owner task's signals (all touched on the loop only)."""

    def __init__(self, owner: Owner) -> None:
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
        self.first_output = bytearray()  # a stdio server's first bytes on stdout
        self.tracker = Tracker()  # what each call's request went through
        self.busy = BusyAnswers()  # HTTP 429/503 answers, by request id (wire/busy.py)
        self.task: asyncio.Task[None] | None = None  # the owner task
        self.listening: Listening | None = None  # a 2026 subscriptions/listen stream
        self.settling: anyio.Event | None = None  # set once settled (None: nothing to wait for)

    def lose(self, why: str) -> None:
        """Tell the owner this connection must end (an oversized message, say)."""
        self.owner._lost(self, why)

    def on_eof(self) -> None:
        if not self.closing and self.ready:
            self.lose("the server closed the connection")

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


class Started:
    """``task_status`` for an owner task that outlives its starter (see :func:`spawn`).

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


def spawn(coroutine: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
    """A task that outlives the caller's task: a connection's owner, a reconnect attempt.

    Plain asyncio, not a task group: the caller may be a notebook cell's task, which ends long
    before the connection does. The core needs no loop thread of its own (DESIGN.md,
    "Layers"); whoever opens a client closes it (a Bench does, for its connections). asyncio
    keeps only weak references to tasks, so the caller keeps the one returned. It does not
    inherit the caller's ``SEND_CHECK`` or :data:`SETTLING` (a connection's requests of
    its own, a re-list say, are not the caller's request).
    """
    context = contextvars.copy_context()
    context.run(SEND_CHECK.set, None)
    context.run(SETTLING.set, False)
    return asyncio.get_running_loop().create_task(coroutine, name=name, context=context)


def abandon(conn: Conn) -> None:
    """Tell a failed attempt's owner to wind down, without waiting for it."""
    conn.closing = True
    conn.stop.set()
    conn.scope.cancel()
