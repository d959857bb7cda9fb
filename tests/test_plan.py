"""A map's plan (``toolbench._bench.calls.plan``): what its calls share is looked up once, and
nothing DESIGN promises per call is lost with it: a re-list mid-map that changes the tool is
still refused by a pin, and a changed input schema is what the next calls are checked against.

The server is the real SDK's MCPServer, in process: its ``step`` tool changes the server's
own listing at a chosen case and announces it (``tools/list_changed``), as an upgraded or a
hostile server would in the middle of a sweep.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import Tool

import toolbench as tb
from toolbench._bench.calls.plan import CallPlan
from toolbench._bench.servers.naming import Target
from toolbench._core.ids import ToolId

RELIST_WAIT_S = 10.0
"""The most ``step`` waits for the bench to list the changed tools (never reached)."""


class Shifting(MCPServer):
    """Lists ``step`` as version 1 until ``flip_at`` is called, then as version 2: another
    description and, with ``cap``, a ``maximum`` on ``n``."""

    def __init__(self, flip_at: int, cap: int | None) -> None:
        super().__init__("shifting")
        self.flip_at, self.cap, self.era = flip_at, cap, 1
        self.listed_v2 = anyio.Event()

    async def list_tools(self) -> list[Tool]:
        tools = []
        for tool in await super().list_tools():
            if tool.name == "step" and self.era == 2:
                schema = dict(tool.input_schema)
                if self.cap is not None:
                    schema["properties"] = {**schema["properties"],
                                            "n": {"type": "integer", "maximum": self.cap}}
                tool = tool.model_copy(update={"description": "step, version 2",
                                               "input_schema": schema})
            tools.append(tool)
        if self.era == 2:
            self.listed_v2.set()
        return tools


def _server(flip_at: int, cap: int | None = None) -> Shifting:
    server = Shifting(flip_at, cap)

    @server.tool(description="step, version 1")
    async def step(n: int, ctx: Context) -> str:
        if n == server.flip_at and server.era == 1:
            server.era = 2
            await ctx.notify_tools_changed()
            with contextlib.suppress(Exception):  # a 2026 connection has no legacy channel
                await ctx.session.send_tool_list_changed()
            # Answer once the bench has asked for the new listing: the next cases then meet it.
            with anyio.move_on_after(RELIST_WAIT_S):
                await server.listed_v2.wait()
        return f"{n} v{server.era}"

    return server


def _wait_for(check: Any, what: str) -> None:
    deadline = time.monotonic() + RELIST_WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def test_a_tool_changed_mid_map_is_refused_by_its_pin(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tb.PinWarning)
        with tb.Bench(pins=tmp_path / "pins.json", timeout=20) as bench:
            bench.connect("s", _server(flip_at=3))
            rows = bench.map("s-step", [{"n": i} for i in range(12)], concurrency=1,
                             progress=False)
            catalog = bench.catalog().set_index("tool")
    assert catalog.loc["step", "pin"] == "changed"
    assert rows["ok"].tolist()[:4] == [True] * 4
    assert rows["text"].tolist()[:3] == ["0 v1", "1 v1", "2 v1"]
    late = rows.iloc[6:]  # the re-list was asked for before case 3 answered
    assert late["error_type"].tolist() == ["Refused"] * len(late)
    assert all("changed since it was pinned" in e for e in late["error"])
    assert set(late["disposition"]) == {"did_not_happen"}


def test_a_schema_changed_mid_map_is_what_the_next_cases_are_checked_against() -> None:
    with tb.Bench(timeout=20) as bench:
        bench.connect("s", _server(flip_at=3, cap=8))
        rows = bench.map("s-step", [{"n": i} for i in range(14)], concurrency=1,
                         progress=False)
        _wait_for(lambda: "version 2" in str(bench.tools["s-step"].spec.description),
                  "the bench listed version 2")
    assert rows["ok"].tolist()[:9] == [True] * 9  # n ≤ 8 passes either schema
    refused = rows.iloc[9:]
    assert refused["error_type"].tolist() == ["Refused"] * len(refused)
    assert all("maximum" in e or "greater than" in e for e in refused["error"]), \
        refused["error"].tolist()
    assert set(refused["disposition"]) == {"did_not_happen"}


def test_a_plan_is_derived_once_and_again_after_a_reconnect() -> None:
    """What the plan caches follows the server's row: a reconnect with another timeout and
    another rate is what the next call of the same plan uses."""
    @tb.tool(server="w")
    def echo(n: int) -> int:
        return n

    with tb.Bench() as bench:
        bench.add(tb.ToolBox(echo))
        calls = bench.calls
        target = calls.resolve("w-echo")
        plan = CallPlan(target, None, None)
        first = plan.current(bench.connections, bench.pegboard, bench.router, calls.pacing)
        assert first is plan and plan.limit == bench.connections.limit("w", None)
        assert plan.buckets == []
        board, row = plan.seen_board, plan.seen_row
        assert plan.current(bench.connections, bench.pegboard, bench.router,
                            calls.pacing).seen_board is board  # nothing changed: kept
        bench.disconnect("w")
        bench.connect("w", tb.ToolBox(echo), timeout=3.5, rate="50/s")
        plan.current(bench.connections, bench.pegboard, bench.router, calls.pacing)
        assert plan.seen_row is not row
        assert plan.limit == 3.5
        assert [b.rate.text for b in plan.buckets] == ["50/s"]


def test_a_name_relisted_as_another_tool_keeps_the_planned_target() -> None:
    from toolbench._bench.calls.plan import relisted

    @tb.tool(server="w")
    def echo(n: int) -> int:
        return n

    with tb.Bench() as bench:
        bench.add(tb.ToolBox(echo))
        planned = Target("w-echo", ToolId("w", "gone"), None)
        assert relisted(bench.pegboard, planned) is planned
        missing = Target("w-nothing", ToolId("w", "nothing"), None)
        assert relisted(bench.pegboard, missing) is missing
        found = relisted(bench.pegboard, Target("w-echo", ToolId("w", "echo"), None))
        assert found.spec is not None and found.spec.name == "w-echo"


@pytest.mark.parametrize("retries", [0, 2])
def test_a_turn_at_hand_is_taken_without_a_sleep_and_a_later_one_waits(
        monkeypatch: pytest.MonkeyPatch, retries: int) -> None:
    """Issue 47's cost on a fast map: a call whose token is there sleeps not at all; one
    whose turn is later sleeps until it, and its record says how long it queued."""
    import asyncio

    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def counting_sleep(delay: float, *args: Any) -> Any:
        slept.append(delay)
        return await real_sleep(delay, *args)

    @tb.tool(server="w")
    async def echo(n: int) -> int:
        return n

    with tb.Bench() as bench:
        bench.add(tb.ToolBox(echo))
        monkeypatch.setattr("toolbench._bench.calls.calling.asyncio.sleep", counting_sleep)
        rows = bench.map("w-echo", [{"n": i} for i in range(3)], rate="20/s",
                         retries=retries, concurrency=1, progress=False)
        monkeypatch.undo()
        queued = bench.records["queued_ms"].tolist()
    assert rows["ok"].all()
    assert queued[0] == 0.0 and all(q > 0.0 for q in queued[1:])
    assert len(slept) == 2 and all(0.0 < s <= 0.05 + 1e-9 for s in slept)
