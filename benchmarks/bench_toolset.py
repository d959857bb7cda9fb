"""Toolset: raw dispatch throughput, and what lanes buy a fast backend beside a slow one.

    python -m benchmarks.bench_toolset [--quick]

1. Throughput: N no-op requests in process from 64 concurrent callers (the default cap, 8):
   through ``deliver`` (the bare dispatcher) and ``call`` (plus the Result conversion), with an
   async handler; and a sync handler, which pays a worker-thread hop per request.
2. Head-of-line: a slow backend (sleeps) is flooded while fast requests arrive at a steady
   rate. With lanes (slow capped below the toolset's cap) the fast requests keep a slot; with no
   lanes (everything in one pool) they queue behind the flood. Fast-request p50/p95 latency
   is reported for both.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio

from toolbench._core.ids import ToolId
from toolbench._transports.toolset.toolset import Toolset


def _noop_toolset() -> Toolset:
    ts = Toolset("bench", max_concurrent=8, connect_grace=600)

    @ts.tool("noop")
    async def noop(data: dict[str, Any]) -> dict[str, Any]:
        return {}

    @ts.tool("noop_sync")
    def noop_sync(data: dict[str, Any]) -> dict[str, Any]:
        return {}

    return ts


async def _throughput(n: int, face: str, callers: int = 64) -> float:
    """``n`` requests from ``callers`` concurrent callers (spawning a task per request would
    measure the event loop's task creation, not the dispatcher)."""
    ts = _noop_toolset()
    tid = ToolId("bench", "noop")
    payload = {"tool": "noop_sync" if face == "sync" else "noop"}

    async def caller(count: int) -> None:
        for _ in range(count):
            if face == "call":
                await ts.call(tid, {})
            else:
                await ts.deliver(payload)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(callers):
            tg.start_soon(caller, n // callers + (1 if i < n % callers else 0))
    return n / (time.perf_counter() - started)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _fast_latency(lanes: bool, slow_n: int, slow_s: float, fast_n: int,
                        gap_s: float) -> dict[str, float]:
    ts = Toolset("hol", max_concurrent=8, connect_grace=600)
    if lanes:
        ts.lane("slow", max_concurrent=6)
        ts.lane("fast", max_concurrent=2)

    @ts.tool("slow", lane="slow" if lanes else None)
    async def slow(data: dict[str, Any]) -> None:
        await anyio.sleep(slow_s)

    @ts.tool("fast", lane="fast" if lanes else None)
    async def fast(data: dict[str, Any]) -> None:
        return None

    latencies: list[float] = []

    async def timed_fast() -> None:
        started = time.perf_counter()
        await ts.deliver({"tool": "fast"})
        latencies.append(time.perf_counter() - started)

    async with anyio.create_task_group() as tg:
        for _ in range(slow_n):
            tg.start_soon(ts.deliver, {"tool": "slow"})
        await anyio.sleep(0.01)  # the flood is queued
        for _ in range(fast_n):
            tg.start_soon(timed_fast)
            await anyio.sleep(gap_s)
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": _percentile(latencies, 0.95) * 1000,
    }


def run(quick: bool = False) -> dict[str, Any]:
    n = 2_000 if quick else 10_000
    slow_n, slow_s, fast_n, gap_s = (120, 0.01, 40, 0.005) if quick else (300, 0.02, 100, 0.005)

    async def main() -> dict[str, Any]:
        figures: dict[str, Any] = {"requests": n}
        figures["deliver_per_s"] = await _throughput(n, "deliver")
        figures["call_per_s"] = await _throughput(n, "call")
        figures["sync_handler_per_s"] = await _throughput(n // 5, "sync")
        figures["workload"] = {"slow_requests": slow_n, "slow_ms": slow_s * 1000,
                               "fast_requests": fast_n, "fast_gap_ms": gap_s * 1000,
                               "max_concurrent": 8, "slow_lane_cap": 6, "fast_lane_cap": 2}
        figures["fast_with_lanes"] = await _fast_latency(True, slow_n, slow_s, fast_n, gap_s)
        figures["fast_one_pool"] = await _fast_latency(False, slow_n, slow_s, fast_n, gap_s)
        return figures

    return anyio.run(main)


def _print(figures: dict[str, Any]) -> None:
    print(f"throughput, {figures['requests']} no-op requests in process, 64 callers, cap 8:")
    print(f"  deliver (async handler)  {figures['deliver_per_s']:>10,.0f} req/s")
    print(f"  call -> Result           {figures['call_per_s']:>10,.0f} req/s")
    print(f"  deliver (sync handler)   {figures['sync_handler_per_s']:>10,.0f} req/s")
    w = figures["workload"]
    print(f"fast-request latency while {w['slow_requests']} slow requests "
          f"({w['slow_ms']:.0f} ms each) flood the toolset (cap {w['max_concurrent']}):")
    for key, label in (("fast_with_lanes", "lanes (slow 6, fast 2)"),
                       ("fast_one_pool", "no lanes (one pool)")):
        f = figures[key]
        print(f"  {label:<24} p50 {f['p50_ms']:>8.1f} ms   p95 {f['p95_ms']:>8.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run, under ~15 s")
    _print(run(parser.parse_args().quick))
