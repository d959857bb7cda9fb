"""Counting the tools of a ``tools/list`` reply before anything parses it.

Parsing and validating a page of 100,000 tools costs the SDK seconds of the shared loop and
hundreds of megabytes (issue 27, item 5), so ``max_tools`` is checked on the raw bytes first:
:func:`listed_tools_bound` for a whole stdio line, :class:`PageCount` for an HTTP reply as it
streams in (a JSON body, or the ``data:`` lines of an event stream). A page over the cap is
refused before the SDK sees its end, so it is never parsed; the rest pass through untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import anyio.to_thread

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
    counter = ToolCounter()
    view = memoryview(raw)
    for at in range(0, len(raw), PRECOUNT_CHUNK):
        counter.feed(view[at:at + PRECOUNT_CHUNK])
    return counter.count


class ToolCounter:
    """Counts the tools of one reply fed in pieces; the state carried from one to the next."""

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


_EOL = re.compile(rb"\r\n|\r|\n")
"""An event stream's line ends (as httpx2's decoder splits them)."""
_DATA = b"data:"


class PageCount:
    """Counts the tools of a ``tools/list`` reply while its bytes stream past.

    Feed every chunk before handing it on, and call :meth:`end` before the stream ends: the
    SDK parses a JSON body at its end and an event at the blank line that ends it, so a reply
    over ``limit`` is refused (``refuse(count, size)`` is raised) before it is parsed, and
    as early as its first megabytes. With ``events``, only the ``data:`` lines count (an
    ``id:`` or comment line cannot hide tools from the count), and each event is counted on
    its own. Bytes below ``PRECOUNT_MIN_BYTES`` per message are never counted; above that the
    counting runs in a worker thread, ``PRECOUNT_CHUNK`` bytes at a time, so the loop is
    held for microseconds per chunk and the memory is a chunk's, not the page's.
    """

    def __init__(self, limit: int, events: bool,
                 refuse: Callable[[int, int], BaseException]) -> None:
        self._limit = limit
        self._events = events
        self._refuse = refuse
        self._batch: list[bytes] = []
        self._batch_size = 0
        self._size = 0  # data bytes of the current message
        self._counter: ToolCounter | None = None
        # the event stream's line state
        self._after_cr = False
        self._prefix = b""  # the start of the current line, while it may still be "data:"
        self._kind: bool | None = None  # the current line is a data line; None: not yet known
        self._data_lines = 0  # in the current event (the SDK joins them with newlines)

    async def feed(self, chunk: bytes) -> None:
        """Count ``chunk``; raises the refusal once the message lists more than ``limit``."""
        if not self._events:
            await self._data(chunk)
            return
        for piece in self._split(chunk):
            if piece is None:
                await self._message_end()
            else:
                await self._data(piece)

    async def end(self) -> None:
        """The stream ended: count what is left of the message (a JSON body, or an event)."""
        await self._message_end()

    def _split(self, chunk: bytes) -> list[bytes | None]:
        """The data-line bytes in ``chunk``, and ``None`` where an event ends (a blank line)."""
        out: list[bytes | None] = []
        if not chunk:
            return out
        pos = 1 if self._after_cr and chunk[:1] == b"\n" else 0
        for match in _EOL.finditer(chunk, pos):
            self._line_piece(chunk[pos:match.start()], out)
            if self._kind is None and not self._prefix:
                out.append(None)
                self._data_lines = 0
            self._kind, self._prefix = None, b""
            pos = match.end()
        self._after_cr = chunk.endswith(b"\r")
        self._line_piece(chunk[pos:], out)
        return out

    def _line_piece(self, piece: bytes, out: list[bytes | None]) -> None:
        if not piece:
            return
        if self._kind is None:
            self._prefix += piece
            if len(self._prefix) < len(_DATA) and _DATA.startswith(self._prefix):
                return
            self._kind = self._prefix.startswith(_DATA)
            piece, self._prefix = self._prefix[len(_DATA):], b"-"  # "-": the line has begun
            if self._kind:
                if self._data_lines:
                    out.append(b"\n")
                self._data_lines += 1
        if self._kind and piece:
            out.append(piece)

    async def _data(self, piece: bytes) -> None:
        self._batch.append(piece)
        self._batch_size += len(piece)
        self._size += len(piece)
        if self._size >= PRECOUNT_MIN_BYTES and self._batch_size >= PRECOUNT_CHUNK:
            await self._count()

    async def _count(self) -> None:
        counter = self._counter = self._counter or ToolCounter()
        batch = b"".join(self._batch)
        self._batch.clear()
        self._batch_size = 0
        await anyio.to_thread.run_sync(_feed_all, counter, batch)
        if counter.count > self._limit:
            raise self._refuse(counter.count, self._size)

    async def _message_end(self) -> None:
        if self._size >= PRECOUNT_MIN_BYTES:
            await self._count()
        self._batch.clear()
        self._batch_size = self._size = 0
        self._counter = None


def _feed_all(counter: ToolCounter, raw: bytes) -> None:
    view = memoryview(raw)
    for at in range(0, len(raw), PRECOUNT_CHUNK):
        counter.feed(view[at:at + PRECOUNT_CHUNK])
