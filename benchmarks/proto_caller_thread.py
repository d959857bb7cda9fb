"""A prototype, not a feature: what a synchronous in-process call would cost on the caller's
own thread (BENCHMARKS.md, "What decides the synchronous goals").

    python -m benchmarks.proto_caller_thread [--rounds 9] [--calls 300]

Paired per round against the SDK's ``mcp.Client(server)`` awaited in its own loop:

* ``McpClient`` on a private event loop in the calling thread, one ``run_until_complete``
  per call: a synchronous call with no hop to another thread (the design the section
  weighs; the library does not do this);
* the same ``McpClient`` awaited in that loop (no per-call loop entry);
* ``Bench.call`` (the hop to the shared loop) and ``Bench.acall`` awaited on the shared loop.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

from mcp import Client

from benchmarks import common
from toolbench import Bench
from toolbench._core.ids import ToolId
from toolbench._loop import get_loop
from toolbench._transports.mcp.client import McpClient


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=300)
    ns = parser.parse_args()
    calls = ns.calls
    server = common.inprocess_server("proto")
    tool = ToolId("p", "add")
    private = asyncio.new_event_loop()
    client = McpClient(server, name="p")
    private.run_until_complete(client.__aenter__())
    sdk_loop = asyncio.new_event_loop()

    def sdk() -> float:
        async def body() -> float:
            async with Client(server) as peer:
                started = time.perf_counter()
                for i in range(calls):
                    await peer.call_tool("add", {"a": i, "b": 2})
                return time.perf_counter() - started
        return sdk_loop.run_until_complete(body())

    def per_call_loop() -> float:
        started = time.perf_counter()
        for i in range(calls):
            private.run_until_complete(client.call(tool, {"a": i, "b": 2}))
        return time.perf_counter() - started

    def awaited_in_private_loop() -> float:
        async def body() -> float:
            started = time.perf_counter()
            for i in range(calls):
                await client.call(tool, {"a": i, "b": 2})
            return time.perf_counter() - started
        return private.run_until_complete(body())

    with Bench() as bench:
        bench.connect("s", server)

        def bench_call() -> float:
            started = time.perf_counter()
            for i in range(calls):
                bench.call("s-add", {"a": i, "b": 2})
            return time.perf_counter() - started

        def bench_acall() -> float:
            async def body() -> float:
                started = time.perf_counter()
                for i in range(calls):
                    await bench.acall("s-add", {"a": i, "b": 2})
                return time.perf_counter() - started
            return get_loop().run(body)

        subjects: dict[str, Callable[[], float]] = {
            "mcp.Client awaited (SDK)": sdk,
            "McpClient, run_until_complete per call, caller's thread": per_call_loop,
            "McpClient awaited in the caller's private loop": awaited_in_private_loop,
            "Bench.call (hop to the shared loop)": bench_call,
            "Bench.acall awaited on the shared loop": bench_acall,
        }
        samples: dict[str, list[float]] = {name: [] for name in subjects}
        for fn in subjects.values():
            fn()
        for r in range(ns.rounds):
            order = list(subjects.items())
            for name, fn in order if r % 2 == 0 else order[::-1]:
                samples[name].append(fn() / calls * 1e6)
    private.run_until_complete(client.__aexit__(None, None, None))
    base = samples["mcp.Client awaited (SDK)"]
    for name, values in samples.items():
        ratio = statistics.median(v / b for v, b in zip(values, base, strict=True))
        print(f"{name:58s} {statistics.median(values):7.0f} µs   / SDK, paired: {ratio:.3f}")


if __name__ == "__main__":
    main()
