"""toolbench's stdio transport (``toolbench._transports.wire.stdio``) on its own: a line over
``max_message_bytes`` is answered for its request, ends the read side, and stops the server at
once instead of reading the rest of the message on the shared loop; a long line under the cap
is decoded beside the loop, in order (issue 46: a neighbour beside a hostile server). Real
child processes; no timing is asserted, every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage

from toolbench._transports.wire import stdio
from toolbench._transports.wire.limits import oversize_text
from toolbench._transports.wire.stdio import bounded_stdio_client

ENDLESS = """
import os, sys
open(sys.argv[1], "w").write(str(os.getpid()))
line = sys.stdin.readline()  # the request; its reply never ends
out = sys.stdout.buffer
out.write(b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"')
block = b"x" * 65536
while True:
    out.write(block)
"""

pytestmark = pytest.mark.slow

LIMIT = 256 * 1024


def _alive(pid: int) -> bool:
    """Whether ``pid`` is still a running process (a zombie is not: it has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@contextlib.asynccontextmanager
async def _one_call(params: StdioServerParameters) -> AsyncIterator[Any]:
    """A bounded stdio connection to ``params`` that has sent one ``tools/call`` (id 1);
    yields its read side."""
    with open(os.devnull, "w") as errlog:
        async with bounded_stdio_client(params, errlog=errlog,
                                        max_message_bytes=LIMIT) as (read, write):
            request = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/call",
                                           params={"name": "x"})
            await write.send(SessionMessage(request))
            yield read


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_dropped_line_stops_the_server_instead_of_reading_on(tmp_path: Path) -> None:
    """Before: the endless reply was drained on the loop until the shutdown's grace ran out
    (the server alive and writing all the while); now the server is stopped at the drop."""
    pid_file = tmp_path / "pid"
    params = StdioServerParameters(command=sys.executable, args=["-c", ENDLESS, str(pid_file)])
    seen: dict[str, object] = {}

    async def main() -> None:
        async with _one_call(params) as read:
            with anyio.fail_after(60):
                item = await read.receive()
            seen["item"] = item
            pid = int(pid_file.read_text())
            # Still inside the connection (no shutdown yet): the server must be stopping.
            with anyio.move_on_after(30):
                while _alive(pid):
                    await anyio.sleep(0.02)
            seen["alive"] = _alive(pid)
            with anyio.fail_after(30), pytest.raises(anyio.EndOfStream):
                await read.receive()

    anyio.run(main)
    item = seen["item"]
    assert isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCError)
    assert item.message.id == 1
    assert oversize_text(item.message.error.message) is not None  # ours: the call is Malformed
    assert seen["alive"] is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_message_under_the_cap_leaves_the_server_running(tmp_path: Path) -> None:
    """The stop is for a dropped line only: a long reply under the cap is delivered whole."""
    pid_file = tmp_path / "pid"
    script = (
        "import os, sys\n"
        "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
        "sys.stdin.readline()\n"
        "text = 'y' * 200000\n"
        "sys.stdout.write('{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":"
        "[{\"type\":\"text\",\"text\":\"' + text + '\"}]}}\\n')\n"
        "sys.stdout.flush()\n"
        "sys.stdin.readline()\n"
    )
    params = StdioServerParameters(command=sys.executable, args=["-c", script, str(pid_file)])
    seen: dict[str, object] = {}

    async def main() -> None:
        async with _one_call(params) as read:
            with anyio.fail_after(60):
                seen["item"] = await read.receive()
            seen["alive"] = _alive(int(pid_file.read_text()))

    anyio.run(main)
    item = seen["item"]
    assert isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCResponse)
    assert len(item.message.result["content"][0]["text"]) == 200_000
    assert seen["alive"] is True


TWO_REPLIES = """
import sys
first, second = sys.stdin.readline(), sys.stdin.readline()
text = "z" * (3 << 20)
sys.stdout.write('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"'
                 + text + '"}]}}\\n'
                 '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"small"}]}}\\n')
sys.stdout.flush()
sys.stdin.readline()
"""


def test_a_long_line_is_decoded_beside_the_loop_and_kept_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3 MB reply (under the cap) is decoded on a worker thread, so the shared loop keeps
    serving other servers meanwhile; the small reply written right behind it still comes
    second, and the short line is decoded on the loop itself."""
    decoded: list[tuple[int, bool]] = []
    real = stdio._Reader._decode

    def spy(self: stdio._Reader, line: bytes) -> object:
        decoded.append((len(line), threading.current_thread() is threading.main_thread()))
        return real(self, line)

    monkeypatch.setattr(stdio._Reader, "_decode", spy)
    params = StdioServerParameters(command=sys.executable, args=["-c", TWO_REPLIES])
    items: list[object] = []

    async def main() -> None:
        with open(os.devnull, "w") as errlog:
            async with bounded_stdio_client(params, errlog=errlog,
                                            max_message_bytes=32 << 20) as (read, write):
                for ident in (1, 2):
                    await write.send(SessionMessage(types.JSONRPCRequest(
                        jsonrpc="2.0", id=ident, method="tools/call", params={"name": "x"})))
                with anyio.fail_after(60):
                    items.extend([await read.receive(), await read.receive()])

    anyio.run(main)  # the loop runs on this (the main) thread
    assert [item.message.id for item in items] == [1, 2]  # type: ignore[attr-defined]
    big = items[0].message.result["content"][0]["text"]  # type: ignore[attr-defined]
    assert len(big) == 3 << 20
    assert [on_loop for size, on_loop in decoded if size >= stdio.PARSE_OFF_LOOP_BYTES] == [False]
    assert [on_loop for size, on_loop in decoded if size < stdio.PARSE_OFF_LOOP_BYTES] == [True]
