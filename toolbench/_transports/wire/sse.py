"""Legacy SSE (HTTP+SSE, 2024-11-05), bounded like the other transports.

Why not the SDK's ``sse_client`` as it is: it reads the GET stream with httpx's own 1 MiB
limit per event, whatever ``max_message_bytes`` says (a 2 MiB tool result failed), and an
error on that stream ends its reader without answering anyone, so the waiting call learnt
only that the connection closed (``TimedOut``, not the ``Malformed`` DESIGN.md's trust
boundary gives an oversized message). And every reply arrives on that one GET stream, so
the ``tools/list`` page could not be told from the rest and was parsed uncounted.

Here (:class:`EventGuard`, hooked into ``CappedTransport``) the GET stream is split into
events as it arrives. An event over ``max_message_bytes``, or one that answers a waiting
``tools/list`` and lists more than ``max_tools`` tools (counted as it streams, before it is
parsed), is dropped unread; the request it answered, its id read from the event's first or
last bytes (``toolbench._transports.wire.sniff``), gets the synthesised too-large error (so
the call fails as ``Malformed``, or discovery as ``Unreachable``), and the stream ends, so
the connection restarts, as on stdio. An oversized event that answers nothing we can tell
(a notification) restarts the connection at once, naming the cap (the calls in flight are
``TimedOut``: nobody knows what became of them). :func:`capped_sse_client` is the SDK's
client with that reader.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urljoin, urlparse

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskStatus
from mcp.shared._context_streams import create_context_streams
from mcp.shared._httpx_utils import request_within_origin, sse_within_origin
from mcp.shared.message import SessionMessage

from toolbench._transports.wire.limits import (
    MessageTooLarge,
    listing_id,
    too_large_message,
    too_many_tools_message,
)
from toolbench._transports.wire.precount import PageCount
from toolbench._transports.wire.sniff import sniff_head, sniff_tail

logger = logging.getLogger(__name__)

SNIFF = 4_096
"""How much of an event's start and end is kept to find the id of a dropped one."""
DRAIN_FACTOR = 4
"""A dropped event is read on (to its end, for an id written last) up to this many times
``max_message_bytes`` in all; past that the connection restarts without knowing its id."""
_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
"""A blank line: the end of an event (the forms ``_CappedStream`` knows)."""
_DATA = re.compile(rb"(?:^|[\r\n])data: ?([^\r\n]*)")
_NOTHING = object()
"""An event whose start shows it is not a waiting ``tools/list``'s page: not counted."""

RequestId = int | str


class EventDropped(MessageTooLarge):
    """An event on legacy SSE's GET stream was dropped; ``target``: the request it answered."""

    def __init__(self, text: str, target: RequestId | None) -> None:
        super().__init__(text)
        self.text = text
        self.target = target


class _Over(Exception):
    """The current event must be dropped (args: the error text, whether it is a page)."""


class EventGuard:
    """One legacy SSE connection's bounds: its POSTs noted, its GET stream capped per event.

    ``listing`` holds the ids of the ``tools/list`` requests sent and not yet answered; it is
    filled before a POST leaves (the reply can come on the GET stream before the POST's own
    ``202``) and emptied by :meth:`answered` as the session receives replies.
    """

    def __init__(self, limit: int, max_tools: int | None) -> None:
        self.limit = limit
        self.max_tools = max_tools
        self.listing: set[RequestId] = set()

    def sent(self, request: httpx2.Request) -> None:
        found = listing_id(request)
        if found is not None and self.max_tools is not None:
            self.listing.add(found)

    def body(self, request: httpx2.Request, body: Any,
             events: bool) -> httpx2.AsyncByteStream | None:
        if request.method == "GET" and events:
            return _Events(body, self)
        return None

    def answered(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.listing.discard(message.id)  # type: ignore[arg-type]


def _data(raw: bytes) -> bytes:
    """The data of an event's first bytes: its first ``data:`` line (what a sniff reads)."""
    match = _DATA.search(raw)
    return match.group(1) if match is not None else b""


class _Events(httpx2.AsyncByteStream):
    """Legacy SSE's GET stream, split into events as it streams past (see module doc)."""

    def __init__(self, inner: Any, guard: EventGuard) -> None:
        self._inner = inner
        self._guard = guard
        self._start()

    def _start(self) -> None:
        self._size = 0
        self._head = b""
        self._tail = b""
        self._page: Any = None  # None: not decided yet; _NOTHING; or a PageCount
        self._held: list[bytes] = []  # the event's bytes while undecided (a few KiB)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        carry = b""
        stream = aiter(self._inner)
        async for chunk in stream:
            data = carry + chunk
            done = 0  # bytes of ``chunk`` that belong to events already checked
            try:
                for match in _END.finditer(data):
                    if match.end() <= len(carry):
                        continue  # found in the previous chunk
                    end = match.end() - len(carry)
                    await self._piece(chunk[done:end])
                    await self._event_end()
                    done = end
                await self._piece(chunk[done:])
            except _Over as over:
                if done:
                    yield chunk[:done]  # the whole events before the dropped one
                text, page = over.args
                raise EventDropped(text, await self._target(stream, chunk[done:], page)) \
                    from None
            carry = data[-3:]
            yield chunk
        self._start()

    async def _piece(self, piece: bytes) -> None:
        if not piece:
            return
        guard = self._guard
        self._size += len(piece)
        if len(self._head) < SNIFF:
            self._head += piece[:SNIFF - len(self._head)]
        self._tail = (self._tail + piece[-SNIFF:])[-SNIFF:]
        if self._size > guard.limit:
            raise _Over(too_large_message(self._size, guard.limit, "event"), False)
        if self._page is _NOTHING or guard.max_tools is None:
            return
        if self._page is None:
            if not guard.listing and not self._held:
                # No tools/list was sent when it began, so it answers none (its request is
                # noted before it leaves): not counted.
                self._page = _NOTHING
                return
            self._held.append(piece)
            if self._size < SNIFF:
                return
            fields, _ = sniff_head(_data(self._head))
            if "method" in fields or fields.get("id", next(iter(guard.listing), None)) \
                    not in guard.listing:
                self._page, self._held = _NOTHING, []
                return
            self._page = PageCount(guard.max_tools, True, self._refuse)
            held, self._held = self._held, []
            for part in held:
                await self._page.feed(part)
            return
        await self._page.feed(piece)

    def _refuse(self, count: int, arrived: int) -> BaseException:
        assert self._guard.max_tools is not None
        return _Over(too_many_tools_message(count, self._guard.max_tools, arrived), True)

    async def _event_end(self) -> None:
        if isinstance(self._page, PageCount):
            await self._page.end()
        self._start()

    async def _target(self, stream: AsyncIterator[bytes], rest: bytes,
                      page: bool) -> RequestId | None:
        """The id of the request the dropped event answered, if it can be told.

        From its first bytes; for a page with one ``tools/list`` waiting, that one; else
        from its last bytes, reading on to its end (unkept) within ``DRAIN_FACTOR`` times
        the cap."""
        guard = self._guard
        fields, _ = sniff_head(_data(self._head))
        if "method" in fields:
            return None
        found = fields.get("id")
        if found is None and page and len(guard.listing) == 1:
            found = next(iter(guard.listing))
        if found is None:
            found = await self._id_at_end(stream, rest)
        if isinstance(found, bool) or not isinstance(found, int | str):
            return None
        guard.listing.discard(found)
        return found

    async def _id_at_end(self, stream: AsyncIterator[bytes], rest: bytes) -> Any:
        tail, arrived = self._tail, self._size
        carry = b""
        chunk = rest
        while True:
            data = carry + chunk
            match = _END.search(data)
            if match is not None:
                tail = (tail + data[:match.start()])[-SNIFF:]
                break
            tail = (tail + chunk[-SNIFF:])[-SNIFF:]
            carry = data[-3:]
            if arrived > DRAIN_FACTOR * self._guard.limit:
                return None
            try:
                chunk = await anext(stream)
            except StopAsyncIteration:
                break
            arrived += len(chunk)
        line = tail.rstrip().rsplit(b"\n", 1)[-1].rsplit(b"\r", 1)[-1]
        if line.startswith(b"data:"):
            line = line[5:]
        fields = sniff_tail(line)
        return None if "method" in fields else fields.get("id")

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


@asynccontextmanager
async def capped_sse_client(
    url: str, *, factory: Callable[..., httpx2.AsyncClient], headers: dict[str, str] | None,
    timeout: float, auth: httpx2.Auth | None, max_event_size: int,
    on_dropped: Callable[[str], None],
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's ``sse_client``, but an :class:`EventDropped` answers its request.

    ``factory`` makes the HTTP client, whose transport carries this connection's
    :class:`EventGuard`; ``max_event_size`` only backs the guard up (httpx's own count,
    a little smaller than the guard's). ``on_dropped(detail)`` is told of a dropped event
    that answered nothing we can tell, so the connection restarts at once.
    """
    client = factory(headers=headers, auth=auth, timeout=httpx2.Timeout(timeout, read=300.0))
    async with client, sse_within_origin(client, url,
                                         max_event_size=max_event_size) as event_source:
        event_source.response.raise_for_status()
        read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, write_reader = create_context_streams[SessionMessage](0)

        async def sse_reader(task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED
                             ) -> None:
            try:
                async for sse in event_source:
                    if sse.event == "endpoint":
                        endpoint = urljoin(url, sse.data)
                        if (urlparse(endpoint)[:2] != urlparse(url)[:2]):
                            raise ValueError("Endpoint origin does not match connection "
                                             f"origin: {endpoint}")
                        task_status.started(endpoint)
                    elif sse.event == "message" and sse.data:
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(
                                sse.data, by_name=False)
                        except Exception as exc:
                            await read_writer.send(exc)
                            continue
                        await read_writer.send(SessionMessage(message))
            except EventDropped as dropped:
                logger.info("dropped an event from the server: %s", dropped.text)
                if dropped.target is None:
                    on_dropped(dropped.text)
                else:
                    error = types.ErrorData(code=types.INTERNAL_ERROR, message=dropped.text)
                    await read_writer.send(SessionMessage(types.JSONRPCError(
                        jsonrpc="2.0", id=dropped.target, error=error)))
            except httpx2.SSEError:
                logger.debug("SSE stream error", exc_info=True)
                raise
            except Exception as exc:
                logger.debug("SSE reader error", exc_info=True)
                await read_writer.send(exc)
            finally:
                await read_writer.aclose()

        async def post_writer(endpoint: str) -> None:
            async def send(message: SessionMessage) -> None:
                response = await request_within_origin(
                    client, "POST", endpoint,
                    json=message.message.model_dump(by_alias=True, mode="json",
                                                    exclude_unset=True))
                response.raise_for_status()

            try:
                async with write_reader, write_stream:
                    async for message in write_reader:
                        context = write_reader.last_context
                        if context is not None:
                            async with anyio.create_task_group() as tg:
                                context.run(tg.start_soon, send, message)
                        else:
                            await send(message)
            except Exception:
                logger.debug("SSE post writer error", exc_info=True)

        async with read_writer, read_stream, write_stream, write_reader, \
                anyio.create_task_group() as tg:
            endpoint = await tg.start(sse_reader)
            tg.start_soon(post_writer, endpoint)
            yield read_stream, write_stream
            tg.cancel_scope.cancel()
