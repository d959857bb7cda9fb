"""What each kept behaviour costs a call, in µs: the price of issue 35's "nothing lost".

    python -m benchmarks.cost_of_keeping [--rounds 7] [--calls 400] [--quick]

Issue 35 asks for a call at the SDK's cost *and* for every behaviour below to keep working.
Where the two cannot both hold, this says what keeping each behaviour costs. Each row is a
pair measured in the same round, seconds apart, the order flipping every round; the figure is
the median over rounds of (with − without), wall and process CPU, µs per call:

* **the sync face's hop**: ``Bench.call`` from a plain thread against ``Bench.acall`` awaited
  on the shared loop (what one owner task per connection, SIGINT and answering a server's
  question during a sync call rest on);
* **the bench layer**: ``Bench.acall`` against ``McpClient.call`` on the same server (naming,
  checks, records, ids, provenance, pins' guard, egress, the MCP Apps hook);
* **McpClient's envelope**: ``McpClient.call`` against the SDK's ``call_tool`` on its own
  connection (the in-doubt ticket, the slot, the one timeout, result conversion);
* single parts of the bench layer, each **taken out for the measurement only** by replacing
  one function of ``toolbench._bench.calls.calling`` (never done by the library): the
  argument check, the record (``make_record`` + ``RecordStore.append``), the call id and
  timestamp, provenance;
* **a journal** and **pins**: a second bench with ``journal=`` or ``pins=`` against one
  without, on the same server.

Over two servers: the in-process latency server (the SDK's ``MCPServer``, direct dispatch) and
the stdlib-only stdio server (``benchmarks/servers/fast_server.py``), where no SDK code on the
server side hides the client's cost.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp import Client, stdio_client

from benchmarks import common
from benchmarks.bench_sweep import _params, fast_argv
from toolbench import Bench
from toolbench._bench.calls import calling
from toolbench._core.ids import Provenance, ToolId
from toolbench._loop import get_loop
from toolbench._transports.mcp.client import McpClient

Sample = tuple[float, float]  # (wall µs, CPU µs) per call
Run = Callable[[], Awaitable[Sample]]


def _timed_async(calls: int, call: Callable[[int], Awaitable[Any]]) -> Run:
    async def run() -> Sample:
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(calls):
            await call(i)
        return ((time.perf_counter() - wall) / calls * 1e6,
                (time.process_time() - cpu) / calls * 1e6)
    return run


def _on_loop(calls: int, call: Callable[[int], Awaitable[Any]]) -> Run:
    """Awaited on toolbench's shared loop (where a bench's connections live)."""
    timed = _timed_async(calls, call)
    return lambda: anyio.to_thread.run_sync(lambda: get_loop().run(timed))


def _sync(calls: int, call: Callable[[int], Any]) -> Run:
    """The synchronous face from a plain thread, as a script or a cell calls it."""
    def run() -> Sample:
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(calls):
            call(i)
        return ((time.perf_counter() - wall) / calls * 1e6,
                (time.process_time() - cpu) / calls * 1e6)
    return lambda: anyio.to_thread.run_sync(run)


@contextlib.contextmanager
def _without(name: str, bench: Bench) -> Iterator[None]:
    """One part of the bench layer replaced, for this measurement only."""
    saved: list[tuple[Any, str, Any]] = []

    def put(owner: Any, attr: str, value: Any) -> None:
        saved.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, value)

    if name == "argument check":
        put(calling, "validate_arguments", lambda *a, **k: None)
    elif name == "record":
        kept: dict[str, Any] = {}
        real = calling.make_record

        def once(**fields: Any) -> Any:  # one real record, then the same one again
            if "r" not in kept:
                kept["r"] = real(**fields)
            return kept["r"]
        put(calling, "make_record", once)
        put(bench.calls._store, "append", lambda record, tag=None: None)
    elif name == "call id + timestamp":
        now = datetime.datetime.now(datetime.UTC)
        put(calling, "new_call_id", lambda: "0" * 32)
        put(calling, "utcnow", lambda: now)
    elif name == "provenance":
        plain = Provenance()
        put(calling, "provenance_of", lambda provenance: plain)
    try:
        yield
    finally:
        for owner, attr, value in reversed(saved):
            setattr(owner, attr, value)


PARTS = ("argument check", "record", "call id + timestamp", "provenance")


def _pair(with_: Run, without: Run, part: str, bench: Bench) -> tuple[Run, Run]:
    async def stripped() -> Sample:
        with _without(part, bench):
            return await without()
    return with_, stripped


async def _measure(pairs: dict[str, tuple[Run, Run]], rounds: int,
                   settle: Callable[[Run], Run] | None = None) -> dict[str, list[Sample]]:
    """Each pair back to back, the pairs' order and each pair's order flipping by round;
    ``settle`` wraps each timed run (not the warm-up)."""
    deltas: dict[str, list[Sample]] = {name: [] for name in pairs}
    for with_, without in pairs.values():  # warm both
        await with_()
        await without()
    for r in range(rounds):
        items = list(pairs.items())
        for name, (with_, without) in items if r % 2 == 0 else items[::-1]:
            if settle is not None:
                with_, without = settle(with_), settle(without)
            if r % 2 == 0:
                a, b = await with_(), await without()
            else:
                b, a = await without(), await with_()
            deltas[name].append((a[0] - b[0], a[1] - b[1]))
    return deltas


async def _one_server(where: str, tool: str, server: Any, argv: list[str], errlog: Any,
                      rounds: int, calls: int, bench: Bench, journaled: Bench,
                      pinned: Bench) -> dict[str, list[Sample]]:
    """Every pair on one server: ``i`` (in process) or ``f`` (the stdlib stdio server)."""
    def args(i: int) -> dict[str, int]:
        return {"a": i, "b": 2}

    name, target = f"{tool}-add", ToolId("m", "add")
    mc = McpClient(server if tool == "i" else argv, name="m")
    sdk_cm = (Client(server) if tool == "i" else
              Client(stdio_client(_params(argv), errlog=errlog), mode="legacy"))
    # McpClient lives on the shared loop, as the bench's clients do; the SDK's client in
    # this thread's own loop, as an SDK user awaits it.
    await get_loop().arun(mc.__aenter__)
    try:
        async with sdk_cm as sdk:
            acall = _on_loop(calls, lambda i: bench.acall(name, args(i)))
            mc_call = _on_loop(calls, lambda i: mc.call(target, args(i)))
            pairs = {
                "the sync face's hop (Bench.call - Bench.acall on the loop)":
                    (_sync(calls, lambda i: bench.call(name, args(i))), acall),
                "the bench layer (Bench.acall - McpClient.call)": (acall, mc_call),
                "McpClient's envelope (McpClient.call - SDK call_tool)": (
                    mc_call, _timed_async(calls, lambda i: sdk.call_tool("add", args(i)))),
                **{f"  of which: {part}": _pair(acall, acall, part, bench) for part in PARTS},
                "a journal (Bench(journal=).acall - Bench.acall)": (
                    _on_loop(calls, lambda i: journaled.acall(name, args(i))), acall),
                "pins (Bench(pins=).acall - Bench.acall)": (
                    _on_loop(calls, lambda i: pinned.acall(name, args(i))), acall),
            }
            common.progress(f"{where}: {len(pairs)} pairs")
            return await _measure(pairs, rounds)
    finally:
        await get_loop().arun(mc.__aexit__, None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 50 calls")
    ns = parser.parse_args()
    rounds, calls = (2, 50) if ns.quick else (ns.rounds, ns.calls)
    print(f"load average at start {os.getloadavg()}; {rounds} rounds x {calls} calls",
          flush=True)
    server, argv = common.inprocess_server("keep"), fast_argv("keep")
    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as errlog, \
            Bench() as bench, Bench(journal=Path(tmp) / "j.sqlite") as journaled, \
            Bench(pins=Path(tmp) / "pins.json") as pinned:
        for b in (bench, journaled, pinned):
            b.connect("i", server)
            b.connect("f", argv)

        async def body() -> dict[str, dict[str, list[Sample]]]:
            return {where: await _one_server(where, tool, server, argv, errlog, rounds, calls,
                                             bench, journaled, pinned)
                    for where, tool in (("in process", "i"), ("stdio, stdlib server", "f"))}

        results = anyio.run(body)
    print(f"load average at end {os.getloadavg()}")
    for where, deltas in results.items():
        print_deltas(f"{where}: what keeping it costs a call", deltas, rounds)


def print_deltas(title: str, deltas: dict[str, list[Sample]], rounds: int) -> None:
    """Each pair's median difference, wall and CPU, and the range of the CPU figure."""
    print(f"\n{title} (median of {rounds} paired rounds; range of the CPU figure)")
    width = max(len(name) for name in deltas)
    for name, samples in deltas.items():
        walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
        print(f"  {name:{width}s} {statistics.median(walls):7.1f} µs wall  "
              f"{statistics.median(cpus):7.1f} µs CPU ({min(cpus):.1f} to {max(cpus):.1f})")


if __name__ == "__main__":
    sys.exit(main())
