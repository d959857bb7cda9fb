"""What a request went through on its way to the server and back: tickets and the tracker.

The error mapping (``toolbench._transports.mcp.errors``) goes by *where* a failure came from,
never by its code alone: the SDK reuses JSON-RPC codes for errors it makes itself, and servers
use the same codes freely. So each request carries a :class:`CallTicket`, and a
:class:`Tracker` wrapped around the connection's two streams (:func:`tracked`) fills it in with
what it saw: whether the request was handed to the transport at all, and whether a JSON-RPC
error or a result came back for its id. :class:`ReadWrapper` is the read-stream shape both the
tracker and the connection's own watch (``toolbench._transports.mcp.wire``) build on.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

Stage = Literal["unsent", "sending", "sent", "unwritten"]


@dataclass(eq=False)
class CallTicket:
    """What is known about one request on its way to the server and back.

    ``stage`` is ``unsent`` until the request is handed to the transport, ``sending`` while
    the hand-over is under way (a cancelled hand-over may still have delivered), ``sent``
    once the transport took it, and ``unwritten`` when the transport proved it never wrote a
    byte of it (the hand-over failed, or the transport reported its write failed).
    """

    method: str = "tools/call"
    tracked: bool = False
    stage: Stage = "unsent"
    request_id: str | None = None
    error_reply: bool = False
    answered: bool = False
    refused: BaseException | None = None

    @property
    def sent(self) -> bool:
        """Whether a byte of the request may have reached the server (untracked: assume so)."""
        return not self.tracked or self.stage in ("sending", "sent")


TICKET: contextvars.ContextVar[CallTicket | None] = contextvars.ContextVar(
    "toolbench_call_ticket", default=None
)
"""The ticket of the call running in this task. A ContextVar, because the dispatcher hands the
request to the transport in the caller's own task (and the HTTP transport posts it in a copy
of the caller's context), which is how the stream wrappers below find the call they serve."""


def request_key(request_id: object) -> str:
    """A request id as the tracker keys it: the SDK's dispatcher coerces "7" and 7 alike when
    it correlates a reply, and so do we."""
    return str(request_id)


class Tracker:
    """One connection's view of its requests: which left, and what came back for each."""

    def __init__(self) -> None:
        self.active = False  # set once the streams are wrapped (an in-process server has none)
        self._waiting: dict[str, CallTicket] = {}

    def watch(self, ticket: CallTicket, request_id: object) -> None:
        ticket.request_id = request_key(request_id)
        self._waiting[ticket.request_id] = ticket

    def forget(self, ticket: CallTicket) -> None:
        if ticket.request_id is not None and self._waiting.get(ticket.request_id) is ticket:
            del self._waiting[ticket.request_id]

    def arrived(self, item: object) -> None:
        """Note a reply on the read stream (called for every item the session will see)."""
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCError | JSONRPCResponse):
            ticket = self._waiting.get(request_key(message.id))
            if ticket is not None:
                if isinstance(message, JSONRPCError):
                    ticket.error_reply = True
                else:
                    ticket.answered = True

    def unwritten(self, request_id: object) -> None:
        """A transport's report that it failed to write this request before any byte left.

        For transports that write in a task of their own (stdio): the hand-over succeeded,
        but the pipe write failed, so the request provably never reached the server.
        """
        ticket = self._waiting.get(request_key(request_id))
        if ticket is not None and ticket.stage in ("sending", "sent"):
            ticket.stage = "unwritten"


class ReadWrapper:
    """A transport's read stream with ``receive`` overridden; the rest passes through.

    The SDK's session reads with ``async for`` and closes with ``aclose``; subclasses only
    say what to notice in ``receive``.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        return await self._inner.receive()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> ReadWrapper:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> ReadWrapper:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _TrackedRead(ReadWrapper):
    """The read stream, reporting every reply to the tracker before the session sees it."""

    def __init__(self, inner: Any, tracker: Tracker) -> None:
        super().__init__(inner)
        self._tracker = tracker

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._tracker.arrived(item)
        return item


class _TrackedSend:
    """The write stream, recording whether the current call's request was handed over."""

    def __init__(self, inner: Any, tracker: Tracker) -> None:
        self._inner = inner
        self._tracker = tracker

    async def send(self, item: SessionMessage) -> None:
        ticket = TICKET.get()
        message = getattr(item, "message", None)
        if (ticket is None or ticket.stage != "unsent" or not isinstance(message, JSONRPCRequest)
                or message.method != ticket.method):
            await self._inner.send(item)
            return
        self._tracker.watch(ticket, message.id)
        ticket.stage = "sending"
        try:
            await self._inner.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            ticket.stage = "unwritten"  # the transport was gone: nothing was handed over
            raise
        if ticket.stage == "sending":
            ticket.stage = "sent"

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    async def __aenter__(self) -> _TrackedSend:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def tracked(transport: Any, tracker: Tracker) -> AsyncIterator[tuple[Any, Any]]:
    """Wrap a transport (an async context manager of two streams) in the tracker."""
    async with transport as (read_stream, write_stream):
        tracker.active = True
        yield _TrackedRead(read_stream, tracker), _TrackedSend(write_stream, tracker)

