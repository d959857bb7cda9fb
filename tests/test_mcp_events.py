"""A connection's events (toolbench/_transports/mcp/events.py): listeners per kind, rounds
coalesced (a burst costs one round in flight plus one pending), a raising listener logged;
and through a Bench, ``prompts/list_changed`` and ``resources/list_changed`` re-list
(toolbench/_bench/catalog/follow.py) on a 2026 in-process server."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt

import toolbench as tb
from toolbench._transports.mcp.events import Events


def test_a_burst_is_one_round_in_flight_plus_one_pending() -> None:
    calls: list[str] = []

    async def slow(server: str) -> None:
        calls.append(server)
        await anyio.sleep(0.2)

    async def body() -> Events:
        events = Events("s")
        events.add("prompts", slow)
        async with anyio.create_task_group() as group:
            for _ in range(50):
                events.fire("prompts", group)
            await anyio.sleep(0.05)
            for _ in range(50):  # while the first round runs: one more round is due
                events.fire("prompts", group)
        return events

    events = anyio.run(body)
    assert events.rounds["prompts"] == 2 and calls == ["s", "s"]
    assert events.rounds["tools"] == 0


def test_bad_kinds_and_raising_listeners(caplog: pytest.LogCaptureFixture) -> None:
    events = Events("s")
    with pytest.raises(ValueError, match="invalid event kind 'nope'"):
        events.add("nope", lambda s: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be callable"):
        events.add("tools", 3)  # type: ignore[arg-type]

    async def boom(server: str) -> None:
        raise RuntimeError("listener bug")

    remove = events.add("tools", boom)

    async def body() -> None:
        async with anyio.create_task_group() as group:
            events.fire("tools", group)

    anyio.run(body)
    assert "tools listener for s raised" in caplog.text
    remove()
    remove()  # twice is harmless


def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def changing_server() -> MCPServer:
    server = MCPServer("changing")

    @server.tool()
    async def add_prompt(name: str, ctx: Context) -> str:
        """Add a prompt and say so."""
        server.add_prompt(Prompt.from_function(lambda: "hi", name=name))
        await ctx.notify_prompts_changed()
        await ctx.notify_resources_changed()
        return "added"

    return server


def test_prompts_and_resources_list_changed_re_list() -> None:
    with tb.Bench() as bench:
        bench.connect("ch", changing_server())
        assert list(bench.prompts()["name"]) == []
        bench.call("ch-add_prompt", name="fresh")
        assert _wait_for(lambda: bench.follower.relists().get("ch", {}).get("prompts", 0) >= 1)
        assert _wait_for(lambda: bench.follower.relists().get("ch", {}).get("resources", 0) >= 1)
        assert "ch-fresh" in bench.listings.prompt_names()  # re-listed, not only when asked
        assert bench.prompt("ch-fresh").text == "user: hi"


def test_fire_returns_an_event_set_when_a_later_round_has_ended() -> None:
    calls: list[str] = []

    async def slow(server: str) -> None:
        calls.append("start")
        await anyio.sleep(0.2)
        calls.append("end")

    async def body() -> None:
        events = Events("s")
        assert events.fire("tools", None) is None
        async with anyio.create_task_group() as group:
            assert events.fire("tools", group) is None  # no listener: nothing to wait for
            events.add("tools", slow)
            first = events.fire("tools", group)
            assert first is not None
            await anyio.sleep(0.05)
            second = events.fire("tools", group)  # during round 1: covered by round 2
            assert second is not None
            with anyio.fail_after(5):
                await first.wait()
            assert calls == ["start", "end"] and not second.is_set()
            with anyio.fail_after(5):
                await second.wait()
            assert calls == ["start", "end", "start", "end"]
            cut = events.fire("tools", group)
            assert cut is not None
            await anyio.sleep(0.05)
            group.cancel_scope.cancel()  # a round cut short still sets its event
        assert cut.is_set()

    anyio.run(body)
