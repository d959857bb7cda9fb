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

import secrets
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from toolbench._core.checks import whole
from toolbench._transports.mcp_errors import leaves

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

    def __init__(self, inner: Any, limit: int, events: bool) -> None:
        self._inner = inner
        self._limit = limit
        self._events = events

    async def __aiter__(self) -> AsyncIterator[bytes]:
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
            yield chunk

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


class CappedTransport(httpx2.AsyncBaseTransport):
    """An httpx transport whose response bodies stop at ``limit`` bytes per message."""

    def __init__(self, limit: int, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self._limit = limit
        self._inner = inner if inner is not None else httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").lower()
        events = kind.startswith("text/event-stream")
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self._limit, events),
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


# -- counting a tools/list page before it is parsed ------------------------------------------
PRECOUNT_MIN_BYTES = 256 * 1024
"""A smaller page cannot hold enough tools to matter: it is parsed as it is."""
_KINDS = bytes(1 if b == ord("{") else 2 if b == ord("[") else 3 if b == ord("}")
               else 4 if b == ord("]") else 5 if b == ord('"') else 6 if b == ord("\\")
               else 0 for b in range(256))
_OBJECT, _ARRAY, _QUOTE, _BACKSLASH = 1, 2, 5, 6


PRECOUNT_CHUNK = 1 << 20
"""Bytes counted at a time: the counter's memory stays about this big whatever the page."""


def listed_tools_bound(raw: bytes) -> int:
    """At least as many as the tools in a ``tools/list`` reply, counted without parsing it.

    Vectorised (numpy, no Python step per byte or token; numpy releases the GIL, so this
    can run in a worker thread without stalling the event loop), one chunk at a time: find
    the quotes that are not escaped, keep the brackets outside strings, track the depth,
    and count the objects directly inside an array at the depth of ``result.tools``. Every
    tool is such an object, so this never undercounts; only objects a server puts in other
    arrays at that depth (none in a valid reply) could make it overcount, and that server
    only fails its own discovery. Linear time; memory about ``PRECOUNT_CHUNK`` bytes times
    a small factor, not the page's.
    """
    counter = _Counter()
    view = memoryview(raw)
    for at in range(0, len(raw), PRECOUNT_CHUNK):
        counter.feed(view[at:at + PRECOUNT_CHUNK])
    return counter.count


class _Counter:
    """The state carried from one chunk to the next."""

    def __init__(self) -> None:
        self.count = 0
        self.depth = 0
        self.in_string = False
        self.slashes = 0  # backslashes ending the previous chunk
        self.parent_is_array = False  # the last opener that brought the depth to 3

    def feed(self, chunk: memoryview) -> None:
        import numpy as np

        data = np.frombuffer(chunk, dtype=np.uint8)
        kinds_all = np.frombuffer(_KINDS, dtype=np.uint8)[data]
        where = np.flatnonzero(kinds_all)
        kinds = kinds_all[where]
        del kinds_all
        is_quote = kinds == _QUOTE
        quote_at = where[is_quote]
        slash_at = where[kinds == _BACKSLASH]
        # A quote is escaped when an odd run of backslashes comes right before it (a run may
        # begin in the previous chunk).
        real = np.ones(len(quote_at), dtype=bool)
        carried = self.slashes
        if len(quote_at) and (len(slash_at) or carried):
            suspects = np.flatnonzero(
                ((quote_at > 0) & (data[np.maximum(quote_at - 1, 0)] == _BACKSLASH_BYTE))
                | ((quote_at == 0) & (carried > 0)))
            if len(suspects):
                q = quote_at[suspects]
                run = _run_lengths(slash_at, q, carried)
                real[suspects] = run % 2 == 0
        ends = _run_lengths(slash_at, np.array([len(data)]), carried)[0]
        self.slashes = int(ends) if len(data) and data[-1] == _BACKSLASH_BYTE else 0
        flags = np.zeros(len(kinds), dtype=np.int8)
        flags[np.flatnonzero(is_quote)[real]] = 1
        parity = np.cumsum(flags, dtype=np.int32) + int(self.in_string)
        self.in_string = bool(parity[-1] & 1) if len(parity) else self.in_string
        codes = kinds[((parity & 1) == 0) & (kinds >= 1) & (kinds <= 4)]
        if not len(codes):
            return
        opens = codes <= 2
        depth = np.cumsum(np.where(opens, 1, -1).astype(np.int32), dtype=np.int32) + self.depth
        self.depth = int(depth[-1])
        # {"result": {"tools": [ {tool}, ... ]}}: a tool's "{" brings the depth to 4, and the
        # container it opens in is the last opener that brought the depth to 3.
        at3 = np.flatnonzero(opens & (depth == 3))
        tools = np.flatnonzero((codes == _OBJECT) & (depth == 4))
        if len(tools):
            parent = np.searchsorted(at3, tools, side="right") - 1
            inside = parent >= 0
            self.count += int(np.count_nonzero(codes[at3[parent[inside]]] == _ARRAY))
            if self.parent_is_array:  # tools before this chunk's first opener at depth 3
                self.count += int(np.count_nonzero(~inside))
        if len(at3):
            self.parent_is_array = bool(codes[at3[-1]] == _ARRAY)


_BACKSLASH_BYTE = ord("\\")


def _run_lengths(slash_at: Any, before: Any, carried: int) -> Any:
    """For each position in ``before``, how many backslashes come right before it."""
    import numpy as np

    if not len(slash_at):
        return np.where(before == 0, carried, 0)
    starts = slash_at[np.concatenate(([True], np.diff(slash_at) != 1))]
    stops = np.concatenate((slash_at[np.flatnonzero(np.diff(slash_at) != 1)],
                            slash_at[-1:])) + 1  # one past each run
    run = np.searchsorted(starts, before - 1, side="right") - 1
    found = (run >= 0) & (stops[np.maximum(run, 0)] == before)
    length = np.where(found, before - starts[np.maximum(run, 0)], 0)
    joined = (np.where(found, starts[np.maximum(run, 0)], before) == 0)
    return length + np.where(joined, carried, 0)


def too_many_tools_message(count: int, limit: int) -> str:
    """The synthesised error for a ``tools/list`` page that lists more than ``max_tools``."""
    return (f"{TAG} the server's tools/list reply lists {count:,} tools, more than "
            f"max_tools={limit:,}; it was discarded without being parsed")
