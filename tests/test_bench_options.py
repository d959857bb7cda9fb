"""Which option wins (DESIGN, "Details users and tests rely on"): call > server > bench.

Real targets: an in-process MCP server and a Toolset, each with a tool that takes 10 s
(so the 0.5 s timeouts have a 19x margin before the bound that tells them apart).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

import toolbench as tb

SLOW_S = 10.0


def slow_server() -> MCPServer:
    srv = MCPServer("slow")

    @srv.tool()
    async def wait(text: str) -> str:
        """Answer after a while."""
        await anyio.sleep(SLOW_S)
        return text

    return srv


def slow_toolset() -> tb.Toolset:
    toolset = tb.Toolset("slowset")

    @toolset.tool("wait", input_schema={"type": "object"})
    async def wait(data: dict[str, object]) -> str:
        await anyio.sleep(SLOW_S)
        return "late"

    return toolset


@pytest.fixture
def bench() -> Iterator[tb.Bench]:
    with tb.Bench(timeout=20) as b:
        yield b


@pytest.mark.parametrize("kind", ["mcp", "toolset"])
def test_the_servers_timeout_wins_over_the_benchs(bench: tb.Bench, kind: str) -> None:
    target = slow_server() if kind == "mcp" else slow_toolset()
    bench.connect("s", target, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(tb.TimedOut):
        bench.call("s-wait", text="x")
    # 0.5 s, not the bench's 20 s (nor the tool's 10 s); a wide margin for a loaded machine.
    assert time.monotonic() - t0 < SLOW_S - 0.5


@pytest.mark.parametrize("kind", ["mcp", "toolset"])
def test_the_calls_timeout_wins_over_the_servers(bench: tb.Bench, kind: str) -> None:
    target = slow_server() if kind == "mcp" else slow_toolset()
    bench.connect("s", target, timeout=10)
    t0 = time.monotonic()
    with pytest.raises(tb.TimedOut):
        bench.call("s-wait", text="x", timeout=0.5)
    assert time.monotonic() - t0 < SLOW_S - 0.5


def test_the_bench_timeout_applies_when_neither_is_given() -> None:
    with tb.Bench(timeout=0.5) as bench:
        bench.connect("s", slow_toolset())
        t0 = time.monotonic()
        with pytest.raises(tb.TimedOut):
            bench.call("s-wait")
        assert time.monotonic() - t0 < SLOW_S - 0.5


def test_a_toolbox_takes_its_servers_timeout(bench: tb.Bench) -> None:
    @tb.tool(server="box")
    async def nap() -> str:
        """Sleep."""
        await anyio.sleep(SLOW_S)
        return "late"

    bench.connect("box", tb.ToolBox(nap), timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(tb.TimedOut):
        bench.call("box-nap")
    assert time.monotonic() - t0 < SLOW_S - 0.5
