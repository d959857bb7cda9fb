"""Peers that pin ``mcp<2``, measured inside their own venv (benchmarks/.venv-mcp1).

Run by benchmarks/bench_peers.py as ``<venv python> peer.py '<json spec>'``; it prints one JSON
object ``{subject: {workload_key: [seconds, ...]}}`` on its last stdout line. It imports
nothing from toolbench (a different ``mcp`` lives here), and it starts the same latency
server script, with the main venv's Python, that every other peer talks to.

Subjects: the ``mcp`` 1.x ``ClientSession`` (this venv's floor) and ``langchain-mcp-adapters``
(its tools on a kept session, and its default tools, which open a new session per call).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

Samples = dict[str, dict[str, list[float]]]


def _add(out: Samples, subject: str, key: str, value: float) -> None:
    out.setdefault(subject, {}).setdefault(key, []).append(value)


async def _capped(call: Callable[[int], Awaitable[Any]], n: int, cap: int) -> float:
    limiter = anyio.CapacityLimiter(cap)

    async def one(i: int) -> None:
        async with limiter:
            await call(i)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
    return time.perf_counter() - started


async def _fan(calls: list[Callable[[], Awaitable[Any]]]) -> float:
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(call)
    return time.perf_counter() - started


async def main(spec: dict[str, Any]) -> Samples:
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_mcp_adapters.tools import load_mcp_tools

    servers: dict[str, list[str]] = spec["servers"]  # name -> argv, the first is the W1/W2 one
    rounds, seq_calls, conc_calls, cap = (spec["rounds"], spec["seq_calls"], spec["conc_calls"],
                                          spec["cap"])
    first = next(iter(servers))
    out: Samples = {}
    errlog = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the sessions
    async with AsyncExitStack() as stack:
        sessions: dict[str, ClientSession] = {}
        lc_tools: dict[str, dict[str, Any]] = {}
        for name, argv in servers.items():
            params = StdioServerParameters(command=argv[0], args=argv[1:])
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions[name] = session
            read2, write2 = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            lc_session = await stack.enter_async_context(ClientSession(read2, write2))
            await lc_session.initialize()
            lc_tools[name] = {t.name: t for t in await load_mcp_tools(lc_session)}
        default_client = MultiServerMCPClient({first: {
            "command": servers[first][0], "args": servers[first][1:], "transport": "stdio"}})
        default_add = next(t for t in await default_client.get_tools() if t.name == "add")

        raw, lc = "mcp 1.x ClientSession (mcp<2 venv)", "langchain-mcp-adapters (kept session)"
        for _ in range(rounds):
            # 1. sequential latency over stdio
            started = time.perf_counter()
            for i in range(seq_calls):
                await sessions[first].call_tool("add", {"a": i, "b": 2})
            _add(out, raw, "seq", (time.perf_counter() - started) / seq_calls)
            started = time.perf_counter()
            for i in range(seq_calls):
                await lc_tools[first]["add"].ainvoke({"a": i, "b": 2})
            _add(out, lc, "seq", (time.perf_counter() - started) / seq_calls)
            few = spec["default_calls"]
            started = time.perf_counter()
            for i in range(few):
                await default_add.ainvoke({"a": i, "b": 2})
            _add(out, "langchain-mcp-adapters (default: a session per call)", "seq",
                 (time.perf_counter() - started) / few)
            # 2. many calls under a cap
            delay = spec["conc_delay_ms"]
            _add(out, raw, "conc", await _capped(
                lambda i, d=delay: sessions[first].call_tool("work", {"x": i, "delay_ms": d}),
                conc_calls, cap))
            _add(out, lc, "conc", await _capped(
                lambda i, d=delay: lc_tools[first]["work"].ainvoke({"x": i, "delay_ms": d}),
                conc_calls, cap))
            # 3. fan-out: each server's own latency, then none
            for key, args in (("fan", {"x": 1}), ("fan0", {"x": 1, "delay_ms": 0})):
                _add(out, raw, key, await _fan([
                    (lambda s=s, a=args: s.call_tool("work", a)) for s in sessions.values()]))
                _add(out, lc, key, await _fan([
                    (lambda t=t, a=args: t["work"].ainvoke(a)) for t in lc_tools.values()]))
    errlog.close()
    return out


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, json.loads(sys.argv[1]))))
