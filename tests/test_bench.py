"""The Bench end to end: real in-process MCP servers, a ToolBox, a Toolset, stdio demo servers."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server import Server
from mcp.server.mcpserver import Context, MCPServer

import toolbench as tb
from toolbench._bench.journal.record import COLUMNS
from toolbench._core.schema import preload as _preload

RECORD_COLUMNS = ["call_id", "batch", "started", "server", "tool", "name", "arguments", "ok",
                  "disposition", "error_type", "error", "latency_ms", "text", "structured",
                  "content", "provenance", "kind", "attempts", "queued_ms"]


def make_server(label: str, delay: float = 0.0) -> MCPServer:
    srv = MCPServer(f"test-{label}")

    @srv.tool()
    async def echo(text: str) -> str:
        """Echo the text back, tagged with the server's label."""
        if delay:
            await anyio.sleep(delay)
        return f"{label}:{text}"

    @srv.tool()
    def add(a: int, b: int = 1) -> int:
        """Add two integers."""
        return a + b

    @srv.tool()
    def fail(reason: str) -> str:
        """Always fails."""
        raise ValueError(reason)

    return srv


@tb.tool(server="ledger")
def echo(text: str) -> str:
    """Echo, reversed."""
    return text[::-1]


@pytest.fixture
def bench() -> Iterator[tb.Bench]:
    with tb.Bench() as b:
        yield b


def test_connect_in_process_and_toolbox(bench: tb.Bench) -> None:
    assert bench.connect("mem", make_server("mem")) == 3
    assert bench.add(tb.ToolBox(echo)) == ["ledger"]
    servers = bench.servers
    assert list(servers.columns) == ["name", "transport", "status", "tools", "protocol",
                                     "server_name", "server_version", "title", "description",
                                     "instructions", "capabilities", "icons", "website",
                                     "destination", "error", "stderr_tail", "warnings", "auth"]
    rows = servers.set_index("name")
    assert rows.loc["mem", "transport"] == "in-process"
    assert rows.loc["ledger", "transport"] == "toolbox"
    assert rows.loc["mem", "status"] == "connected" and rows.loc["mem", "tools"] == 3
    catalog = bench.catalog()
    assert list(catalog.columns) == ["name", "server", "tool", "title", "description",
                                     "parameters", "required", "input_schema", "output_schema",
                                     "annotations", "icons", "meta", "destination", "warnings",
                                     "pin", "ui", "visibility", "fresh_until"]
    assert sorted(catalog["name"]) == ["ledger-echo", "mem-add", "mem-echo", "mem-fail"]
    add_row = catalog.set_index("name").loc["mem-add"]
    assert add_row["parameters"] == ["a", "b"] and add_row["required"] == ["a"]
    assert list(bench.catalog(server="ledger")["name"]) == ["ledger-echo"]
    assert list(bench.catalog(search="INTEGERS")["name"]) == ["mem-add"]


def test_call_by_name_reference_mapping_and_keywords(bench: tb.Bench) -> None:
    bench.connect("mem", make_server("mem"))
    assert bench.call("mem-echo", text="hi").data == {"result": "mem:hi"} or \
        bench.call("mem-echo", text="hi").text == "mem:hi"
    r = bench.call("tool://mem/add", {"a": 2, "b": 5})
    assert r.data["result"] == 7 if isinstance(r.data, dict) else r.data == 7
    with pytest.raises(TypeError, match="not both"):
        bench.call("mem-add", {"a": 1}, b=2)


def test_a_call_looks_its_tool_up_and_never_scans_the_servers_tools(
        bench: tb.Bench, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call once listed every tool of its server to find its own entry (for MCP Apps'
    view): ~1 ms per call on a 10,000-tool server. The entry is now looked up by name."""
    bench.connect("mem", make_server("mem"))
    scans: list[object] = []
    listed = bench.pegboard.entries
    monkeypatch.setattr(bench.pegboard, "entries",
                        lambda *a: scans.append(a) or listed(*a))
    assert bench.call("mem-add", {"a": 2, "b": 5}).data["result"] == 7
    assert bench.call("tool://mem/add", {"a": 2, "b": 5}).data["result"] == 7
    assert scans == [("mem",)]  # only the tool:// reference's own resolution


def test_tool_parameter_called_name_and_timeout_go_through() -> None:
    srv = MCPServer("named")

    @srv.tool()
    def greet(name: str, timeout: int = 0) -> str:
        return f"hello {name} {timeout}"

    with tb.Bench() as bench:
        bench.connect("n", srv)
        assert "hello ada 0" in bench.call("n-greet", name="ada").text
        assert "hello ada 5" in bench.call("n-greet", {"name": "ada", "timeout": 5}).text


def test_records_shape_and_success_fields(bench: tb.Bench) -> None:
    bench.connect("mem", make_server("mem"))
    bench.call("mem-add", a=1)
    df = bench.records
    assert list(df.columns) == RECORD_COLUMNS == list(COLUMNS)
    row = df.iloc[0]
    assert row["ok"] is True or bool(row["ok"]) is True
    assert row["disposition"] == "landed"
    assert row["error_type"] is None and row["error"] is None
    assert row["batch"] is None
    assert row["server"] == "mem" and row["tool"] == "add" and row["name"] == "mem-add"
    assert row["arguments"] == {"a": 1}
    assert str(row["started"].tz) == "UTC"
    assert row["latency_ms"] > 0
    assert isinstance(row["content"], list)


def test_schema_refusal_names_field_and_rule_and_nothing_is_sent(bench: tb.Bench) -> None:
    calls: list[str] = []
    srv = MCPServer("strict")

    @srv.tool()
    def count(n: int) -> int:
        calls.append("sent")
        return n

    bench.connect("s", srv)
    with pytest.raises(tb.Refused) as info:
        bench.call("s-count", n="three")
    assert "'n'" in str(info.value) and "type" in str(info.value)
    with pytest.raises(tb.Refused, match="required"):
        bench.call("s-count")
    assert calls == []
    df = bench.records
    assert list(df["error_type"]) == ["Refused", "Refused"]
    assert list(df["disposition"]) == ["did_not_happen", "did_not_happen"]


def test_unknown_name_suggests_close_names(bench: tb.Bench) -> None:
    bench.connect("mem", make_server("mem"))
    with pytest.raises(tb.Unreachable, match="did you mean 'mem-echo'"):
        bench.call("mem-ecko", text="x")
    with pytest.raises(tb.Unreachable, match="tool://server/tool"):
        bench.call("tool://mem", text="x")
    with pytest.raises(TypeError, match="a tool name is a str"):
        bench.call(3)  # type: ignore[arg-type]


def test_tool_failure_is_recorded_then_raised(bench: tb.Bench) -> None:
    bench.connect("mem", make_server("mem"))
    with pytest.raises(tb.ToolFailed) as info:
        bench.call("mem-fail", reason="nope")
    assert info.value.disposition is tb.Disposition.LANDED
    row = bench.records.iloc[-1]
    assert row["ok"] == False and row["error_type"] == "ToolFailed"  # noqa: E712
    assert row["disposition"] == "landed"


def test_timeout_is_timed_out_in_doubt(bench: tb.Bench) -> None:
    bench.connect("slow", make_server("slow", delay=5.0))
    t0 = time.monotonic()
    with pytest.raises(tb.TimedOut):
        bench.call("slow-echo", text="x", timeout=0.3)
    assert time.monotonic() - t0 < 4.0
    assert bench.records.iloc[-1]["disposition"] == "in_doubt"
    with pytest.raises(ValueError, match="positive number"):
        bench.call("slow-echo", text="x", timeout=-1)


def test_async_face_from_a_foreign_loop(bench: tb.Bench) -> None:
    bench.connect("mem", make_server("mem"))

    async def main() -> str:
        result = await bench.acall("mem-echo", text="async")
        return result.text

    assert asyncio.run(main()) == "mem:async"


def test_tool_handles(bench: tb.Bench) -> None:
    bench.connect("mem", make_server("mem"))
    handles = bench.tools
    assert "mem-add" in handles and len(handles) == 3
    assert handles._ipython_key_completions_() == ["mem-add", "mem-echo", "mem-fail"]
    add = handles["mem-add"]
    assert add.name == "mem-add" and add.schema["required"] == ["a"]
    assert "Add two integers." in (add.__doc__ or "") and "a: integer (required)" in (add.__doc__
                                                                                     or "")
    assert "8" in add(a=7).text
    assert "9" in asyncio.run(add.acall({"a": 8})).text
    with pytest.raises(tb.Unreachable):
        handles["nope"]


def test_compare_runs_every_server_and_flattens_structured(bench: tb.Bench) -> None:
    bench.connect("a", make_server("a"))
    bench.connect("b", make_server("b"))
    bench.add(tb.ToolBox(echo))
    df = bench.compare("echo", [{"text": "x"}, {"text": "yz"}])
    assert len(df) == 6
    assert list(df.columns[:12]) == ["case", "server", "name", "arguments", "ok", "disposition",
                                     "error_type", "error", "latency_ms", "text", "structured",
                                     "call_id"]
    got = {(int(r.case), r.server): r.text for r in df.itertuples()}
    assert got[(0, "a")] == "a:x" and got[(1, "b")] == "b:yz" and got[(1, "ledger")] == "zy"
    assert "structured.result" in df.columns
    assert df["batch"].nunique() == 1 if "batch" in df else True
    records = bench.records
    assert set(df["call_id"]) <= set(records["call_id"])
    assert records.set_index("call_id").loc[df["call_id"], "batch"].nunique() == 1
    only_a = bench.compare("echo", {"text": "q"}, servers=["a"])
    assert list(only_a["server"]) == ["a"]
    keywords = bench.compare("a-echo", text="kw")
    assert sorted(keywords["server"]) == ["a", "b", "ledger"]


def test_compare_failure_is_a_row_not_an_exception(bench: tb.Bench) -> None:
    bench.connect("a", make_server("a"))
    bench.connect("b", make_server("b"))
    df = bench.compare("fail", reason="x")
    assert list(df["ok"]) == [False, False]
    assert set(df["error_type"]) == {"ToolFailed"}
    with pytest.raises(tb.Unreachable, match="no connected server offers"):
        bench.compare("nothing-like-it", text="x")


def test_compare_slow_server_does_not_hold_back_fast_one(bench: tb.Bench) -> None:
    bench.connect("slow", make_server("slow", delay=0.4))
    bench.connect("fast", make_server("fast", delay=0.0))
    cases = [{"text": str(i)} for i in range(8)]
    df = bench.compare("echo", cases, concurrency=1)
    fast_done = df[df.server == "fast"]["latency_ms"].sum()
    slow_done = df[df.server == "slow"]["latency_ms"].sum()
    # The slow lane takes >= 8 x 400 ms in series; the fast lane never waits for it.
    assert slow_done > 8 * 350
    assert fast_done < 8 * 350


def test_map_records_shape_concurrency_and_batch(bench: tb.Bench) -> None:
    bench.connect("slow", make_server("slow", delay=0.2))
    cases = [{"text": str(i)} for i in range(16)]
    t0 = time.monotonic()
    df = bench.map("slow-echo", cases, concurrency=8, progress=False)
    elapsed = time.monotonic() - t0
    assert list(df.columns) == RECORD_COLUMNS
    assert list(df["text"]) == [f"slow:{i}" for i in range(16)]
    assert df["batch"].nunique() == 1 and df["batch"].iloc[0] is not None
    assert [p["case"] for p in df["provenance"]] == list(range(16))
    assert elapsed < 16 * 0.2  # concurrent, not one after another
    assert len(bench.records) == 16


def test_map_failures_are_rows(bench: tb.Bench) -> None:
    bench.connect("mem", make_server("mem"))
    df = bench.map("mem-add", [{"a": 1}, {"a": "bad"}, [1, 2]], progress=False)
    assert list(df["ok"]) == [True, False, False]
    assert list(df["error_type"]) == [None, "Refused", "Refused"]


def test_map_resume_skips_what_succeeded(tmp_path: Path) -> None:
    journal = tmp_path / "calls.sqlite"
    seen: list[int] = []
    threes: list[int] = []
    srv = MCPServer("counter")

    @srv.tool()
    def square(n: int) -> int:
        seen.append(n)
        if n == 3:
            threes.append(n)
        if n == 3 and len(threes) == 1:
            raise ValueError("first time fails")
        return n * n

    cases = [{"n": i} for i in range(5)]
    with tb.Bench(journal=journal) as bench:
        bench.connect("c", srv)
        first = bench.map("c-square", cases, progress=False)
        assert list(first["ok"]) == [True, True, True, False, True]
    seen.clear()
    with tb.Bench(journal=journal) as bench:
        assert len(bench.records) == 5  # loaded back from the journal
        bench.connect("c", srv)
        second = bench.map("c-square", cases, progress=False, resume=True)
        assert seen == [3]  # only the failed case ran again
        assert list(second["ok"]) == [True] * 5
        assert len(bench.records) == 6


def test_journal_round_trip_and_bad_path(tmp_path: Path) -> None:
    journal = tmp_path / "j.sqlite"
    with tb.Bench(journal=journal) as bench:
        bench.connect("mem", make_server("mem"))
        bench.call("mem-echo", text="<b>", provenance={"run": "r1"})
        with pytest.raises(tb.ToolFailed):
            bench.call("mem-fail", reason="x")
        before = bench.records
    with tb.Bench(journal=journal) as again:
        after = again.records
    assert list(after["call_id"]) == list(before["call_id"])
    assert after.iloc[0]["provenance"]["run"] == "r1"
    assert after.iloc[0]["arguments"] == {"text": "<b>"}
    assert after.iloc[1]["error_type"] == "ToolFailed" and after.iloc[1]["error"]
    assert list(after.columns) == RECORD_COLUMNS
    with pytest.raises(ValueError, match="journal"):
        tb.Bench(journal=tmp_path / "missing-dir" / "x.sqlite")
    not_db = tmp_path / "text.sqlite"
    not_db.write_text("this is not a database " * 100)
    with pytest.raises(ValueError, match="journal"):
        tb.Bench(journal=not_db)


def test_provenance_reaches_the_server_meta_and_the_record(bench: tb.Bench) -> None:
    srv = MCPServer("meta")

    @srv.tool()
    def who(ctx: Context) -> str:
        meta = ctx.request_context.meta
        data = meta.model_dump() if meta is not None and hasattr(meta, "model_dump") else meta
        return json.dumps(data, default=str)

    bench.connect("m", srv)
    r = bench.call("m-who", provenance=tb.Provenance(run="exp-1", agent="me"))
    assert "exp-1" in r.text and "toolbench/provenance" in r.text
    assert bench.records.iloc[-1]["provenance"] == {"run": "exp-1", "agent": "me"}


@pytest.mark.slow
def test_failed_connect_leaves_failed_row_and_disconnect_removes_it(bench: tb.Bench) -> None:
    with pytest.raises(tb.Unreachable) as info:
        bench.connect("ghost", "definitely-not-a-binary-xyz --flag")
    assert "ghost" in str(info.value)
    row = bench.servers.set_index("name").loc["ghost"]
    assert row["status"] == "failed" and row["error"]
    bench.disconnect("ghost")
    assert bench.servers.empty
    with pytest.raises(KeyError, match="no server 'ghost'"):
        bench.disconnect("ghost")


def test_connecting_twice_and_bad_targets(bench: tb.Bench) -> None:
    bench.connect("mem", make_server("mem"))
    with pytest.raises(ValueError, match="already connected"):
        bench.connect("mem", make_server("again"))
    with pytest.raises(TypeError, match="cannot connect"):
        bench.connect("x", 42)
    with pytest.raises(ValueError):
        bench.connect("y", "ftp://example.com/mcp")
    with pytest.raises(ValueError):
        bench.connect("bad name", make_server("z"))


def test_egress_refuses_remote_connect_before_traffic() -> None:
    with tb.Bench(egress=["allowed.example"]) as bench:
        with pytest.raises(tb.Unreachable, match="egress refused"):
            bench.connect("web", "http://127.0.0.1:9/mcp")
        assert bench.servers.set_index("name").loc["web", "status"] == "failed"
        bench.connect("mem", make_server("mem"))  # LOCAL is never judged
        assert bench.call("mem-add", a=1).data is not None


def test_name_collision_is_refused_whole(bench: tb.Bench) -> None:
    bench.connect("mem", make_server("mem"), namespace="")
    with pytest.raises(tb.NameCollision):
        bench.connect("other", make_server("other"), namespace="")
    assert list(bench.servers["name"]) == ["mem"]
    assert bench.pegboard.tool_count() == 3


@pytest.mark.slow
def test_secrets_never_appear(bench: tb.Bench, tmp_path: Path) -> None:
    secret_env, secret_header = "s3cr3t-env-value-123", "s3cr3t-header-value-456"
    with pytest.raises(tb.Unreachable):
        bench.connect("ghost", ["no-such-binary-abc"], env={"API_KEY": secret_env})
    with pytest.raises(tb.Unreachable):
        bench.connect("web", "http://127.0.0.1:9/mcp", headers={"Authorization": secret_header},
                      connect_timeout=3)
    shown = bench.servers.to_string() + repr(bench) + str(bench._repr_mimebundle_())
    assert secret_env not in shown and secret_header not in shown


def test_close_marks_rows_closed_and_refuses_more(tmp_path: Path) -> None:
    bench = tb.Bench()
    bench.connect("mem", make_server("mem"))
    bench.close()
    bench.close()
    assert list(bench.servers["status"]) == ["closed"]
    with pytest.raises(RuntimeError, match="closed"):
        bench.call("mem-add", a=1)


def test_bad_constructor_values() -> None:
    with pytest.raises(ValueError, match="timeout"):
        tb.Bench(timeout=0)
    with pytest.raises(ValueError, match="connect_timeout"):
        tb.Bench(connect_timeout=float("nan"))
    with pytest.raises(TypeError, match="hosts are strings"):
        tb.Bench(egress=[1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="separator"):
        tb.Bench(separator="::")


@pytest.mark.slow
def test_load_config_connects_all_and_shows_failures(bench: tb.Bench, tmp_path: Path) -> None:
    server = Path(__file__).parent / "servers" / "echo_server.py"
    config = {"mcpServers": {
        "one": {"command": sys.executable, "args": [str(server)]},
        "two": {"command": "${PYTHON_FOR_TEST}", "args": [str(server)]},
        "broken": {"command": "no-such-binary-for-toolbench"},
    }}
    os.environ["PYTHON_FOR_TEST"] = sys.executable
    try:
        with pytest.warns(tb.ConfigWarning, match="failed to start"):  # issue 37, item 4
            df = bench.load_config(config).set_index("name")
    finally:
        del os.environ["PYTHON_FOR_TEST"]
    assert df.loc["one", "status"] == "connected" and df.loc["two", "status"] == "connected"
    assert df.loc["broken", "status"] == "failed" and "no-such-binary" in df.loc["broken", "error"]
    assert df.loc["one", "transport"] == "stdio" and df.loc["one", "tools"] > 0


def test_long_work_shows_a_progress_bar_short_work_stays_quiet(
        bench: tb.Bench, capfd: pytest.CaptureFixture[str]) -> None:
    bench.connect("a", make_server("a"))
    bench.connect("b", make_server("b"))
    bench.compare("echo", [{"text": "x"}])
    assert "compare echo" not in capfd.readouterr().err
    bench.compare("echo", [{"text": str(i)} for i in range(12)])  # 24 calls
    err = capfd.readouterr().err
    assert "compare echo" in err and "24/24" in err
    bench.map("a-echo", [{"text": str(i)} for i in range(3)], progress=True)
    assert "map a-echo" in capfd.readouterr().err


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="SIGINT reaches the main thread only")
@pytest.mark.slow
@pytest.mark.usefixtures("sigint_raises")
def test_interrupted_connect_ends_its_child(bench: tb.Bench) -> None:
    silent = Path(__file__).parent / "servers" / "silent_server.py"
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            bench.connect("quiet", [sys.executable, str(silent)], connect_timeout=60)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20
    assert "quiet" not in list(bench.servers["name"])
    # The autouse fixture fails this test if the silent server's process outlived it.


# -- helper C: failed rows are replaced, and keep their stderr --------------------------------

@pytest.mark.slow
def test_failed_row_keeps_its_stderr_tail_and_connect_replaces_it(bench: tb.Bench) -> None:
    exits = Path(__file__).parent / "servers" / "exit_server.py"
    with pytest.raises(tb.Unreachable):
        bench.connect("cfg", [sys.executable, str(exits)])
    row = bench.servers.set_index("name").loc["cfg"]
    assert row["status"] == "failed"
    assert "missing configuration file settings.toml" in row["stderr_tail"]
    assert bench.connect("cfg", make_server("cfg")) == 3
    row = bench.servers.set_index("name").loc["cfg"]
    assert row["status"] == "connected" and row["stderr_tail"] == "" and row["error"] is None
    assert bench.call("cfg-echo", text="x").text == "cfg:x"


@pytest.mark.slow
def test_connect_replaces_a_server_that_failed_after_connecting(
        bench: tb.Bench, tmp_path: Path) -> None:
    flag, wrapper = tmp_path / "once", tmp_path / "once.py"
    echo_server = Path(__file__).parent / "servers" / "echo_server.py"
    wrapper.write_text(
        "import os, runpy, sys\n"
        f"if os.path.exists({str(flag)!r}):\n"
        "    sys.exit('second start refused')\n"
        f"open({str(flag)!r}, 'w').close()\n"
        f"sys.argv = [{str(echo_server)!r}]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    assert bench.connect("flaky", [sys.executable, str(wrapper)]) > 0
    with pytest.raises(tb.TimedOut):
        bench.call("flaky-die")
    with pytest.raises(tb.Unreachable, match="second start refused"):
        bench.call("flaky-echo", text="x")
    assert bench.servers.set_index("name").loc["flaky", "status"] == "failed"
    assert bench.connect("flaky", make_server("again")) == 3  # no "already connected"
    assert sorted(bench.pegboard.names_for_server("flaky")) == [
        "flaky-add", "flaky-echo", "flaky-fail"]
    assert bench.call("flaky-echo", text="y").text == "again:y"
    with pytest.raises(ValueError, match="already connected"):
        bench.connect("flaky", make_server("third"))


def test_closed_says_whether_close_has_run() -> None:
    bench = tb.Bench()
    assert bench.closed is False
    bench.close()
    assert bench.closed is True
    with pytest.raises(RuntimeError, match="closed"):
        bench.connect("late", ["python", "-c", "pass"])


def test_argument_checking_counts_inside_the_calls_timeout() -> None:
    """A check that uses up the call's timeout leaves nothing to send: did_not_happen."""
    import mcp_types as types
    from mcp.server import Server

    calls: list[str] = []
    defs: dict[str, Any] = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"},
                                                {"$ref": f"#/$defs/d{i + 1}"}]}
                            for i in range(30)}
    defs["d30"] = {"type": "string"}
    schema = {"type": "object", "$defs": defs, "description": f"slow {time.monotonic_ns()}",
              "properties": {"a": {"$ref": "#/$defs/d0"}}}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="slow", input_schema=schema)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        calls.append(params.name)
        return types.CallToolResult(content=[types.TextContent(type="text", text="ran")])

    with tb.Bench() as bench:
        bench.connect("slowcheck", Server("slowcheck", on_list_tools=list_tools,
                                          on_call_tool=call_tool))
        _preload.start().result(timeout=120)  # jsonschema's first import is not timed
        started = time.perf_counter()
        with pytest.raises(tb.Unreachable, match="checking the arguments") as caught:
            bench.call("slowcheck-slow", {"a": 1}, timeout=0.05)
        assert time.perf_counter() - started < 5.0
        assert caught.value.disposition is tb.Disposition.DID_NOT_HAPPEN
        assert calls == []
        assert bench.records.iloc[-1]["disposition"] == "did_not_happen"


# -- call(..., check=False) --------------------------------------------------------------------
def _flag_server(seen: list[dict[str, Any]]) -> Server[Any]:
    schema = {"type": "object", "properties": {"flag": {"type": "boolean"},
                                               "check": {"type": "string"}},
              "required": ["flag"]}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="flag", input_schema=schema)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        seen.append(dict(params.arguments or {}))
        return types.CallToolResult(content=[types.TextContent(
            type="text", text=json.dumps(params.arguments))])

    return Server("flags", on_list_tools=list_tools, on_call_tool=call_tool)


def test_check_false_sends_arguments_that_fail_the_schema_and_the_record_says_so() -> None:
    seen: list[dict[str, Any]] = []
    with tb.Bench() as bench:
        bench.connect("f", _flag_server(seen))
        with pytest.raises(tb.Refused, match="flag"):  # checked by default: nothing is sent
            bench.call("f-flag", flag=None)
        assert seen == []
        result = bench.call("f-flag", flag=None, check=False)  # a null for a boolean
        assert json.loads(result.text) == {"flag": None}
        assert seen == [{"flag": None}]
        record = bench.records.iloc[-1]
        assert record["ok"] and record["arguments"] == {"flag": None}
        assert record["provenance"]["check"] is False
        assert "flag" in record["provenance"]["schema_error"]
        bench.call("f-flag", {}, check=False)  # a missing required field goes out too
        assert seen[-1] == {}
        bench.call("f-flag", flag=True, check=False)  # valid anyway: no schema error
        assert bench.records.iloc[-1]["provenance"]["schema_error"] is None
        assert "check" not in (bench.records.iloc[0]["provenance"] or {})  # checked calls


def test_check_false_still_applies_the_serialisation_rules_and_is_reserved() -> None:
    seen: list[dict[str, Any]] = []
    with tb.Bench() as bench:
        bench.connect("f", _flag_server(seen))
        with pytest.raises(tb.Refused, match=r"NaN|finite"):
            bench.call("f-flag", flag=float("nan"), check=False)
        with pytest.raises(TypeError, match="check is True or False"):
            bench.call("f-flag", flag=True, check="no")  # type: ignore[arg-type]
        bench.call("f-flag", {"flag": True, "check": "a tool parameter"})
        assert seen == [{"flag": True, "check": "a tool parameter"}]
