"""Real servers that answer with errors, go away and come back (DESIGN.md, "The trust boundary").

Each test asserts the outcome, the disposition, a time bound, and that the connection still
works afterwards: the same pid and an unbroken in-memory counter for an error reply (nothing
was respawned), a new pid after a real loss.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from loop_client import LoopClient
from mcp.server import Server
from mcp.shared.exceptions import MCPError

import toolbench as tb
from toolbench._core.errors import Disposition, Malformed, Refused, TimedOut, Unreachable
from toolbench._core.ids import ToolId
from toolbench._transports.mcp.recovery import BACKOFF_FIRST_S

pytestmark = pytest.mark.slow

SERVERS = Path(__file__).parent / "servers"
RPC = [sys.executable, str(SERVERS / "rpc_errors.py")]
ECHO = [sys.executable, str(SERVERS / "echo_server.py")]


def rpc_tool(name: str) -> ToolId:
    return ToolId("rpc", name)


def state(client: LoopClient) -> dict[str, Any]:
    result = client.call_sync(rpc_tool("count"), {})
    assert result.structured is not None
    return result.structured


@pytest.fixture
def rpc() -> Iterator[LoopClient]:
    with LoopClient(RPC, name="rpc", timeout=30) as client:
        client.list_tools_sync("rpc")
        yield client


# -- item 5: an error reply is an answer, not a lost connection ------------------------------
@pytest.mark.parametrize("code", [-32000, -32001, -32603, -1, 7])
def test_error_reply_keeps_the_connection(rpc: LoopClient, code: int) -> None:
    before = state(rpc)
    started = time.monotonic()
    with pytest.raises(TimedOut) as info:
        rpc.call_sync(rpc_tool("err"), {"code": code})
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert info.value.disposition is Disposition.IN_DOUBT
    assert f"error {code}: server error {code} after {before['count'] + 1} calls" in message
    assert "lost" not in message and "within" not in message  # neither a loss nor a timeout
    assert elapsed < 5.0  # the reply came at once; nothing waited out the 30 s timeout
    assert rpc.status == "connected"
    assert state(rpc) == {"count": before["count"] + 2, "pid": before["pid"]}  # not respawned


@pytest.mark.parametrize("code", [-32601, -32602, -32600, -32700])
def test_refusing_reply_is_refused_and_keeps_the_connection(rpc: LoopClient, code: int) -> None:
    before = state(rpc)
    with pytest.raises(Refused, match=f"code {code}") as info:
        rpc.call_sync(rpc_tool("err"), {"code": code})
    assert info.value.disposition is Disposition.DID_NOT_HAPPEN
    assert state(rpc) == {"count": before["count"] + 2, "pid": before["pid"]}


def test_no_answer_is_our_timeout_and_the_connection_survives(rpc: LoopClient) -> None:
    before = state(rpc)
    started = time.monotonic()
    with pytest.raises(TimedOut, match=r"no answer to the call within 0\.5 s") as info:
        rpc.call_sync(rpc_tool("hang"), {}, timeout=0.5)
    elapsed = time.monotonic() - started
    assert info.value.disposition is Disposition.IN_DOUBT
    assert 0.45 <= elapsed < 5.0
    assert rpc.status == "connected"
    assert state(rpc) == {"count": before["count"] + 2, "pid": before["pid"]}


def _inprocess_server() -> Server[Any]:
    """Tool ``err_<code>`` raises that JSON-RPC code; ``bad_output`` breaks its output schema."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(
            name="bad_output", input_schema={"type": "object"},
            output_schema={"type": "object", "properties": {"n": {"type": "integer"}},
                           "required": ["n"]},
        )])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "bad_output":
            return types.CallToolResult(content=[], structured_content={"n": "seven"})
        raise MCPError(code=int(params.name.split("_")[1]), message=f"raised {params.name}")

    return Server("inproc", on_list_tools=list_tools, on_call_tool=call_tool)


def test_in_process_error_replies_and_bad_output() -> None:
    with LoopClient(_inprocess_server(), name="inproc") as client:
        client.list_tools_sync("inproc")
        for code in (-32000, -32001):
            with pytest.raises(TimedOut, match=f"error {code}: raised err_{code}"):
                client.call_sync(ToolId("inproc", f"err_{code}"), {})
            assert client.status == "connected"
        with pytest.raises(Malformed, match="does not match the output schema") as info:
            client.call_sync(ToolId("inproc", "bad_output"), {})
        assert info.value.disposition is Disposition.LANDED
        assert client.status == "connected"


# -- item 6: a call that never left did not happen -------------------------------------------
def test_queued_past_its_timeout_did_not_happen() -> None:
    async def main() -> tuple[BaseException, float, dict[str, Any], dict[str, Any]]:
        async with LoopClient(RPC, name="rpc", timeout=30, max_concurrent=1) as client:
            await client.list_tools("rpc")
            before = (await client.call(rpc_tool("count"), {})).structured
            errors: list[BaseException] = []

            async def hang() -> None:
                with pytest.raises(TimedOut):
                    await client.call(rpc_tool("hang"), {}, timeout=3.5)

            async with anyio.create_task_group() as tg:
                tg.start_soon(hang)
                await anyio.sleep(0.5)  # the hang holds the only slot
                started = anyio.current_time()
                try:
                    await client.call(rpc_tool("count"), {}, timeout=0.5)
                except Exception as exc:
                    errors.append(exc)
                elapsed = anyio.current_time() - started
            after = (await client.call(rpc_tool("count"), {})).structured
            assert before is not None and after is not None
            return errors[0], elapsed, before, after

    error, elapsed, before, after = anyio.run(main)
    assert type(error) is Unreachable and "max_concurrent=1" in str(error)
    assert error.disposition is Disposition.DID_NOT_HAPPEN  # type: ignore[attr-defined]
    assert 0.45 <= elapsed < 3.0  # 6x its 0.5 s; waiting for the slot would take 3 s
    # The hang counted once; the queued call never reached the server.
    assert after == {"count": before["count"] + 2, "pid": before["pid"]}


def test_bench_hands_the_timeout_down_so_a_queued_call_did_not_happen() -> None:
    with tb.Bench() as bench:
        bench.connect("rpc", RPC, max_concurrent=1, timeout=30)

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_expect, bench, "rpc-hang", 2.5, tb.TimedOut)
                await anyio.sleep(0.5)
                await _expect(bench, "rpc-count", 0.5, tb.Unreachable)

        anyio.run(main)
        rows = bench.records.set_index("tool")
        assert rows.loc["hang", "disposition"] == "in_doubt"
        assert rows.loc["count", "disposition"] == "did_not_happen"
        assert rows.loc["count", "error_type"] == "Unreachable"


async def _expect(bench: tb.Bench, name: str, timeout: float, error: type[Exception]) -> None:
    started = anyio.current_time()
    with pytest.raises(error):
        await bench.acall(name, timeout=timeout)
    assert timeout * 0.9 <= anyio.current_time() - started < timeout + 1.5


def test_close_while_queued_did_not_happen() -> None:
    async def main() -> tuple[BaseException, BaseException]:
        client = LoopClient(RPC, name="rpc", timeout=30, max_concurrent=1)
        await client.aconnect()
        await client.list_tools("rpc")
        found: dict[str, BaseException] = {}

        async def call(tool: str) -> None:
            try:
                await client.call(rpc_tool(tool), {}, timeout=10)
            except Exception as exc:
                found[tool] = exc

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "hang")
                await anyio.sleep(0.5)
                tg.start_soon(call, "count")  # queued behind the hang
                await anyio.sleep(0.3)
                await client.aclose()
        return found["hang"], found["count"]

    hang, queued = anyio.run(main)
    assert type(hang) is TimedOut  # it was sent: in doubt
    assert isinstance(queued, Unreachable) and queued.disposition is Disposition.DID_NOT_HAPPEN


# -- items 6 and 9 over HTTP: refused at call time, then found again when it is back ---------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_http(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([*ECHO, "streamable-http", str(port)], stderr=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                _stop(proc)
                pytest.fail(f"HTTP test server did not accept connections on port {port}")
            time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()  # not terminate: a graceful stop waits on the client's open listen stream
    proc.wait(10)


def _next_attempt(message: str) -> float:
    found = re.search(r"next reconnect attempt is in ([0-9.]+) s", message)
    assert found, message
    return float(found.group(1))


def test_http_server_refused_then_back_on_the_same_port() -> None:
    port = _free_port()
    proc = _start_http(port)
    try:
        with LoopClient(f"http://127.0.0.1:{port}/mcp", name="web", timeout=30,
                       connect_timeout=10) as client:
            add = ToolId("web", "add")
            assert client.call_sync(add, {"a": 1, "b": 2}).structured == {"result": 3}
            _stop(proc)

            # Nothing listens: the POST's connect is refused, so the call never left.
            started = time.monotonic()
            with pytest.raises(Unreachable, match="refused") as info:
                client.call_sync(add, {"a": 1, "b": 2})
            assert info.value.disposition is Disposition.DID_NOT_HAPPEN
            assert time.monotonic() - started < 5.0
            assert client.status == "lost"

            # The next call tries to reconnect at once; that fails too, and opens a window.
            with pytest.raises(Unreachable, match="lost and reconnecting failed"):
                client.call_sync(add, {"a": 1, "b": 2})
            assert client.status == "failed"
            started = time.monotonic()
            with pytest.raises(Unreachable, match="next reconnect attempt") as info:
                client.call_sync(add, {"a": 1, "b": 2})
            # Inside the window: refused without an attempt (the message says when the next
            # one is); the bound is only against a hang.
            assert time.monotonic() - started < 5.0
            assert 0 < _next_attempt(str(info.value)) <= BACKOFF_FIRST_S
            assert info.value.disposition is Disposition.DID_NOT_HAPPEN

            time.sleep(BACKOFF_FIRST_S + 0.1)
            with pytest.raises(Unreachable, match="failed to start"):
                client.call_sync(add, {"a": 1, "b": 2})  # retried after the window: still down
            with pytest.raises(Unreachable) as info:
                client.call_sync(add, {"a": 1, "b": 2})
            wait = _next_attempt(str(info.value))
            assert BACKOFF_FIRST_S < wait <= 2 * BACKOFF_FIRST_S  # the window doubled

            proc = _start_http(port)
            time.sleep(wait + 0.1)
            assert client.call_sync(add, {"a": 2, "b": 3}).structured == {"result": 5}
            assert client.status == "connected" and client.last_error is None
    finally:
        _stop(proc)


# -- item 9 over stdio: a server that cannot start is retried, with backoff ------------------
def test_stdio_server_retried_after_backoff_once_it_can_start(tmp_path: Path) -> None:
    block = tmp_path / "blocked"
    wrapper = tmp_path / "gated.py"
    wrapper.write_text(textwrap.dedent(f"""
        import os, runpy, sys
        if os.path.exists({str(block)!r}):
            sys.exit("start refused while blocked")
        sys.argv = [{str(SERVERS / "echo_server.py")!r}]
        runpy.run_path(sys.argv[0], run_name="__main__")
    """))
    whoami = ToolId("echo", "whoami")
    with LoopClient([sys.executable, str(wrapper)], name="echo", connect_timeout=30) as client:
        first = client.call_sync(whoami, {}).structured
        block.touch()
        with pytest.raises(TimedOut, match="connection was lost"):
            client.call_sync(ToolId("echo", "die"), {})
        with pytest.raises(Unreachable, match="start refused while blocked"):
            client.call_sync(whoami, {})
        assert client.status == "failed"
        started = time.monotonic()
        with pytest.raises(Unreachable, match="next reconnect attempt") as info:
            client.call_sync(whoami, {})
        assert time.monotonic() - started < 5.0  # no attempt (the message); a hang bound
        block.unlink()
        time.sleep(_next_attempt(str(info.value)) + 0.1)
        second = client.call_sync(whoami, {}).structured
        assert client.status == "connected"
        assert first and second and first["pid"] != second["pid"]


def test_call_timeout_during_a_slow_reconnect_did_not_happen(tmp_path: Path) -> None:
    slow = tmp_path / "slow"
    wrapper = tmp_path / "slow_start.py"
    wrapper.write_text(textwrap.dedent(f"""
        import os, runpy, sys, time
        if os.path.exists({str(slow)!r}):
            time.sleep(3)
        sys.argv = [{str(SERVERS / "echo_server.py")!r}]
        runpy.run_path(sys.argv[0], run_name="__main__")
    """))
    whoami = ToolId("echo", "whoami")
    with LoopClient([sys.executable, str(wrapper)], name="echo", connect_timeout=30) as client:
        first = client.call_sync(whoami, {}).structured
        slow.touch()
        with pytest.raises(TimedOut, match="connection was lost"):
            client.call_sync(ToolId("echo", "die"), {})
        started = time.monotonic()
        with pytest.raises(Unreachable, match="still connecting") as info:
            client.call_sync(whoami, {}, timeout=0.5)
        assert info.value.disposition is Disposition.DID_NOT_HAPPEN
        assert 0.45 <= time.monotonic() - started < 2.5
        # The attempt was not cut short by that call's timeout: it finishes on its own.
        deadline = time.monotonic() + 30
        while client.status != "connected" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.status == "connected"
        second = client.call_sync(whoami, {}).structured
        assert first and second and first["pid"] != second["pid"]


def _stdio_reports_unwritten() -> bool:
    """Whether the stdio transport tells the tracker about a request it failed to write."""
    try:
        from toolbench._transports.wire.stdio import bounded_stdio_client
    except ImportError:
        return False
    import inspect

    return "on_unwritten" in inspect.signature(bounded_stdio_client).parameters


@pytest.mark.skipif(not _stdio_reports_unwritten(),
                    reason="the stdio transport does not report failed writes (on_unwritten)")
def test_stdio_write_that_fails_did_not_happen(rpc: LoopClient) -> None:
    before = state(rpc)
    assert rpc.call_sync(rpc_tool("deafen"), {}).text == "deaf now"  # it closed its stdin
    started = time.monotonic()
    with pytest.raises(Unreachable, match="not sent") as info:
        rpc.call_sync(rpc_tool("count"), {})
    assert info.value.disposition is Disposition.DID_NOT_HAPPEN
    assert time.monotonic() - started < 5.0
    after = state(rpc)  # reconnected: a new process, whose counter starts again
    assert after["pid"] != before["pid"] and after["count"] == 1
