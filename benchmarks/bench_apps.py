"""MCP Apps figures (issue #34), measured without a browser through ``view.handle``, the same
door the widget's comm uses (the front end's own postMessage hop is not in these figures).

- a view's ``tools/call`` round trip against the same call from a cell (``bench.call``), on
  the ``atlas`` demo over stdio (aim: ≤ ×1.2 + 5 ms);
- a neighbour server's call latency (p50, p99) alone and while a hostile view floods
  ``tools/call`` (tests/servers/hostile_app.py, 3 × the in-flight cap at a time);
- a neighbour's call latency alone and while a view floods ``tools/call`` to made-up tool
  names (issue 43 item 6: every one refused; the figure is how many ``Refused`` records the
  flood left, and what it cost the neighbour);
- the kernel's memory (RSS) with 20 open views of a 4 MB view.

    python -m benchmarks.bench_apps [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from typing import Any

import psutil

import toolbench as tb
from benchmarks import common
from toolbench._bench.apps.bridge import MAX_IN_FLIGHT

ENV = {"PYTHONPATH": str(common.REPO)}
ATLAS = [sys.executable, "-m", "toolbench.demo.atlas"]
HOSTILE = [sys.executable, str(common.REPO / "tests" / "servers" / "hostile_app.py")]
ARGS = {"from_city": "London", "to_city": "Paris"}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def handshake(view: Any) -> None:
    view.handle({"jsonrpc": "2.0", "id": 0, "method": "ui/initialize", "params": {
        "protocolVersion": "2026-01-26", "appInfo": {"name": "b", "version": "0"},
        "appCapabilities": {}}})
    view.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})


def round_trip(n: int) -> dict[str, float]:
    with tb.Bench(timeout=30) as bench:
        bench.connect("atlas", ATLAS, env=ENV)
        view = bench.call("atlas-show_map").app
        handshake(view)
        cell, framed = [], []
        for i in range(n):  # interleaved, so load on the machine hits both alike
            started = time.perf_counter()
            bench.call("atlas-distance", **ARGS)
            cell.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            reply = view.handle({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                                 "params": {"name": "distance", "arguments": ARGS}})
            framed.append((time.perf_counter() - started) * 1000)
            assert reply is not None and "result" in reply, reply
    return {"cell_ms": statistics.median(cell), "view_ms": statistics.median(framed)}


def neighbour(n: int) -> dict[str, float]:
    with tb.Bench(timeout=30) as bench:
        bench.connect("atlas", ATLAS, env=ENV)
        bench.connect("hostile", HOSTILE, env=ENV)
        view = bench.call("hostile-open_view").app
        handshake(view)

        def sample() -> list[float]:
            out = []
            for _ in range(n):
                started = time.perf_counter()
                bench.call("atlas-distance", **ARGS)
                out.append((time.perf_counter() - started) * 1000)
            return out

        alone = sample()
        stop = threading.Event()
        flooded = [0]

        def flood() -> None:
            async def wave() -> None:
                await asyncio.gather(*(view.ahandle({
                    "jsonrpc": "2.0", "id": i, "method": "tools/call",
                    "params": {"name": "tick", "arguments": {}}})
                    for i in range(3 * MAX_IN_FLIGHT)))
            while not stop.is_set():
                asyncio.run(wave())
                flooded[0] += 3 * MAX_IN_FLIGHT

        thread = threading.Thread(target=flood, daemon=True)
        thread.start()
        time.sleep(0.2)
        during = sample()
        stop.set()
        thread.join(30)
    return {"alone_p50": pct(alone, .5), "alone_p99": pct(alone, .99),
            "flood_p50": pct(during, .5), "flood_p99": pct(during, .99),
            "flood_messages": flooded[0]}


def refusal_flood(n: int) -> dict[str, float]:
    """A neighbour's ``atlas-distance`` alone, then while a view sends ``tools/call`` to
    made-up names as fast as the in-flight cap lets it (waves of ``MAX_IN_FLIGHT``)."""
    with tb.Bench(timeout=30) as bench:
        bench.connect("atlas", ATLAS, env=ENV)
        bench.connect("hostile", HOSTILE, env=ENV)
        view = bench.call("hostile-open_view").app
        handshake(view)

        def sample() -> list[float]:
            out = []
            for _ in range(n):
                started = time.perf_counter()
                bench.call("atlas-distance", **ARGS)
                out.append((time.perf_counter() - started) * 1000)
            return out

        alone = sample()
        stop = threading.Event()
        sent = [0]

        def flood() -> None:
            async def waves() -> None:
                while not stop.is_set():
                    base = sent[0]
                    await asyncio.gather(*(view.ahandle({
                        "jsonrpc": "2.0", "id": base + i, "method": "tools/call",
                        "params": {"name": f"made_up_{base + i}", "arguments": {}}})
                        for i in range(MAX_IN_FLIGHT)))
                    sent[0] += MAX_IN_FLIGHT
            asyncio.run(waves())

        thread = threading.Thread(target=flood, daemon=True)
        started = time.perf_counter()
        thread.start()
        time.sleep(0.2)
        during = sample()
        stop.set()
        thread.join(30)
        seconds = time.perf_counter() - started
        time.sleep(1.5)  # the last fold's window ends: its record is written
        records = bench.records
        refused = int(records["tool"].astype(str).str.startswith("made_up_").sum())
    return {"alone_p50": pct(alone, .5), "alone_p99": pct(alone, .99),
            "flood_p50": pct(during, .5), "flood_p99": pct(during, .99),
            "flood_messages": sent[0], "flood_s": seconds, "records": refused}


def memory(views: int = 20, size: int = 4_000_000) -> dict[str, float]:
    process = psutil.Process()
    with tb.Bench(timeout=60) as bench:
        bench.connect("hostile", HOSTILE, env={**ENV, "HOSTILE_BIG_BYTES": str(size)})
        bench.call("hostile-asked")
        before = process.memory_info().rss
        opened = [bench.call("hostile-too_big").app for _ in range(views)]
        assert all(v is not None for v in opened)
        after = process.memory_info().rss
    return {"views": views, "view_bytes": size, "rss_before_mb": before / 2**20,
            "rss_after_mb": after / 2**20, "per_view_mb": (after - before) / 2**20 / views}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args(argv).quick
    n = 30 if quick else 200
    trip = round_trip(n)
    print(f"tools/call round trip (median of {n}): cell {trip['cell_ms']:.2f} ms, view "
          f"{trip['view_ms']:.2f} ms; aim view <= 1.2 x cell + 5 ms = "
          f"{1.2 * trip['cell_ms'] + 5:.2f} ms")
    near = neighbour(n)
    print(f"neighbour atlas-distance: alone p50 {near['alone_p50']:.2f} / p99 "
          f"{near['alone_p99']:.2f} ms; during the flood p50 {near['flood_p50']:.2f} / p99 "
          f"{near['flood_p99']:.2f} ms ({near['flood_messages']} flood messages)")
    ref = refusal_flood(n)
    print(f"neighbour atlas-distance during a flood of made-up tool calls: alone p50 "
          f"{ref['alone_p50']:.2f} / p99 {ref['alone_p99']:.2f} ms; during p50 "
          f"{ref['flood_p50']:.2f} / p99 {ref['flood_p99']:.2f} ms; {ref['flood_messages']:,} "
          f"refused calls in {ref['flood_s']:.1f} s left {ref['records']} Refused records")
    mem = memory()
    print(f"memory: {mem['views']} open views of a {mem['view_bytes'] / 1e6:.0f} MB view: RSS "
          f"{mem['rss_before_mb']:.0f} -> {mem['rss_after_mb']:.0f} MB "
          f"({mem['per_view_mb']:.2f} MB per view)")


if __name__ == "__main__":
    main()
