"""toolbench's stdio transport (``toolbench._transports.wire.stdio``) on its own: a line over
``max_message_bytes`` is answered for its request, ends the read side, and stops the server at
once instead of reading the rest of the message on the shared loop (issue 46: a neighbour
beside a hostile server). Real child processes; no timing is asserted, every wait is bounded.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage

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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_dropped_line_stops_the_server_instead_of_reading_on(tmp_path: Path) -> None:
    """Before: the endless reply was drained on the loop until the shutdown's grace ran out
    (the server alive and writing all the while); now the server is stopped at the drop."""
    pid_file = tmp_path / "pid"
    params = StdioServerParameters(command=sys.executable, args=["-c", ENDLESS, str(pid_file)])
    seen: dict[str, object] = {}

    async def main() -> None:
        with open(os.devnull, "w") as errlog:
            async with bounded_stdio_client(params, errlog=errlog,
                                            max_message_bytes=LIMIT) as (read, write):
                request = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/call",
                                               params={"name": "x"})
                await write.send(SessionMessage(request))
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
        with open(os.devnull, "w") as errlog:
            async with bounded_stdio_client(params, errlog=errlog,
                                            max_message_bytes=LIMIT) as (read, write):
                request = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/call",
                                               params={"name": "x"})
                await write.send(SessionMessage(request))
                with anyio.fail_after(60):
                    seen["item"] = await read.receive()
                seen["alive"] = _alive(int(pid_file.read_text()))

    anyio.run(main)
    item = seen["item"]
    assert isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCResponse)
    assert len(item.message.result["content"][0]["text"]) == 200_000
    assert seen["alive"] is True
