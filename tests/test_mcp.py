"""McpClient against real servers: stdio children, HTTP/SSE processes, in-process objects."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psutil
import pytest
from loop_client import LoopClient
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from servers.memory import make_mem_server
from serving import free_port, served_echo

from toolbench._core.client import ToolClient
from toolbench._core.errors import (
    Disposition,
    Malformed,
    Refused,
    TimedOut,
    ToolFailed,
    Unreachable,
)
from toolbench._core.ids import Destination, Provenance, ToolId
from toolbench._core.schema import preload as _preload
from toolbench._transports.mcp.client import McpClient

SERVERS = Path(__file__).parent / "servers"
ECHO = [sys.executable, str(SERVERS / "echo_server.py")]
SECRET = "hunter2-very-secret"

pytestmark = pytest.mark.slow


def script(name: str) -> list[str]:
    return [sys.executable, str(SERVERS / name)]


def tid(tool: str, server: str = "echo") -> ToolId:
    return ToolId(server, tool)


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def echo() -> Iterator[LoopClient]:
    client = LoopClient(ECHO, name="echo", env={"TOOLBENCH_TEST_SECRET": SECRET})
    client.connect()
    yield client
    client.close()


@pytest.fixture(scope="module")
def http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    with served_echo("streamable-http") as served:
        yield served


@pytest.fixture(scope="module")
def sse_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    with served_echo("sse") as served:
        yield served


def code_server() -> Server[Any]:
    """A low-level server whose tools/call fails with the JSON-RPC code named by the tool."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        raise MCPError(code=int(params.name.split("_")[1]), message=f"code for {params.name}")

    return Server("codes", on_list_tools=list_tools, on_call_tool=call_tool)


# -- construction ----------------------------------------------------------------------------
def test_target_chooses_transport_and_destination() -> None:
    assert McpClient("mcp-server-time --x 1", name="a").transport == "stdio"
    assert McpClient(["prog"], name="a").transport == "stdio"
    http = McpClient("https://Api.Example.com:8443/mcp", name="a")
    assert http.transport == "http"
    assert http.destination(tid("t", "a")) == Destination.remote("api.example.com")
    assert McpClient("http://h/sse", name="a").transport == "sse"
    assert McpClient("http://h/events", name="a", transport="sse").transport == "sse"
    mem = McpClient(make_mem_server(), name="a")
    assert mem.transport == "in-process"
    assert mem.destination(tid("t", "a")) is Destination.LOCAL
    assert mem.servers() == ["a"]
    assert isinstance(mem, ToolClient)
    assert mem.status == "new" and mem.stderr_tail() == "" and mem.last_error is None
    assert mem.server_info == {"protocol": None, "server_name": None, "server_version": None}


@pytest.mark.parametrize(
    ("target", "kwargs", "words"),
    [
        ("", {}, "empty command"),
        ("   ", {}, "empty command"),
        ([], {}, "empty command"),
        ("ftp://host/mcp", {}, "scheme 'ftp'"),
        ("http://h/mcp", {"transport": "stdio"}, "does not fit a URL"),
        ("prog", {"transport": "http"}, "does not fit a command"),
        ("prog", {"name": "bad name"}, "invalid server name"),
        ("prog", {"timeout": 0}, "invalid timeout"),
        ("prog", {"max_concurrent": 0}, "invalid max_concurrent"),
        (42, {}, "invalid target int"),
    ],
)
def test_bad_targets_raise_valueerror_naming_the_rule(
    target: Any, kwargs: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        McpClient(target, **kwargs)


def test_secrets_absent_from_repr_and_errors() -> None:
    client = McpClient(
        "https://user:pw-secret-1@example.com/mcp?token=tok-secret-2", name="web",
        headers={"Authorization": "Bearer hdr-secret-3"}, env={"K": "env-secret-4"},
    )
    text = repr(client) + client.target_text
    for secret in ("pw-secret-1", "tok-secret-2", "hdr-secret-3", "env-secret-4"):
        assert secret not in text
    assert "Authorization" in repr(client)
    with pytest.raises(ValueError) as info:
        McpClient("prog", env={"K": 123})  # type: ignore[dict-item]
    assert "'K'" in str(info.value) and "123" not in str(info.value)


# -- stdio: the echo server ------------------------------------------------------------------
def test_stdio_lists_and_calls(echo: LoopClient) -> None:
    assert echo.status == "connected"
    assert echo.server_info["server_name"] == "echo-server"
    assert echo.server_info["server_version"] == "9.8.7"
    assert echo.server_info["protocol"]
    specs = {s.name: s for s in echo.list_tools_sync("echo")}
    assert {"echo", "add", "slow", "fail"} <= set(specs)
    assert specs["add"].input_schema["required"] == ["a", "b"]
    assert specs["add"].output_schema is not None
    result = echo.call_sync(tid("add"), {"a": 2, "b": 40})
    assert result.structured == {"result": 42}
    assert result.content == [{"type": "text", "text": "42"}]
    assert result.tool == tid("add") and result.latency_s is not None and result.latency_s > 0


def test_provenance_travels_in_meta(echo: LoopClient) -> None:
    prov = Provenance(run="r1", case=3, cell=7)
    data = echo.call_sync(tid("whoami"), {}, prov).structured
    assert data is not None
    assert data["provenance"] == {"run": "r1", "case": 3, "cell": 7}
    assert data["secret_len"] == len(SECRET)  # env reached the child


def test_progress_callback_receives_updates(echo: LoopClient) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    echo.call_sync(tid("progress"), {"steps": 3}, progress=on_progress)
    assert [s[0] for s in seen] == [1, 2, 3] and seen[-1][2] == "step 3"


def test_is_error_raises_toolfailed_with_result(echo: LoopClient) -> None:
    with pytest.raises(ToolFailed, match="failed on purpose: xyz") as info:
        echo.call_sync(tid("fail"), {"reason": "xyz"})
    assert info.value.result is not None and "xyz" in info.value.result.text
    assert info.value.tool == tid("fail")


def test_per_call_timeout_is_timedout_and_connection_survives(echo: LoopClient) -> None:
    started = time.monotonic()
    with pytest.raises(TimedOut, match=r"within 0\.3 s"):
        echo.call_sync(tid("slow"), {"seconds": 5}, timeout=0.3)
    assert time.monotonic() - started < 3
    assert echo.call_sync(tid("echo"), {"text": "still here"}).text == "still here"


def test_non_object_arguments_refused_before_sending(echo: LoopClient) -> None:
    for bad in ([1, 2], "text", 5):
        with pytest.raises(Refused, match="must be an object"):
            echo.call_sync(tid("echo"), bad)  # type: ignore[arg-type]
    # Nothing was sent, so nothing can have failed on the server: it still answers at once.
    assert echo.call_sync(tid("echo"), {"text": "ok"}).text == "ok"


def test_wrong_server_name_is_unreachable(echo: LoopClient) -> None:
    with pytest.raises(Unreachable, match="serves 'echo', not 'other'"):
        echo.call_sync(ToolId("other", "echo"), {"text": "x"})


def test_stderr_tail_hides_secret_values(echo: LoopClient) -> None:
    echo.call_sync(tid("leak_to_stderr"), {})
    tail = echo.stderr_tail()
    assert "echo_server starting" in tail and "the secret is [redacted]" in tail
    assert SECRET not in tail and SECRET not in repr(echo)
    assert echo.stderr_tail(1) == "the secret is [redacted]"


def test_max_concurrent_caps_in_flight_calls() -> None:
    async def main() -> float:
        async with McpClient(ECHO, name="echo", max_concurrent=1) as client:
            started = time.monotonic()
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(client.call, tid("slow"), {"seconds": 0.3})
            return time.monotonic() - started

    assert anyio.run(main) >= 0.85  # three 0.3 s calls, one at a time


# -- a real third-party server ---------------------------------------------------------------
def test_mcp_server_time() -> None:
    exe = Path(sys.executable).parent / "mcp-server-time"
    with LoopClient(f"{exe} --local-timezone UTC", name="time") as client:
        names = {s.name for s in client.list_tools_sync("time")}
        assert {"get_current_time", "convert_time"} <= names
        result = client.call_sync(ToolId("time", "get_current_time"), {"timezone": "UTC"})
        assert result.structured is not None and result.structured["timezone"] == "UTC"
        assert "datetime" in result.structured
    assert client.status == "closed"


# -- HTTP and SSE ----------------------------------------------------------------------------
def test_streamable_http(http_server: tuple[str, Any]) -> None:
    url, _ = http_server
    with LoopClient(url, name="web", headers={"X-Test": "header-secret-value"}) as client:
        assert client.transport == "http"
        assert client.destination(tid("add", "web")) == Destination.remote("127.0.0.1")
        assert "add" in {s.name for s in client.list_tools_sync("web")}
        assert client.call_sync(tid("add", "web"), {"a": 1, "b": 2}).structured == {"result": 3}
        assert "header-secret-value" not in repr(client)


def test_sse(sse_server: tuple[str, Any]) -> None:
    url, _ = sse_server
    with LoopClient(url, name="web") as client:
        assert client.transport == "sse"
        assert client.call_sync(tid("echo", "web"), {"text": "over sse"}).text == "over sse"


def test_http_server_down_is_unreachable_fast() -> None:
    port = free_port()
    client = LoopClient(f"http://127.0.0.1:{port}/mcp", name="web", connect_timeout=10)
    started = time.monotonic()
    with pytest.raises(Unreachable, match="failed to start"):
        client.connect()
    assert time.monotonic() - started < 10
    assert client.status == "failed" and client.last_error
    client.close()


# -- start failures --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("command", "words", "stderr"),
    [
        (["no-such-binary-toolbench"], "not found: looked on PATH", None),  # issue 37
        (script("exit_server.py"), "Connection closed", "missing configuration file"),
        (script("garbage_server.py"), "did not answer as an MCP server", "wrong stream"),
        (script("silent_server.py"), "no answer within connect_timeout=3 s", "staying quiet"),
    ],
)
def test_start_failures_are_unreachable_within_connect_timeout(
    command: list[str], words: str, stderr: str | None
) -> None:
    # Only the silent server needs the timeout; the others fail on their own, and a generous
    # bound keeps a slow interpreter start on a loaded machine from timing them out first.
    limit = 3.0 if "silent" in command[-1] else 30.0
    client = LoopClient(command, name="broken", connect_timeout=limit)
    started = time.monotonic()
    with pytest.raises(Unreachable) as info:
        client.connect()
    assert time.monotonic() - started < limit + 12.0  # 5x the 3 s one; a hang never ends
    message = str(info.value)
    assert "'broken'" in message and command[-1] in message and words in message
    if stderr:
        assert stderr in message and stderr in client.stderr_tail()
    assert client.status == "failed" and client.last_error == info.value.detail
    # A failed server is retried by a later call, but never inside the backoff window after
    # a failed attempt: there a call fails fast and says when. Which of the two this call
    # meets depends on the machine's speed; either way nothing was sent.
    with pytest.raises(Unreachable) as again:
        client.call_sync(ToolId("broken", "x"), {})
    assert again.value.disposition is Disposition.DID_NOT_HAPPEN
    assert "next reconnect attempt" in str(again.value) or words in str(again.value)
    client.close()
    assert client.status == "closed"


@pytest.mark.parametrize(("mode", "methods"), [
    ("fast", ["method initialize", "method server/discover"]),
    ("legacy", ["method initialize"]),
])
def test_sdk_version_check_is_a_refused_handshake(mode: str, methods: list[str]) -> None:
    """The SDK rejects an unknown version in ``initialize`` (a RuntimeError raised there):
    fast mode then tries the SDK's auto mode; a single mode reports it."""
    async def main() -> tuple[str, str]:
        client = McpClient(script("old_version_server.py"), name="old", protocol_mode=mode)
        try:
            with pytest.raises(Unreachable) as info:
                await client.aconnect()
            return str(info.value), client.stderr_tail()
        finally:
            await client.aclose()

    message, log = anyio.run(main)
    assert "Unsupported protocol version" in message and "1999-01-01" in message
    assert log.splitlines()[:len(methods)] == methods
    if mode == "legacy":
        assert "server/discover" not in log


def test_call_after_close_is_unreachable() -> None:
    client = LoopClient(make_mem_server(), name="mem")
    client.connect()
    client.close()
    with pytest.raises(Unreachable, match="closed"):
        client.call_sync(tid("add", "mem"), {"a": 1, "b": 1})
    client.close()  # twice is fine


# -- lost connection -------------------------------------------------------------------------
def test_lost_connection_then_one_reconnect() -> None:
    with LoopClient(ECHO, name="echo") as client:
        first = client.call_sync(tid("whoami"), {}).structured
        with pytest.raises(TimedOut, match="connection was lost"):
            client.call_sync(tid("die"), {})
        deadline = time.monotonic() + 5
        while client.status != "lost" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client.status == "lost" and "lost" in (client.last_error or "")
        second = client.call_sync(tid("whoami"), {}).structured
        assert client.status == "connected"
        assert first and second and first["pid"] != second["pid"]


def test_lost_connection_reconnect_failure_is_unreachable(tmp_path: Path) -> None:
    flag = tmp_path / "once"
    wrapper = tmp_path / "once.py"
    wrapper.write_text(textwrap.dedent(f"""
        import os, runpy, sys
        if os.path.exists({str(flag)!r}):
            sys.exit("second start refused")
        open({str(flag)!r}, "w").close()
        sys.argv = [{str(SERVERS / "echo_server.py")!r}]
        runpy.run_path(sys.argv[0], run_name="__main__")
    """))
    with LoopClient([sys.executable, str(wrapper)], name="echo", connect_timeout=30) as client:
        with pytest.raises(TimedOut):
            client.call_sync(tid("die"), {})
        with pytest.raises(Unreachable, match="lost and reconnecting failed") as info:
            client.call_sync(tid("echo"), {"text": "x"})
        assert "second start refused" in str(info.value)
        assert client.status == "failed"


# -- in process ------------------------------------------------------------------------------
def test_in_process_call_and_info() -> None:
    with LoopClient(make_mem_server(), name="mem") as client:
        assert client.server_info["server_name"] == "mem"
        assert client.call_sync(tid("add", "mem"), {"a": 1, "b": 1}).structured == {"result": 2}
        with pytest.raises(TimedOut):
            client.call_sync(tid("slow", "mem"), {"seconds": 3}, timeout=0.2)


@pytest.mark.parametrize(
    ("code", "error"),
    [(-32601, Refused), (-32602, Refused), (-32600, Refused), (-32700, Refused),
     (-32603, TimedOut), (-1, TimedOut)],
)
def test_mcp_error_codes_map_to_the_table(code: int, error: type[Exception]) -> None:
    with LoopClient(code_server(), name="codes") as client:
        with pytest.raises(error, match=f"code for c_{code}"):
            client.call_sync(ToolId("codes", f"c_{code}"), {})
        assert client.status == "connected"


def test_lying_server_is_malformed() -> None:
    with LoopClient(script("liar_server.py"), name="liar") as client:
        info = client.server_info
        assert {k: info[k] for k in ("protocol", "server_name", "server_version")} == {
            "protocol": "2025-06-18", "server_name": "liar", "server_version": "0.0.1"
        }
        assert client.call_sync(ToolId("liar", "ok"), {}).text == "fine"
        with pytest.raises(Malformed, match="not a valid tool result"):
            client.call_sync(ToolId("liar", "bad_shape"), {})
        with pytest.raises(Malformed, match="does not match the output schema"):
            client.call_sync(ToolId("liar", "bad_schema"), {})
        assert client.call_sync(ToolId("liar", "ok"), {}).text == "fine"


def test_pagination_follows_every_cursor() -> None:
    pages = {None: ("p2", ["a", "b"]), "p2": ("p3", ["c"]), "p3": (None, ["d", "e"])}
    requests: list[str | None] = []

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        cursor = params.cursor if params else None
        requests.append(cursor)
        nxt, names = pages[cursor]
        tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in names]
        return types.ListToolsResult(tools=tools, next_cursor=nxt)

    with LoopClient(Server("pager", on_list_tools=list_tools), name="pager") as client:
        assert [s.name for s in client.list_tools_sync("pager")] == ["a", "b", "c", "d", "e"]
        assert [s.name for s in client.list_tools_sync("pager")] == ["a", "b", "c", "d", "e"]
    assert requests == [None, "p2", "p3", None, "p2", "p3"]  # no cache served the second list


def test_endless_cursor_is_malformed() -> None:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[], next_cursor="again")

    client = LoopClient(Server("loop", on_list_tools=list_tools), name="loop")
    with client, pytest.raises(Malformed, match="repeated"):
        client.list_tools_sync("loop")


@pytest.mark.parametrize("where", ["in-process", "stdio"])
def test_tools_list_changed_triggers_listener(where: str) -> None:
    target: Any = make_echo_inprocess() if where == "in-process" else ECHO
    with LoopClient(target, name="echo") as client:
        changed = threading.Event()
        fresh: list[list[str]] = []

        async def on_change(server: str) -> None:
            assert server == "echo"
            fresh.append([s.name for s in await client.list_tools("echo")])
            changed.set()

        client.add_tools_changed_listener(on_change)
        before = {s.name for s in client.list_tools_sync("echo")}
        added = client.call_sync(tid("grow"), {}).structured
        assert added is not None
        assert changed.wait(10), "the listener never ran"
        assert added["result"] in fresh[-1] and added["result"] not in before


def make_echo_inprocess() -> MCPServer:
    import importlib.util

    spec = importlib.util.spec_from_file_location("echo_server_mod", SERVERS / "echo_server.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server  # type: ignore[no-any-return]


# -- interrupts and shutdown -----------------------------------------------------------------
@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="SIGINT reaches the main thread only")
@pytest.mark.usefixtures("sigint_raises")
def test_sigint_during_sync_call_cancels_and_connection_survives(echo: LoopClient) -> None:
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            echo.call_sync(tid("slow"), {"seconds": 10})
    finally:
        timer.cancel()
    assert time.monotonic() - started < 3
    assert echo.status == "connected"
    assert echo.call_sync(tid("echo"), {"text": "after"}).text == "after"


def test_interpreter_exit_ends_stdio_children(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        import toolbench as tb
        bench = tb.Bench()  # McpClient is async; the Bench is the face closed at exit
        bench.connect("echo", {ECHO!r})
        print(bench.call("tool://echo/whoami", {{}}).structured["pid"], flush=True)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 5
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    assert not alive, "the stdio server outlived the interpreter"


def test_hostile_output_schema_pattern_cannot_stall_the_loop() -> None:
    """The SDK re-checks structured content with Python's backtracking ``re``; ours uses re2.

    ``(a+)+$`` against 40 a's and a "b" would take the SDK's check hours; the call must come
    back at once as Malformed (the tool ran; its answer breaks the declared schema), and a
    conforming answer must still pass.
    """
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "(a+)+$"}},
              "required": ["s"]}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name="say", input_schema={"type": "object"}, output_schema=schema)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = str((params.arguments or {})["s"])
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content={"s": text})

    server = Server("patterns", on_list_tools=list_tools, on_call_tool=call_tool)
    with LoopClient(server, name="patterns", timeout=10) as client:
        _preload.start().result(timeout=120)  # jsonschema's first import is not timed
        started = time.perf_counter()
        with pytest.raises(Malformed, match="output schema") as caught:
            client.call_sync(ToolId("patterns", "say"), {"s": "a" * 40 + "b"})
        assert time.perf_counter() - started < 5.0
        assert caught.value.disposition is Disposition.LANDED
        assert client.call_sync(ToolId("patterns", "say"), {"s": "aaaa"}).structured == {
            "s": "aaaa"}
