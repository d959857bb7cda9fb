"""A bug is not a doubt (DESIGN): toolbench's own exception before sending is recorded
``did_not_happen`` with its class as ``error_type`` and raised as it is, through a real bench
and a real in-process MCP server (the broken piece is patched in; the rest is real)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

import toolbench as tb
from toolbench._bench.calls import calling as calling_module
from toolbench._bench.calls.attempt import attempt
from toolbench._core.errors import TimedOut, Unreachable, mark_unsent


def counting_server(ran: list[str]) -> MCPServer:
    srv = MCPServer("counting")

    @srv.tool()
    def echo(text: str) -> str:
        """Echo."""
        ran.append(text)
        return text

    return srv


@pytest.fixture
def bench() -> Iterator[tb.Bench]:
    with tb.Bench(timeout=10) as b:
        yield b


def test_a_bug_in_argument_checking_is_raised_and_recorded_did_not_happen(
        bench: tb.Bench, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    bench.connect("c", counting_server(ran))

    def broken(*_: Any) -> None:
        raise KeyError("type")

    monkeypatch.setattr(calling_module, "validate_arguments", broken)
    with pytest.raises(KeyError):
        bench.call("c-echo", text="x")
    row = bench.records.iloc[-1]
    assert row["disposition"] == "did_not_happen" and row["error_type"] == "KeyError"
    assert ran == []


def test_a_bug_in_a_map_is_raised_not_kept_as_a_doubt(
        bench: tb.Bench, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    bench.connect("c", counting_server(ran))

    def broken(*_: Any) -> None:
        raise KeyError("type")

    monkeypatch.setattr(calling_module, "validate_arguments", broken)
    with pytest.raises((KeyError, BaseExceptionGroup)):
        bench.map("c-echo", [{"text": "a"}])
    assert set(bench.records["disposition"]) == {"did_not_happen"}
    assert ran == []


def test_attempt_sorts_the_client_calls_failures() -> None:
    asyncio.run(_attempts())


async def _attempts() -> None:
    async def bug() -> None:
        raise mark_unsent(KeyError("k"))

    async def foreign() -> None:
        raise KeyError("k")

    async def refused() -> None:
        raise Unreachable("down")

    with pytest.raises(KeyError):
        await attempt(bug, limit=1, bound=None, tool=None)
    _, error = await attempt(foreign, limit=1, bound=None, tool=None)
    assert isinstance(error, TimedOut)  # a client not ours: how far it got is unknown
    _, error = await attempt(refused, limit=1, bound=None, tool=None)
    assert isinstance(error, Unreachable)
    assert await attempt(lambda: _value(), limit=1, bound=5, tool=None) == (3, None)


async def _value() -> int:
    return 3
