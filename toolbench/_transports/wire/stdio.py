"""A stdio transport for MCP whose reader is bounded: linear in the bytes, capped per message.

Why not the SDK's ``stdio_client``: its reader decodes stdout as text and re-joins the whole
pending buffer with every chunk (``(buffer + chunk).split("\\n")``), so one long line costs
time quadratic in its length (field notes: 20 MB takes 7.3 s), all of it on the shared loop,
and nothing limits how long a line may grow. This reader keeps the pieces of the current line
in a list and joins them once, at the newline; a line that passes ``max_message_bytes`` is
dropped as it streams past and never parsed.

A dropped message is answered, if it was the reply to one of our requests, with a synthesised
error carrying :data:`toolbench._transports.wire.limits.TAG` (so that call fails as
``Malformed``), and the read side then ends, which makes the connection restart on the next
call. Which request a dropped reply answered is read from the few kilobytes at its start
(and, when the id comes last, as TypeScript servers write it, at its end); when only one
request is waiting, it is that one.

Everything else follows the SDK's own transport, reusing its helpers: the server starts in its
own session (a notebook interrupt must not kill it), stderr goes to the given file, and
shutdown closes stdin, waits, then ends the whole process tree, shielded and bounded.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from anyio.abc import ByteReceiveStream
from anyio.streams.memory import MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.stdio import (
    _aclose_all,
    _create_platform_compatible_process,
    _drain_stdout,
    _get_executable_command,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage

from toolbench._transports.wire.command import find_command
from toolbench._transports.wire.first import FirstBytes
from toolbench._transports.wire.limits import (
    PRECOUNT_MIN_BYTES,
    listed_tools_bound,
    too_large_message,
    too_many_tools_message,
)
from toolbench._transports.wire.precount import PageCount
from toolbench._transports.wire.sniff import sniff_head as sniff_head
from toolbench._transports.wire.sniff import sniff_tail as sniff_tail

logger = logging.getLogger(__name__)

CHUNK = 65_536
"""Bytes asked of the pipe per read; the pipe itself holds about this much."""
SNIFF = 4_096
"""How much of a dropped message's start and end is kept to find its id."""
GARBAGE_QUOTE = 4_096
"""An unreadable line longer than this is reported by its start only."""
_WRITER_FLUSH_TIMEOUT = 0.5
NOTIFY_RATE = 1_000.0
"""Notifications per second one server may sustain; beyond it its stdout is read more slowly,
so the server waits on a full pipe while the shared loop serves everyone else (each
notification costs the SDK's dispatcher a task, a few hundred µs on a loaded 2-core box)."""
NOTIFY_BURST = 1_000.0
"""How many notifications may arrive at once before the rate applies."""
_NOTIFY_RESUME = 50.0
"""After a pause, how many notifications' worth of budget to wait for (fewer wake-ups)."""
PARSE_OFF_LOOP_BYTES = 1 << 20
"""A line this long is decoded on a worker thread: a 20 MB reply took ~80 ms to read and
decode, all on the loop, every other server's call waiting; beside it, the interpreter passes
back to the loop every switch interval (5 ms). Shorter: the hand-off costs more."""
_LONG_LIVED = frozenset({"subscriptions/listen"})
"""Requests that stay open for the whole connection: never "the one waiting request"."""

_NOT_A_PAGE = PageCount(0, False, lambda count, size: ValueError())
"""Marks a long line whose start shows it answers something else than a tools/list."""


class _Over(Exception):
    """A long line lists more tools than ``max_tools`` (args: the count, the bytes)."""


class _Flow:
    """What the writer has sent that the reader needs to know."""

    def __init__(self) -> None:
        self.pending: dict[types.RequestId, None] = {}
        """Requests awaiting a reply, in the order sent (an ordered set)."""
        self.change_unseen: bytes | None = None
        """The last tools/list_changed delivered, while no tools/list has been sent since."""
        self.listing: set[types.RequestId] = set()
        """tools/list requests awaiting their page (counted before parsing, if large)."""

    def sent(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            if message.method not in _LONG_LIVED:
                self.pending[message.id] = None
            if message.method == "tools/list":
                self.change_unseen = None
                self.listing.add(message.id)
        elif (isinstance(message, types.JSONRPCNotification)
              and message.method == "notifications/cancelled" and message.params):
            self.pending.pop(message.params.get("requestId"), None)  # type: ignore[arg-type]


class _Budget:
    """A token bucket: ``take`` returns at once within the budget, or sleeps until refilled."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp: float | None = None

    async def take(self) -> None:
        now = anyio.current_time()
        if self.stamp is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            await anyio.sleep((_NOTIFY_RESUME - self.tokens) / self.rate)
            self.tokens, self.stamp = _NOTIFY_RESUME, anyio.current_time()
        self.tokens -= 1


class _Reader:
    """Splits stdout into lines in linear time and drops any line over the limit.

    It also drops a ``tools/list_changed`` that repeats the previous one while no
    ``tools/list`` has been sent since: any re-list will be sent after it arrived, so it
    already sees that change. A flood of them then costs a byte comparison each, not a trip
    through the SDK's dispatcher (one task per notification).
    """

    def __init__(self, stdout: ByteReceiveStream,
                 sink: MemoryObjectSendStream[SessionMessage | Exception],
                 limit: int, flow: _Flow, max_tools: int | None = None,
                 redact: Callable[[str], str] | None = None) -> None:
        self.stdout = stdout
        self.max_tools = max_tools
        self.redact = redact
        self.sink = sink
        self.limit = limit
        self.flow = flow
        self.pending = flow.pending
        self.parts: list[bytes] = []
        self.size = 0
        self._repeat: tuple[bytes, re.Pattern[bytes]] | None = None
        self._budget = _Budget(NOTIFY_RATE, NOTIFY_BURST)
        self._page: PageCount | None = None  # counts a long line while a tools/list waits
        self.dropped = False
        """Whether the read ended on a dropped line (over a cap): the server is stopped."""

    async def run(self) -> None:
        """Deliver every line; return at end of stream or after dropping an oversized one."""
        while True:
            try:
                chunk = await self.stdout.receive(CHUNK)
            except anyio.EndOfStream:
                return
            start = 0
            while True:
                newline = chunk.find(b"\n", start)
                piece = chunk[start:] if newline < 0 else chunk[start:newline]
                if self.size + len(piece) > self.limit:
                    await self._oversized(piece, newline)
                    return
                if newline < 0:
                    if piece:
                        self.parts.append(piece)
                        self.size += len(piece)
                        over = await self._count_early(piece)
                        if over is not None:
                            await self._oversized(b"", -1, over)
                            return
                    break
                self._page = None
                start = newline + 1
                line = b"".join((*self.parts, piece)) if self.parts else piece
                self.parts.clear()
                self.size = 0
                line = line.strip()
                if line and line != self.flow.change_unseen:
                    refused = None
                    if len(line) >= PRECOUNT_MIN_BYTES and self.flow.listing:
                        refused = await self._too_many_tools(line)
                    if refused is not None:
                        item: SessionMessage | Exception = refused
                    elif len(line) >= PARSE_OFF_LOOP_BYTES:  # in order: the reader waits
                        item = self._noted(await anyio.to_thread.run_sync(self._decode, line),
                                           line)
                    else:
                        item = self._parse(line)
                    if isinstance(item, SessionMessage) and isinstance(
                        item.message, types.JSONRPCNotification
                    ):
                        await self._budget.take()
                    try:  # the session is waiting for it: hand it over without a loop turn
                        self.sink.send_nowait(item)
                    except anyio.WouldBlock:
                        await self.sink.send(item)
                if line and line == self.flow.change_unseen:  # skip a run of copies at C speed
                    start = self._skip_repeats(chunk, start, line)

    def _skip_repeats(self, chunk: bytes, start: int, line: bytes) -> int:
        if self._repeat is None or self._repeat[0] != line:
            self._repeat = (line, re.compile(b"(?:" + re.escape(line) + rb"\r?\n)+"))
        match = self._repeat[1].match(chunk, start)
        return match.end() if match is not None else start

    def _parse(self, line: bytes) -> SessionMessage | Exception:
        return self._noted(self._decode(line), line)

    def _decode(self, line: bytes) -> types.JSONRPCMessage | Exception:
        """The line as a JSON-RPC message, or why not; touches no state (it may run on a
        worker thread: see ``PARSE_OFF_LOOP_BYTES``)."""
        try:
            message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_json(
                line, by_name=False)
        except ValueError as exc:
            if len(line) > GARBAGE_QUOTE:  # redacted first, then cut: no partial secret shows
                text = line[:GARBAGE_QUOTE].decode("utf-8", "replace")
                quoted = (self.redact(text) if self.redact is not None else text)[:200]
                logger.debug("unreadable line from the server: %r", quoted)
                return ValueError(f"not a JSON-RPC message: {quoted!r}...")
            return exc
        return message

    def _noted(self, message: types.JSONRPCMessage | Exception,
               line: bytes) -> SessionMessage | Exception:
        """What the flow learns from a decoded message (on the loop), and the session's item."""
        if isinstance(message, Exception):
            return message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self.pending.pop(message.id, None)  # type: ignore[arg-type]  # None: never pending
            self.flow.listing.discard(message.id)  # type: ignore[arg-type]
        elif (isinstance(message, types.JSONRPCNotification)
              and message.method == "notifications/tools/list_changed"):
            self.flow.change_unseen = line
        return SessionMessage(message)

    async def _too_many_tools(self, line: bytes) -> SessionMessage | None:
        """A large line while a tools/list is pending: count its tools before parsing it
        (DESIGN, "The trust boundary": parsing and validating 100,000 tools would stall the
        shared loop for seconds). The count runs in a worker thread (numpy, GIL released).
        More than ``max_tools``: the page is answered with an error, never parsed."""
        if self.max_tools is None:
            return None
        count = await anyio.to_thread.run_sync(listed_tools_bound, line)
        if count <= self.max_tools:
            return None
        fields, _ = sniff_head(line[:SNIFF])
        if "id" not in fields:
            fields = sniff_tail(line[-SNIFF:])
        target = fields.get("id")
        if "method" in fields or (target is not None and target not in self.flow.listing):
            return None  # it answers something else (a call's long result): parsed as sent
        if target is None:
            target = next(iter(self.flow.listing)) if len(self.flow.listing) == 1 else None
        if target is None or isinstance(target, bool):
            return None  # cannot tell whose page it is: parsed as any line
        self.flow.listing.discard(target)
        self.pending.pop(target, None)
        logger.info("dropped a tools/list page of %s tools (max_tools=%s)", count,
                    self.max_tools)
        error = types.ErrorData(code=types.INTERNAL_ERROR,
                                message=too_many_tools_message(count, self.max_tools))
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=target, error=error))

    def _head(self, piece: bytes) -> bytes:
        head = b""
        for part in (*self.parts, piece):
            head += part[: SNIFF - len(head)]
            if len(head) >= SNIFF:
                break
        return head

    def _tail(self, piece: bytes) -> bytes:
        tail = piece[-SNIFF:]
        for part in reversed(self.parts):
            if len(tail) >= SNIFF:
                break
            tail = part[-(SNIFF - len(tail)):] + tail
        return tail

    async def _count_early(self, piece: bytes) -> str | None:
        """While a tools/list waits, count a long line's tools as it arrives: past
        ``max_tools``, the refusal's text, so the line is dropped before it is whole (a page
        of 600,000 tools is refused in its first megabytes, not after all of it is held)."""
        if self.max_tools is None or not self.flow.listing:
            return None
        page, self._page = self._page, None
        if page is None:  # the line's earlier parts were not counted yet
            if self.size < SNIFF:
                return None
            fields, _ = sniff_head(self._head(b""))
            if "method" in fields or fields.get("id", next(iter(self.flow.listing))) \
                    not in self.flow.listing:  # another message: not counted
                self._page = _NOT_A_PAGE
                return None
            page = PageCount(self.max_tools, False, _Over)
            pieces = self.parts
        elif page is _NOT_A_PAGE:
            self._page = page
            return None
        else:
            pieces = [piece]
        try:
            for part in pieces:
                await page.feed(part)
        except _Over as over:
            count, arrived = over.args
            return too_many_tools_message(count, self.max_tools, arrived)
        self._page = page
        return None

    async def _oversized(self, piece: bytes, newline: int, refusal: str | None = None) -> None:
        """Drop the current line without assembling it; answer its request if we can tell.

        ``refusal``: the text to answer with (a page over ``max_tools``), instead of the
        message being too large."""
        self.dropped = True
        head = self._head(piece)
        tail = self._tail(piece)
        arrived = self.size + len(piece)
        self.parts.clear()
        self.size = 0
        fields, big_key = sniff_head(head)
        target: types.RequestId | None = None
        decided = "method" in fields
        if not decided and isinstance(fields.get("id"), int | str):
            target, decided = fields["id"], True
        elif not decided and len(self.pending) == 1:
            target, decided = next(iter(self.pending)), True
        if not decided and newline < 0:
            # The id may come last ({"result": ..., "jsonrpc": "2.0", "id": 5}): read on to the
            # end of the line, keeping only its last bytes, within a bound of its own.
            while arrived <= 4 * self.limit:
                try:
                    more = await self.stdout.receive(CHUNK)
                except anyio.EndOfStream:
                    break
                end = more.find(b"\n")
                arrived += len(more) if end < 0 else end
                tail = (tail + (more if end < 0 else more[:end]))[-SNIFF:]
                if end >= 0:
                    fields = sniff_tail(tail)
                    break
        elif not decided:
            fields = sniff_tail(tail)
        if not decided and "method" not in fields and isinstance(fields.get("id"), int | str):
            target = fields["id"]
        what = "reply" if big_key in ("result", "error") or target is not None else "message"
        logger.info("dropped a %s of %s+ bytes from the server (%s)", what, arrived,
                    refusal or f"max_message_bytes={self.limit}")
        if target is not None:
            error = types.ErrorData(code=types.INTERNAL_ERROR, message=refusal
                                    or too_large_message(arrived, self.limit, what))
            await self.sink.send(SessionMessage(
                types.JSONRPCError(jsonrpc="2.0", id=target, error=error)))
            self.pending.pop(target, None)


def _stop_writing(process: Any) -> None:
    """After a dropped line, stop the server at once (SIGTERM to its process group): the
    connection restarts anyway, and the rest of the message (18 MB of a 50 MB reply, or an
    endless one) would otherwise be read on the shared loop, beside every other server's
    traffic, until the shutdown's grace ran out. The shutdown still escalates and reaps."""
    if process.returncode is not None:
        return
    try:
        if sys.platform == "win32":  # pragma: no cover - no process groups there
            process.terminate()
        else:  # the SDK starts the server as a session leader: its pid is the group's id
            os.killpg(process.pid, signal.SIGTERM)
    except OSError:  # gone already (ProcessLookupError), or not ours to signal
        pass  # the shutdown deals with it


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters, *, errlog: TextIO, max_message_bytes: int,
    on_unwritten: Callable[[types.RequestId], None] | None = None,
    max_tools: int | None = None, redact: Callable[[str], str] | None = None,
    first_output: bytearray | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``server`` and yield ``(read_stream, write_stream)``, as the SDK's stdio_client.

    ``on_unwritten(request_id)`` is told of every request that was handed over but never
    written, because the pipe refused it (the server closed its stdin, or died): such a call
    provably did not reach the server, which the error table needs to know. The first bytes
    of stdout are copied into ``first_output`` (they explain a failed start).
    """
    # A bare name: on PATH, then in this Python's scripts folder (off the loop: stat calls).
    found = await anyio.to_thread.run_sync(find_command, server.command, server.env)
    command = await _get_executable_command(found)
    process = await _create_platform_compatible_process(
        command=command,
        args=server.args,
        env=get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    # No awaits until the task group is entered, or a cancellation would leak the process.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    flow = _Flow()
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        stdout = (process.stdout if first_output is None
                  else FirstBytes(process.stdout, first_output))
        reader = _Reader(stdout, read_writer, max_message_bytes, flow, max_tools, redact)
        try:
            try:
                async with read_writer:
                    await reader.run()
            finally:
                if reader.dropped:  # even when handing over the refusal failed
                    _stop_writing(process)
                # Keep a server that is still writing (the rest of a dropped reply) from
                # blocking on a full pipe, so it can see stdin close and exit.
                await _drain_stdout(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # our own shutdown, or the session went away first
        except ConnectionError:
            if not shutting_down:
                logger.exception("reading the MCP server's stdout failed mid-session")

    def unwritten(message: types.JSONRPCMessage) -> None:
        if on_unwritten is not None and isinstance(message, types.JSONRPCRequest):
            on_unwritten(message.id)

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                while True:
                    try:  # what is already waiting goes out without a loop turn first
                        session_message = write_reader.receive_nowait()
                    except anyio.WouldBlock:
                        try:
                            session_message = await write_reader.receive()
                        except anyio.EndOfStream:
                            break
                    except anyio.EndOfStream:
                        break
                    message = session_message.message
                    flow.sent(message)
                    data = message.model_dump_json(by_alias=True, exclude_unset=True)
                    try:
                        await process.stdin.send((data + "\n").encode(server.encoding))
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                        unwritten(message)
                        while True:  # and whatever was already handed over behind it
                            try:
                                unwritten(write_reader.receive_nowait().message)
                            except (anyio.WouldBlock, anyio.EndOfStream,
                                    anyio.ClosedResourceError):
                                break
                        raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the session must see the end, not hang
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(_WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await _stop_server_process(process)
        await _aclose_all(read_stream, write_stream, read_writer, write_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(stdout_reader)
        task_group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            task_group.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()
