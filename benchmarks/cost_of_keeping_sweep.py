"""What each kept behaviour costs a real server's sweep, in µs of CPU a call (issue 46 item 0).

    python -m benchmarks.cost_of_keeping_sweep [--rounds 7] [--calls 1000] [--server fast]

The sweep of ``bench_real_sweep.py`` (``echo`` to ``@modelcontextprotocol/server-everything``
over stdio, 8 calls at a time), driven from each layer down to the raw SDK, all of it on
toolbench's shared loop, each layer with its own server child (only this process's CPU is
counted). Each row is a pair measured in the same round, back to back, the order flipping
every round; the figure is the median over rounds of (with − without), wall and process
CPU, µs per call:

* **the map** (``Bench.amap``) against ``Bench.acall`` with a task per call and an
  ``anyio.CapacityLimiter(8)``: what the map adds or saves (its plan made once per batch,
  the batch's settle, the frame);
* **the bench layer** (``Bench.acall`` against ``McpClient.call``, the same way): naming,
  pins' guard, the argument check, the record, ids, provenance;
* **McpClient's envelope and transport** (``McpClient.call`` against the SDK's ``Client``
  over its own ``stdio_client``): the in-doubt ticket, one timeout on toolbench's clock, the
  result's conversion, and toolbench's stdio transport (the byte cap, ``list_changed``
  coalescing, notification pacing, the in-doubt tracker);
* single parts of the map, each **taken out for the measurement only** (never done by the
  library): the argument check, the record, the call id and timestamp
  (``cost_of_keeping.py``'s), and the provenance sent as the request's ``_meta``.

What the rows say together is what the sweep's gap to the SDK pays for. ``--server fast``
runs the same against the stdlib-only stdio server of the fast map
(``benchmarks/servers/fast_server.py``, tool ``work``): the client's code path is the same,
and without node's pauses a sweep's CPU per call varies far less from one run to the next.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client

from benchmarks import common
from benchmarks.bench_map46 import FAST_SERVER
from benchmarks.bench_real_sweep import _everything_argv
from benchmarks.cost_of_keeping import _measure, _without, print_deltas
from toolbench import Bench
from toolbench._core.ids import ToolId
from toolbench._loop import get_loop
from toolbench._transports.mcp import calls as mcp_calls
from toolbench._transports.mcp.client import McpClient

CAP = 8
Sample = tuple[float, float]  # (wall µs, CPU µs) per call
Run = Callable[[], Awaitable[Sample]]


def _capped(calls: int, call: Callable[[int], Awaitable[Any]]) -> Run:
    """``calls`` calls, a task each, 8 at a time (awaited on the shared loop)."""
    async def sweep() -> Sample:
        limiter = anyio.CapacityLimiter(CAP)

        async def one(i: int) -> None:
            async with limiter:
                result = await call(i)
                if getattr(result, "is_error", False):
                    raise RuntimeError(f"call {i} failed: {result!r}")

        wall, cpu = time.perf_counter(), time.process_time()
        async with anyio.create_task_group() as tg:
            for i in range(calls):
                tg.start_soon(one, i)
        return ((time.perf_counter() - wall) / calls * 1e6,
                (time.process_time() - cpu) / calls * 1e6)

    return sweep


def _mapped(bench: Bench, tool: str, work: list[dict[str, Any]]) -> Run:
    async def sweep() -> Sample:
        wall, cpu = time.perf_counter(), time.process_time()
        df = await bench.amap(f"e-{tool}", work, concurrency=CAP, progress=False)
        took = ((time.perf_counter() - wall) / len(work) * 1e6,
                (time.process_time() - cpu) / len(work) * 1e6)
        if len(df) != len(work) or not df["ok"].all():
            raise RuntimeError(f"the map failed: {df[~df['ok']]['error'].head()}")
        return took

    return sweep


@contextlib.contextmanager
def _without_part(part: str, bench: Bench) -> Iterator[None]:
    if part != "provenance as _meta":
        with _without(part, bench):
            yield
        return
    saved = mcp_calls._meta
    mcp_calls._meta = lambda provenance: None  # type: ignore[assignment]
    try:
        yield
    finally:
        mcp_calls._meta = saved  # type: ignore[assignment]


PARTS = ("argument check", "record", "call id + timestamp", "provenance as _meta")


def _settled(run: Run) -> Run:
    """``run`` after a full collection whose survivors are frozen: the records of the rounds
    before (tens of thousands by the end) are then not scanned again by a collection that
    happens to fall inside one sweep and not inside its pair (±300 µs a call without this)."""
    async def settled() -> Sample:
        gc.collect()
        gc.freeze()
        return await run()
    return settled


async def _body(bench: Bench, argv: list[str], tool: str, work: list[dict[str, Any]],
                rounds: int, errlog: Any) -> dict[str, list[Sample]]:
    """On the shared loop, where the bench's own connections live: every subject there."""
    calls = len(work)
    target = ToolId("e", tool)
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with McpClient(argv, name="e", timeout=60, connect_timeout=60) as mc, \
            Client(stdio_client(params, errlog=errlog)) as sdk:
        mapped = _mapped(bench, tool, work)
        acall = _capped(calls, lambda i: bench.acall(f"e-{tool}", work[i]))
        mc_call = _capped(calls, lambda i: mc.call(target, work[i]))
        sdk_call = _capped(calls, lambda i: sdk.call_tool(tool, work[i]))

        def stripped(part: str) -> tuple[Run, Run]:
            async def run() -> Sample:
                with _without_part(part, bench):
                    return await mapped()
            return mapped, run

        pairs = {
            "the map (Bench.amap - Bench.acall, 8 at a time)": (mapped, acall),
            "the bench layer (Bench.acall - McpClient.call)": (acall, mc_call),
            "McpClient's envelope + stdio transport (McpClient.call - SDK Client)":
                (mc_call, sdk_call),
            "all of it (Bench.amap - SDK Client)": (mapped, sdk_call),
            **{f"  in the map, of which: {part}": stripped(part) for part in PARTS},
        }
        common.progress(f"{len(pairs)} pairs, {rounds} rounds")
        return await _measure(pairs, rounds, settle=_settled)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--server", choices=("everything", "fast"), default="everything")
    ns = parser.parse_args()
    work: list[dict[str, Any]]
    if ns.server == "fast":
        argv, tool = [sys.executable, str(FAST_SERVER), "--name", "sweep"], "work"
        work = [{"x": i} for i in range(ns.calls)]
    else:
        argv, tool = _everything_argv(), "echo"
        work = [{"message": f"m{i}"} for i in range(ns.calls)]
    print(f"load average at start {os.getloadavg()}; {ns.rounds} rounds x {ns.calls} calls "
          f"to {ns.server}", flush=True)
    with Bench(timeout=60, connect_timeout=60) as bench, open(os.devnull, "w") as errlog:
        bench.connect("e", argv)
        deltas = get_loop().run(_body, bench, argv, tool, work, ns.rounds, errlog)
    print(f"load average at end {os.getloadavg()}")
    print_deltas(f"what keeping it costs a call of the sweep ({ns.server})", deltas, ns.rounds)


if __name__ == "__main__":
    sys.exit(main())
