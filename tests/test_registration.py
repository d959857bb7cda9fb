"""Registering servers never goes all-or-nothing by accident.

A tool with a broken or repeated name is skipped and shown in ``servers.warnings``; the rest
of its server stays usable. In ``load_config`` every server succeeds or fails on its own,
whatever the exception; the only all-or-nothing step is checking the file, before anything
starts. Real stdio child processes throughout.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench._bench.servers import servers as _connecting
from toolbench._bench.servers.config import ConfigWarning

SERVERS = Path(__file__).parent / "servers"
ECHO = SERVERS / "echo_server.py"

BAD_NAMES = '''
import sys
import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

NAMES = sys.argv[1].split(",")

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name=n, description="tool " + n, input_schema={"type": "object"})
        for n in NAMES])

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text="called " + params.name)])

server = Server("badnames", on_list_tools=list_tools, on_call_tool=call_tool)

async def main():
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())

anyio.run(main)
'''


@pytest.fixture
def bad_names(tmp_path: Path) -> Path:
    script = tmp_path / "bad_names.py"
    script.write_text(BAD_NAMES)
    return script


@pytest.fixture
def bench() -> Iterator[tb.Bench]:
    with tb.Bench() as b:
        yield b


def stdio(script: Path, *args: str, **extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(script), *args], **extra}


@pytest.mark.slow
def test_broken_and_repeated_tool_names_are_skipped_and_shown(
        bench: tb.Bench, bad_names: Path) -> None:
    names = ",".join(["ok", "get weather", "dup", "dup", "a/b", "x" * 200])
    assert bench.connect("bad", [sys.executable, str(bad_names), names]) == 1
    row = bench.servers.set_index("name").loc["bad"]
    assert row["status"] == "connected" and row["tools"] == 1
    invalid, repeated = row["warnings"]
    assert "skipped 3 tools" in invalid and "MCP tool-name rule" in invalid
    assert "'get weather'" in invalid and "'a/b'" in invalid and "x" * 81 not in invalid
    assert "skipped 1 tool" in repeated and "'dup'" in repeated and "more than once" in repeated
    assert list(bench.catalog()["name"]) == ["bad-ok"]
    assert bench.call("bad-ok").text == "called ok"
    with pytest.raises(tb.Unreachable):
        bench.call("bad-dup")


@pytest.mark.slow
def test_load_config_isolates_every_server_whatever_the_exception(
        bench: tb.Bench, bad_names: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = _connecting.open_connection

    def open_or_break(name: str, target: Any, options: Any, *listeners: Any) -> Any:
        if name == "buggy":  # a bug in some layer: not a ToolError, not even a ValueError
            raise RuntimeError("a bug while building the connection")
        return real_open(name, target, options, *listeners)

    monkeypatch.setattr(_connecting, "open_connection", open_or_break)
    config = {"mcpServers": {
        "good": stdio(ECHO),
        "mixed": stdio(bad_names, "ok,bad name,ok"),
        # Two servers that both want namespace "shared" and both offer "echo": one loses.
        "first": stdio(ECHO, namespace="shared"),
        "second": stdio(ECHO, namespace="shared"),
        "buggy": stdio(ECHO),
        "missing": {"command": "no-such-binary-for-toolbench-registration"},
    }}
    with pytest.warns(tb.ConfigWarning, match="failed to start"):  # issue 37, item 4
        df = bench.load_config(config).set_index("name")
    assert sorted(df.index) == ["buggy", "first", "good", "missing", "mixed", "second"]
    assert df.loc["good", "status"] == "connected" and df.loc["good", "tools"] > 0
    assert df.loc["mixed", "status"] == "connected" and df.loc["mixed", "tools"] == 0
    assert any("more than once" in w for w in df.loc["mixed", "warnings"])
    assert any("'bad name'" in w for w in df.loc["mixed", "warnings"])
    assert sorted(df.loc[["first", "second"], "status"]) == ["connected", "failed"]
    loser = "first" if df.loc["first", "status"] == "failed" else "second"
    assert "NameCollision" in df.loc[loser, "error"] and "shared" in df.loc[loser, "error"]
    assert df.loc[loser, "transport"] == "stdio" and df.loc[loser, "tools"] == 0
    assert df.loc["buggy", "status"] == "failed"
    assert "RuntimeError: a bug while building" in df.loc["buggy", "error"]
    assert df.loc["missing", "status"] == "failed" and "no-such-binary" in df.loc[
        "missing", "error"]
    assert bench.call("good-echo", text="hi").text == "hi"
    # A failed row is replaced by connecting again under its name.
    monkeypatch.setattr(_connecting, "open_connection", real_open)
    assert bench.connect("buggy", [sys.executable, str(ECHO)]) > 0
    assert bench.servers.set_index("name").loc["buggy", "status"] == "connected"


@pytest.mark.slow
def test_a_config_mistake_anywhere_starts_nothing(bench: tb.Bench) -> None:
    config = {"mcpServers": {
        "good": stdio(ECHO),
        "bad": stdio(ECHO, max_concurrent=2.5),
    }}
    with pytest.raises(tb.ConfigError) as info:
        bench.load_config(config)
    assert info.value.path == "$.mcpServers.bad.max_concurrent"
    assert bench.servers.empty and bench.pegboard.tool_count() == 0
    # The autouse fixture also fails this test if an echo server was started.


@pytest.mark.slow
def test_disabled_servers_are_left_out_and_unknown_keys_warn_once(bench: tb.Bench) -> None:
    config = {"mcpServers": {
        "on": stdio(ECHO, autoApprove=["echo"]),
        "off": {"command": "${SURELY_UNSET_TOOLBENCH_VAR}", "disabled": True, "timout": 3},
    }, "inputs": []}
    with pytest.warns(ConfigWarning) as caught:
        df = bench.load_config(config)
    assert len(caught) == 1
    message = str(caught[0].message)
    for key in ("$.inputs", "$.mcpServers.on.autoApprove", "$.mcpServers.off.timout"):
        assert key in message
    assert caught[0].filename == __file__  # issued in the caller's frame, not on the loop
    assert list(df["name"]) == ["on"] and df.loc[0, "status"] == "connected"


@pytest.mark.slow
@pytest.mark.anyio
async def test_async_load_config_warns_in_the_callers_task(bench: tb.Bench) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = await bench.aload_config({"servers": {"e": stdio(ECHO, extra=1)}})
    assert [str(w.message).count("$.servers.e.extra") for w in caught] == [1]
    assert caught[0].filename == __file__
    assert df.loc[0, "status"] == "connected"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_load_config_refuses_names_already_connected_up_front(bench: tb.Bench) -> None:
    from mcp.server.mcpserver import MCPServer

    bench.connect("taken", MCPServer("taken"))
    with pytest.raises(ValueError, match=r"servers already connected: \['taken'\]"):
        bench.load_config({"mcpServers": {"taken": {"command": "x"}, "new": {"command": "y"}}})
    assert list(bench.servers["name"]) == ["taken"]


def _schema_server() -> Any:
    import mcp_types as types
    from mcp.server import Server

    schemas = {
        "plain": {"type": "object", "properties": {"q": {"type": "string"}}},
        "remote": {"type": "object", "properties": {
            "q": {"$ref": "https://schemas.example.org/query.json"}}},
    }

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=n, description=n, input_schema=s) for n, s in schemas.items()])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=params.name)])

    return Server("schemas", on_list_tools=list_tools, on_call_tool=call_tool)


def test_catalog_warnings_say_why_local_checking_is_skipped(bench: tb.Bench) -> None:
    from toolbench._core.schema import validate as _validate

    bench.connect("refs", _schema_server())
    catalog = bench.catalog().set_index("name")
    assert "warnings" in catalog.columns
    assert catalog.loc["refs-plain", "warnings"] == []
    problems = getattr(_validate, "schema_problems", None)
    if problems is None:  # the checker is not there yet: the column exists, empty
        assert catalog.loc["refs-remote", "warnings"] == []
    else:
        remote = catalog.loc["refs-remote", "warnings"]
        assert remote and remote == problems(bench.pegboard.get_tool("refs-remote").input_schema)
        assert any("schemas.example.org" in w or "$ref" in w for w in remote)
    # The tool stays callable either way: the server judges what was not checked here.
    assert bench.call("refs-remote", q="x").text == "remote"
