"""Bounds on what one server may send: message size and discovery size.

A server is untrusted (DESIGN.md, "The trust boundary"). A reply larger than
``max_message_bytes`` is never assembled nor parsed: the transport drops it as it streams
past, answers the waiting request with an error that only this process can produce, and
ends the connection so the next call starts afresh. :func:`oversize` recognises that error
where the SDK hands it back, so the call fails as ``Malformed`` (the server did answer; the
answer cannot be used) rather than as an ordinary JSON-RPC error.

Why a random tag rather than an error code: the SDK reuses JSON-RPC codes for errors it makes
itself, and servers use the -32000 range freely, so a code says nothing about who made the
error. A per-process random tag in the message does: no server can guess it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import httpx2

from toolbench._core.checks import whole
from toolbench._core.redact import leaves
from toolbench._transports.wire.precount import PRECOUNT_MIN_BYTES as PRECOUNT_MIN_BYTES
from toolbench._transports.wire.precount import PageCount
from toolbench._transports.wire.precount import listed_tools_bound as listed_tools_bound

DEFAULT_MAX_MESSAGE_BYTES = 32 * 2**20
"""32 MiB: far above any real tool result, far below what stalls a notebook."""
DEFAULT_MAX_TOOLS = 10_000
"""More tools than any real server offers; a catalog beyond this is a runaway or an attack."""

TAG = f"[toolbench-too-large-{secrets.token_hex(8)}]"
"""Marks the errors this process synthesises for an oversized message (see module doc)."""


def check_max_message_bytes(value: object) -> int:
    """``max_message_bytes`` must be a whole number of bytes, at least 1 KiB."""
    return whole(value, "max_message_bytes", minimum=1024, unit="bytes")


def check_max_tools(value: object) -> int:
    """``max_tools`` must be a positive whole number."""
    return whole(value, "max_tools", unit="tools")


def too_large_message(size: int, limit: int, what: str = "message") -> str:
    """The text of the synthesised error; ``size`` is how much had arrived when we stopped."""
    return (f"{TAG} the server's {what} exceeded max_message_bytes={limit:,} "
            f"({size:,}+ bytes arrived); it was discarded unread and the connection restarted")


def oversize_text(text: str) -> str | None:
    """The detail of a synthesised too-large error message, or ``None`` for any other text."""
    if TAG not in text:
        return None
    return text[text.index(TAG) + len(TAG):].strip()


def oversize(exc: BaseException) -> str | None:
    """The detail of a synthesised too-large error inside ``exc``, or ``None``."""
    for leaf in leaves(exc):
        detail = oversize_text(str(getattr(leaf, "message", "") or leaf))
        if detail is not None:
            return detail
    return None


# -- HTTP -----------------------------------------------------------------------------------
class MessageTooLarge(httpx2.StreamError, httpx2.SSEError):
    """Raised from a capped response body.

    Both bases on purpose: the SDK turns a ``StreamError`` from a JSON body and an
    ``SSEError`` from an event stream into an error for the waiting request, quoting our
    message, so the tag reaches the caller and the call fails as ``Malformed``.
    """


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that raises once one message (JSON body or SSE event) is too big."""

    def __init__(self, inner: Any, limit: int, events: bool,
                 count: PageCount | None = None, ids: EventIds | None = None,
                 on_dropped: Callable[[str], None] | None = None) -> None:
        self._inner = inner
        self._limit = limit
        self._events = events
        self._count = count
        self._ids = ids
        self._on_dropped = on_dropped

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._capped():
                yield chunk
        except MessageTooLarge as exc:
            if self._on_dropped is not None:
                self._on_dropped(oversize_text(str(exc)) or str(exc))
            raise

    async def _capped(self) -> AsyncIterator[bytes]:
        since = 0  # bytes since the message began (the body, or the current SSE event)
        carry = b""
        async for chunk in self._inner:
            if self._events:
                data = carry + chunk
                ends = [data.rfind(sep) + len(sep) for sep in (b"\n\n", b"\r\n\r\n", b"\r\r")
                        if data.rfind(sep) >= 0]
                since = len(data) - max(ends) if ends else since + len(chunk)
                carry = data[-3:]
            else:
                since += len(chunk)
            if since > self._limit:
                what = "event" if self._events else "reply"
                raise MessageTooLarge(too_large_message(since, self._limit, what))
            if self._count is not None:
                await self._count.feed(chunk)
            if self._ids is not None:
                self._ids.feed(chunk)
            yield chunk
        if self._count is not None:
            await self._count.end()

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


class EventIds:
    """Notes the ``id:`` of every event on a ``tools/list`` reply's event stream.

    A stream that ends before its reply is resumed by a GET carrying the last id seen
    (``Last-Event-ID``); the page then arrives on that GET, which says nothing else of what
    it resumes. Knowing the ids, :class:`CappedTransport` counts that page too. ``seen`` is
    shared by one client's streams and keeps the last ``KEEP`` ids.
    """

    KEEP = 256
    _LINE = re.compile(rb"(?:^|(?<=[\r\n]))id: ?([^\r\n]{1,256})[\r\n]")

    def __init__(self, seen: dict[str, None]) -> None:
        self._seen = seen
        self._carry = b""  # the start of an unfinished line (a long one: a marker only)

    def feed(self, chunk: bytes) -> None:
        data = self._carry + chunk
        last = max(data.rfind(b"\n"), data.rfind(b"\r"))
        for match in self._LINE.finditer(data, 0, last + 1):
            self._seen[match.group(1).decode("utf-8", "replace")] = None
            while len(self._seen) > self.KEEP:
                del self._seen[next(iter(self._seen))]
        rest = data[last + 1:]
        self._carry = rest if len(rest) <= 300 else b"\x00"  # too long to be an id line


_SSL_CONTEXTS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def shared_ssl_context() -> ssl.SSLContext:
    """httpx's default verifying context, made once per process (and CA environment).

    Building one loads the whole CA bundle: 0.1-0.25 s on a loaded 2-core box, which every
    HTTP connect would otherwise spend on the shared loop, stalling every other server's
    calls (bench_catalog_page's control case). A context is safe to share between clients.
    """
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _SSL_CONTEXTS.get(key)
    if context is None:
        context = _SSL_CONTEXTS[key] = httpx2.create_ssl_context()
    return context


class _Inflated(httpx2.AsyncByteStream):
    """A gzip or deflate body, inflated a bounded step at a time.

    httpx would inflate it after the transport, out of the caps' sight: 10 KB of gzip can
    hold 10 MB (or gigabytes). Here the caps count the inflated bytes, and a bomb stops at
    the limit. Other codings (br, zstd) are refused unread.
    """

    def __init__(self, inner: Any, coding: str, limit: int) -> None:
        self._inner = inner
        self._coding = coding
        self._step = min(limit + 1, 1 << 20)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import zlib

        wbits = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
                 "deflate": zlib.MAX_WBITS}.get(self._coding)
        if wbits is None:
            raise MessageTooLarge(f"{TAG} the server's reply is compressed as "
                                  f"{self._coding[:40]!r}, which toolbench does not read; it "
                                  "was discarded unread and the connection restarted")
        inflate = zlib.decompressobj(wbits)
        async for chunk in self._inner:
            data = chunk
            while data:
                try:
                    out = inflate.decompress(data, self._step)
                except zlib.error as exc:
                    raise MessageTooLarge(f"{TAG} the server's {self._coding} reply does not "
                                          f"inflate ({exc}); the connection restarted") from None
                data = inflate.unconsumed_tail
                if out:
                    yield out

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


class Guard(Protocol):
    """A transport's watcher (see :class:`CappedTransport`)."""

    def sent(self, request: httpx2.Request) -> None:
        """``request`` is about to be sent."""

    def body(self, request: httpx2.Request, body: Any,
             events: bool) -> httpx2.AsyncByteStream | None:
        """The body to hand on for ``request``'s response, or ``None``: capped as usual."""


class CappedTransport(httpx2.AsyncBaseTransport):
    """An httpx transport whose response bodies stop at ``limit`` bytes per message.

    With ``max_tools``, the reply to a ``tools/list`` POST (streamable HTTP: a JSON body or
    an event stream) is also counted as it arrives (:class:`PageCount`) and refused past
    ``max_tools`` before the SDK parses it, as the stdio reader does; so is a GET that
    resumes such a stream (its ``Last-Event-ID`` names one of its events). Legacy SSE answers on
    its GET stream, where the replies come one event each: a ``guard`` (legacy SSE's
    ``toolbench._transports.wire.sse.EventGuard``) is shown each request before it is sent,
    and may take over a response body (capping it its own way).

    ``on_dropped(detail)`` hears of a message dropped here on streamable HTTP's standalone
    GET stream (server-initiated messages): nobody's request is answered with the error
    there, and the SDK would quietly reopen the stream; told, the connection restarts, as
    it does for an oversized notification on stdio.
    """

    def __init__(self, limit: int, inner: httpx2.AsyncBaseTransport | None = None,
                 max_tools: int | None = None, guard: Guard | None = None,
                 on_dropped: Callable[[str], None] | None = None) -> None:
        self._limit = limit
        self._inner = (inner if inner is not None
                       else httpx2.AsyncHTTPTransport(verify=shared_ssl_context()))
        self._max_tools = max_tools
        self._guard = guard
        self._listing_events: dict[str, None] = {}  # see EventIds
        self._on_dropped = on_dropped

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._guard is not None:
            self._guard.sent(request)
        response = await self._inner.handle_async_request(request)
        headers = response.headers
        body: Any = response.stream
        coding = headers.get("content-encoding", "").strip().lower()
        if coding not in ("", "identity"):  # inflated here, so the caps see what is parsed
            headers = headers.copy()
            del headers["content-encoding"]
            headers.pop("content-length", None)
            body = _Inflated(body, coding, self._limit)
        kind = headers.get("content-type", "").lower()
        events = kind.startswith("text/event-stream")
        own = self._guard.body(request, body, events) if self._guard is not None else None
        if own is not None:
            if "charset" in kind:  # always UTF-8 (the SSE spec), as counted
                headers = headers.copy()
                headers["content-type"] = "text/event-stream"
            return httpx2.Response(response.status_code, headers=headers, stream=own,
                                   extensions=response.extensions, request=request)
        count = ids = None
        resumed = (request.method == "GET"
                   and request.headers.get("last-event-id") in self._listing_events)
        if self._max_tools is not None and (resumed or _lists_tools(request)):
            count = PageCount(self._max_tools, events, _too_many_tools(self._max_tools))
            ids = EventIds(self._listing_events) if events else None
            if events and "charset" in kind:  # always UTF-8 (the SSE spec), as counted
                headers = headers.copy()
                headers["content-type"] = "text/event-stream"
        return httpx2.Response(
            response.status_code,
            headers=headers,
            stream=_CappedStream(body, self._limit, events, count, ids,
                                 self._on_dropped if _standalone(request) else None),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> CappedTransport:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.__aexit__(*exc)


def too_many_tools_message(count: int, limit: int, arrived: int | None = None) -> str:
    """The synthesised error for a ``tools/list`` page that lists more than ``max_tools``.

    ``arrived``: the page was cut off after that many bytes, so ``count`` is a lower bound.
    """
    if arrived is None:
        return (f"{TAG} the server's tools/list reply lists {count:,} tools, more than "
                f"max_tools={limit:,}; it was discarded without being parsed")
    return (f"{TAG} the server's tools/list reply lists more than max_tools={limit:,} tools "
            f"({count:,} in its first {arrived:,} bytes); it was discarded without being "
            f"parsed and the connection restarted")


def _too_many_tools(limit: int) -> Callable[[int, int], BaseException]:
    def refuse(count: int, arrived: int) -> BaseException:
        return MessageTooLarge(too_many_tools_message(count, limit, arrived))
    return refuse


def _standalone(request: httpx2.Request) -> bool:
    """Whether ``request`` opens streamable HTTP's standalone GET stream, whose messages
    answer no request (a GET with ``Last-Event-ID`` may resume a request's own stream: the
    SDK answers that request with the cap's error itself)."""
    return request.method == "GET" and "last-event-id" not in request.headers


def _lists_tools(request: httpx2.Request) -> bool:
    """Whether ``request`` is a ``tools/list`` (its reply is counted before it is parsed)."""
    return listing_id(request) is not None


def listing_id(request: httpx2.Request) -> int | str | None:
    """The id of ``request`` if it is a ``tools/list`` POST, else ``None``."""
    if request.method != "POST":
        return None
    try:
        body = request.content
    except httpx2.RequestNotRead:
        return None
    if b'"tools/list"' not in body:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/list":
        return None
    found = message.get("id")
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None
