"""Legacy SSE bounded like the other transports (toolbench/_transports/wire/sse.py).

DESIGN.md, "The trust boundary": a message over ``max_message_bytes`` fails that call as
``Malformed`` and restarts the connection; a discovery past ``max_tools`` is ``Unreachable``
at connect, with the row kept. On legacy SSE every reply comes on the one GET stream; here
a real stdlib server on 127.0.0.1 (tests/servers/big_sse_server.py) writes its replies with
the id first (as the Python SDK does) or last (as TypeScript servers do). The SDK's own
MCPServer over legacy SSE is covered in test_limits.py.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from loop_client import LoopClient
from serving import served_url

import toolbench as tb
from toolbench._core.errors import Malformed, TimedOut, Unreachable
from toolbench._core.ids import ToolId
from toolbench._transports.wire.sse import DRAIN_FACTOR, EventDropped, EventGuard, _Events

SERVER = Path(__file__).parent / "servers" / "big_sse_server.py"
MB = 2**20
ORDERS = pytest.mark.parametrize("id_last", [False, True], ids=["id-first", "id-last"])


def _serve(*args: str) -> contextlib.AbstractContextManager[str]:
    """The URL of big_sse_server.py on a free loopback port."""
    return served_url(SERVER, *args)


def _open_to(url: str) -> list[Any]:
    """This process's TCP connections to the server at ``url`` that are still open."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    return [c for c in psutil.Process().net_connections("tcp")
            if c.raddr and c.raddr.port == port and c.status != psutil.CONN_TIME_WAIT]


def _flags(id_last: bool) -> list[str]:
    return ["--id-last"] if id_last else []


@pytest.mark.slow
@ORDERS
def test_an_oversized_reply_fails_its_call_at_once_as_malformed(id_last: bool) -> None:
    """Its id read from the event's start or (read on, unkept) its end: the call fails well
    within its timeout, naming the cap; the connection restarts and the next call works."""
    with _serve(*_flags(id_last)) as url:
        with LoopClient(url, name="s", max_message_bytes=MB, timeout=60) as client:
            assert client.transport == "sse"
            assert client.call_sync(ToolId("s", "echo"), {"text": "hi"}).text == "hi"
            started = time.monotonic()
            with pytest.raises(Malformed, match=r"the server's event exceeded "
                                                r"max_message_bytes=1,048,576 \(") as info:
                client.call_sync(ToolId("s", "big"), {"mb": 3})
            assert time.monotonic() - started < 15  # the call's timeout is 60 s
            assert info.value.disposition.value == "landed"
            assert "discarded unread and the connection restarted" in str(info.value)
            assert "toolbench-too-large" not in str(info.value)  # the tag stays private
            assert client.status == "lost"
            assert "max_message_bytes=1,048,576" in (client.last_error or "")
            assert client.call_sync(ToolId("s", "echo"), {"text": "again"}).text == "again"
            assert client.status == "connected"
            # Under the cap, a reply larger than httpx's own 1 MiB per event arrives whole.
            assert len(client.call_sync(ToolId("s", "big"), {"mb": 0.9}).text) == int(0.9 * MB)
        assert _open_to(url) == []


@pytest.mark.slow
def test_an_oversized_notification_restarts_at_once_and_the_call_is_in_doubt() -> None:
    """An event that answers no request: nobody's reply was dropped, so the waiting call is
    ``TimedOut`` (in doubt), but at once, and the connection's error names the cap."""
    with _serve() as url:
        with LoopClient(url, name="s", max_message_bytes=MB, timeout=60) as client:
            assert client.call_sync(ToolId("s", "echo"), {"text": "hi"}).text == "hi"
            started = time.monotonic()
            with pytest.raises(TimedOut) as info:
                client.call_sync(ToolId("s", "shout"), {"mb": 2})
            assert time.monotonic() - started < 15
            assert info.value.disposition.value == "in_doubt"
            assert "max_message_bytes=1,048,576" in (client.last_error or ""), client.last_error
            assert client.call_sync(ToolId("s", "echo"), {"text": "again"}).text == "again"
        assert _open_to(url) == []


@pytest.mark.slow
@ORDERS
def test_a_page_over_max_tools_is_refused_without_being_parsed(id_last: bool) -> None:
    """100,000 tools in one event: counted as it streams, refused in its first megabytes
    (well under the byte cap), so discovery is ``Unreachable`` and the row is kept."""
    with _serve("--tools", "100000", *_flags(id_last)) as url, \
            tb.Bench(connect_timeout=60) as bench:
        started = time.monotonic()
        with pytest.raises(Unreachable, match=r"more than max_tools=10,000 tools \([\d,]+ in "
                                              r"its first [\d,]+ bytes\).*without being parsed"):
            bench.connect("many", url)
        assert time.monotonic() - started < 30
        row = bench.servers.set_index("name").loc["many"]
        assert row["status"] == "failed" and "max_tools" in row["error"]


@pytest.mark.slow
@ORDERS
def test_a_page_under_max_tools_is_counted_and_kept(id_last: bool) -> None:
    """6,000 tools (a page large enough to be counted) pass whole; the same page over a
    lowered ``max_tools`` is refused; a call result as large is never counted as a page."""
    with _serve("--tools", "6000", *_flags(id_last)) as url, \
            tb.Bench(connect_timeout=60) as bench:
        assert bench.connect("many", url) == 6000
        assert bench.call("many-lists").text == "1"
        assert len(bench.call("many-big", {"mb": 0.5}).text) == MB // 2
        with pytest.raises(Unreachable, match="more than max_tools=5,999 tools"):
            bench.connect("fewer", url, max_tools=5999)
        assert bench.call("many-echo", {"text": "still"}).text == "still"


class _Body:
    """A response body handed out in the given chunks."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> Any:
        for chunk in self.chunks:
            yield chunk


def _read(chunks: list[bytes], limit: int = 1024) -> tuple[bytes, BaseException | None]:
    """What the guarded stream hands on, and what it raised."""

    async def run() -> tuple[bytes, BaseException | None]:
        out = b""
        try:
            async for piece in _Events(_Body(chunks), EventGuard(limit, 10_000)):
                out += piece
        except EventDropped as exc:
            return out, exc
        return out, None

    return anyio.run(run)


def test_events_are_capped_one_by_one_across_and_within_chunks() -> None:
    small = b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'
    big = b'event: message\r\ndata: {"jsonrpc":"2.0","id":7,"result":"' + b"x" * 3000
    stream = small + small + big + b'"}\r\n\r\n' + small
    # Three small events and one too big, in one chunk: the two before it are handed on.
    out, exc = _read([stream])
    assert out == small + small
    assert isinstance(exc, EventDropped) and exc.target == 7
    assert "max_message_bytes=1,024 (" in exc.text
    # Split anywhere (the blank line too): the same.
    for cut in (1, len(small) - 1, len(small) + 1, 2 * len(small) + 20, len(stream) - 3):
        out, exc = _read([stream[:cut], stream[cut:]])
        assert out.startswith(small + small) and small * 3 not in out, cut
        assert isinstance(exc, EventDropped) and exc.target == 7, cut
    # Under the limit, everything passes untouched, however it is cut.
    fine = small * 20
    assert _read([fine[i:i + 7] for i in range(0, len(fine), 7)]) == (fine, None)


def test_a_dropped_event_names_the_request_whose_id_comes_last() -> None:
    big = b'data: {"result":{"content":[{"type":"text","text":"' + b"y" * 3000
    end = b'"}]},"jsonrpc":"2.0","id":"r-9"}\n\n'
    out, exc = _read([big[:600], big[600:], end])
    assert out == big[:600]  # handed on before it was too big; the decoder drops it with us
    assert isinstance(exc, EventDropped) and exc.target == "r-9"
    # A result that merely mentions a method near its end is still a reply.
    out, exc = _read([big + b" the method", end])
    assert isinstance(exc, EventDropped) and exc.target == "r-9"
    # Read on no further than DRAIN_FACTOR times the cap: past it, the id is not known.
    longer = big + b"y" * (DRAIN_FACTOR * 1024)
    out, exc = _read([longer[:600], longer[600:1800], longer[1800:], end])
    assert out == big[:600] and isinstance(exc, EventDropped) and exc.target is None
    note = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"d":"' \
        + b"n" * 5000 + b'"}}\n\n'
    out, exc = _read([note])
    assert out == b"" and isinstance(exc, EventDropped) and exc.target is None  # nobody's
