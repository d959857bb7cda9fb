"""Per-call cost: sweeps on a fast server, and single calls, beside the SDK.

Where a server answers in tens of microseconds, the client's own per-call work decides
throughput. Peers, in one process, alternating repetition by repetition (each round runs
every subject once, in an order that flips every round, so drifting load weighs on all):

1. ``map`` of 3,000 calls at concurrency 8 against a stdlib-only stdio server that answers in
   ~50 µs (benchmarks/servers/fast_server.py): toolbench ``Bench.map(concurrency=8)`` against the
   SDK's ``mcp.Client`` with an ``anyio.CapacityLimiter(8)``, ``ClientSessionGroup`` with the
   same limiter, and fastmcp's ``Client`` with the same limiter.
2. The same sweep against the SDK's own Python server (benchmarks/servers/latency_server.py):
   there the server is the bottleneck, and every client should be alike.
3. One synchronous ``Bench.call`` at a time, in process, against the SDK's ``call_tool``
   awaited in its own loop (auto mode, direct dispatch: what ``Bench.connect(server)`` uses).
4. One synchronous ``Bench.call`` at a time over stdio (the SDK's Python server), against
   the SDK awaited in both protocol modes it offers: ``auto`` (negotiates 2026-07-28) and
   ``legacy`` (the 2025 initialize handshake).
4b. The same, against the stdlib-only fast server (tool ``add``): the SDK's server spends
   ~700 µs a call, which hides the client's cost; this one answers in tens of µs, so the
   client's own work is most of the call. It speaks only the 2025 handshake, so ``auto``
   falls back to it (one ``server/discover`` probe at connect).
5. In-process tools: ``ToolBox`` and ``Toolset``, through ``Bench.call`` and called directly.
6. The sync hop's floor: ``SharedLoop.run`` around fixed Python work of an in-process
   call's length (0 and 300 µs) against the same work in the caller's thread: no toolbench,
   no SDK.

Ratios are the **median of per-round ratios** (paired: the two subjects of a ratio ran in the
same round, seconds apart), with the per-call goals (issue 35: in process ≤ 1.10, stdio ≤ 1.05
of the faster SDK mode, the fast ``map`` ≤ 1.10 of the SDK and ≤ 1.0 of fastmcp).

**CPU per call** is measured beside wall time for every subject: ``time.process_time()``
deltas around exactly the span the wall time covers, recorded under the workload's name with
`` [process CPU]`` appended, in µs CPU/call (sweeps too: the sweep's CPU over its calls).
Subjects run one at a time, so the process's CPU over a span is that subject's own: the
caller's thread, toolbench's loop thread, the SDK's tasks in this process. The **server
child's CPU is not counted** (it is another process), nor is CPU another process spends on
this one's behalf. Each paired wall ratio with a target has a paired CPU ratio beside it
(target ≤ 1.10, the issue's "CPU time per call ≤ ×1.10 in each").

    python -m benchmarks.bench_sweep [--quick] [--only sweep,stdio_fast,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, TextIO, TypeAlias

import anyio
import anyio.to_thread
from mcp import Client, ClientSessionGroup, StdioServerParameters, stdio_client

from benchmarks import common
from toolbench import Bench
from toolbench._core.ids import ToolId
from toolbench._loop import get_loop
from toolbench._transports.toolbox import ToolBox
from toolbench._transports.toolset.toolset import Toolset

FAST_SERVER = common.BENCH_DIR / "servers" / "fast_server.py"
CAP = 8

W_SWEEP = "map of {n:,} calls, cap 8, fast stdlib stdio server (~50 µs)"
W_SWEEP_SDK = "map of {n:,} calls, cap 8, the SDK's Python stdio server"
W_ONE_IN = "one call at a time, in process"
W_ONE_IO = "one call at a time, stdio, the SDK's Python server (MCPServer)"
W_ONE_FAST = "one call at a time, stdio, the stdlib fast server (no SDK on the server side)"
W_LOCAL = "one call at a time, in-process tools (ToolBox, Toolset)"

SDK = "mcp.Client (SDK) + CapacityLimiter(8)"
CSG = "ClientSessionGroup (SDK) + CapacityLimiter(8)"
FAST = "fastmcp Client + CapacityLimiter(8)"
TB_MAP = "toolbench Bench.map(concurrency=8)"
SDK_AUTO = "mcp.Client.call_tool awaited, auto (2026 protocol)"
SDK_LEGACY = "mcp.Client.call_tool awaited, legacy (2025 handshake)"
SDK_IN = "mcp.Client.call_tool awaited (auto: direct dispatch)"
TB_CALL = "toolbench Bench.call (sync face)"
TB_ACALL = "toolbench Bench.acall on its own loop"
FM_ONE = "fastmcp Client.call_tool awaited"
CSG_ONE = "ClientSessionGroup.call_tool awaited (2025)"


CPU = " [process CPU]"
"""Appended to a workload's name for its CPU figures (a measurement is keyed by workload and
subject, and wall and CPU are separate measurements in separate units)."""
CPU_UNIT = "µs CPU/call"
CPU_TARGET = 1.10
"""Issue 35: CPU time per call ≤ ×1.10 of the paired peer, in each workload with a target."""

Span: TypeAlias = tuple[float, float]
"""(wall seconds, process CPU seconds) over the same span."""


def _clock() -> Span:
    return time.perf_counter(), time.process_time()


def _since(start: Span) -> Span:
    """Wall and process CPU since ``start`` (CPU read last: it is the cheaper clock)."""
    wall = time.perf_counter() - start[0]
    return wall, time.process_time() - start[1]


def fast_argv(name: str = "fast") -> list[str]:
    return [sys.executable, str(FAST_SERVER), "--name", name]


def _params(argv: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=argv[0], args=argv[1:])


def _fastmcp() -> Any:
    try:
        import fastmcp
        from fastmcp.client import transports  # noqa: F401
    except Exception as exc:
        return exc
    return fastmcp


def _checked(result: Any) -> Any:
    """A benchmark of errors measures nothing: every result must be a success."""
    if getattr(result, "is_error", False):
        raise RuntimeError(f"a benchmark call failed: {result!r}")
    return result


async def _capped(call: Callable[[int], Awaitable[Any]], n: int) -> Span:
    """``n`` calls, a task each, at most CAP at once: how an SDK user sweeps."""
    limiter = anyio.CapacityLimiter(CAP)

    async def one(i: int) -> None:
        async with limiter:
            _checked(await call(i))

    started = _clock()
    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
    return _since(started)


async def _seq(call: Callable[[int], Awaitable[Any]], n: int) -> Span:
    started = _clock()
    for i in range(n):
        _checked(await call(i))
    return _since(started)


async def _sync(fn: Callable[[], Span]) -> Span:
    """toolbench's sync face, from a plain thread (as a script or a notebook cell uses it)."""
    return await anyio.to_thread.run_sync(fn)


def _bench_seq(bench: Bench, name: str, n: int) -> Callable[[], Span]:
    def run() -> Span:
        started = _clock()
        for i in range(n):
            _checked(bench.call(name, {"a": i, "b": 2}))
        return _since(started)
    return run


def _bench_on_loop(bench: Bench, name: str, n: int) -> Callable[[], Span]:
    async def body() -> Span:
        started = _clock()
        for i in range(n):
            _checked(await bench.acall(name, {"a": i, "b": 2}))
        return _since(started)
    return lambda: get_loop().run(body)


def _bench_map(bench: Bench, name: str, n: int) -> Callable[[], Span]:
    work = [{"x": i} for i in range(n)]

    def run() -> Span:
        started = _clock()
        df = bench.map(name, work, concurrency=CAP, progress=False)
        took = _since(started)
        if len(df) != n or not df["ok"].all():
            raise RuntimeError(f"map had failures: {df[~df['ok']]['error'].head()}")
        return took
    return run


Subject = tuple[str, Callable[[], Awaitable[Span]]]


async def _rounds(figures: common.Figures, workload: str, unit: str, scale: float,
                  subjects: list[Subject], rounds: int, calls: int) -> None:
    """Warm each subject once, then ``rounds`` rounds; the order flips every round.

    Wall time in ``unit`` (seconds times ``scale``), and CPU per call under the workload's
    ``[process CPU]`` twin (``calls`` calls per run).
    """
    for _, fn in subjects:
        await fn()
    for r in range(rounds):
        order = subjects if r % 2 == 0 else subjects[::-1]
        for subject, fn in order:
            wall, cpu = await fn()
            figures.add(workload, subject, unit, wall * scale)
            figures.add(workload + CPU, subject, CPU_UNIT, cpu * 1e6 / calls)


def paired(figures: common.Figures, name: str, workload: str, num: str,
           den: str | tuple[str, ...], target: float | None = None) -> None:
    """The median of per-round ratios (``den`` several subjects: the round's fastest).

    A ratio with a target gets its CPU twin beside it (the same pairing on the workload's
    ``[process CPU]`` figures; target ``CPU_TARGET``).
    """
    if target is not None:
        _paired(figures, name, workload, num, den, target)
        _paired(figures, f"{name}, CPU per call", workload + CPU, num, den, CPU_TARGET)
    else:
        _paired(figures, name, workload, num, den, target)


def _paired(figures: common.Figures, name: str, workload: str, num: str,
            den: str | tuple[str, ...], target: float | None) -> None:
    dens = (den,) if isinstance(den, str) else den
    keys = [(workload, num), *((workload, d) for d in dens)]
    if not all(k in figures.measurements for k in keys):
        return
    top = figures.measurements[keys[0]].samples
    bottoms = [figures.measurements[k].samples for k in keys[1:]]
    ratios = [a / min(b[i] for b in bottoms) for i, a in enumerate(top)]
    figures.ratios.append(common.Ratio(
        name, statistics.median(ratios), target,
        note=f"median of {len(ratios)} paired rounds, range {min(ratios):.3f}–{max(ratios):.3f}"))


def paired_share(figures: common.Figures, name: str, workload: str, num: str, sub: str,
                 den: str | tuple[str, ...], allowance: float | None = None) -> None:
    """The median of per-round ``(num - sub) / den``: what one part of a call costs, as a
    share of the peer's whole call (``den`` several subjects: the round's fastest).

    ``Bench.call`` minus ``Bench.acall`` on its own loop is the hop to the loop and back;
    over the SDK's call it is the share of the goal's allowance (0.30, 0.05) the hop
    alone takes, however cheap toolbench's work on the loop gets.
    """
    dens = (den,) if isinstance(den, str) else den
    keys = [(workload, num), (workload, sub), *((workload, d) for d in dens)]
    if not all(k in figures.measurements for k in keys):
        return
    top, minus = (figures.measurements[k].samples for k in keys[:2])
    bottoms = [figures.measurements[k].samples for k in keys[2:]]
    shares = [(a - b) / min(d[i] for d in bottoms)
              for i, (a, b) in enumerate(zip(top, minus, strict=True))]
    figures.ratios.append(common.Ratio(
        name, statistics.median(shares), allowance,
        note=f"median of {len(shares)} paired rounds, range {min(shares):.3f}–{max(shares):.3f}"))


# -- 1, 2. sweeps -------------------------------------------------------------------------
async def _sweep_subjects(stack: AsyncExitStack, argv: list[str], bench: Bench, fm: Any,
                          errlog: TextIO, n: int) -> list[Subject]:
    sdk = await stack.enter_async_context(Client(stdio_client(_params(argv), errlog=errlog)))
    csg = await stack.enter_async_context(ClientSessionGroup(
        component_name_hook=lambda tool, info: f"{info.name}_{tool}"))
    session = await csg.connect_to_server(_params(argv))
    assert session is not None
    prefix = next(name for name in csg.tools if name.endswith("_work"))[: -len("work")]
    subjects: list[Subject] = [
        (SDK, lambda: _capped(lambda i: sdk.call_tool("work", {"x": i}), n)),
        (TB_MAP, lambda: _sync(_bench_map(bench, "s-work", n))),
        (CSG, lambda: _capped(lambda i: csg.call_tool(prefix + "work", {"x": i}), n)),
    ]
    if not isinstance(fm, BaseException):
        from fastmcp.client.transports import StdioTransport

        fast = await stack.enter_async_context(
            fm.Client(StdioTransport(argv[0], argv[1:], log_file=errlog)))
        subjects.append((FAST, lambda: _capped(lambda i: fast.call_tool("work", {"x": i}), n)))
    return subjects


def sweep(figures: common.Figures, quick: bool, fm: Any, errlog: TextIO, *,
          sdk_server: bool) -> None:
    if sdk_server:
        n, rounds = (100, 2) if quick else (1000, 3)
        argv, workload = common.server_argv(0, "sweep"), W_SWEEP_SDK.format(n=n)
    else:
        n, rounds = (300, 2) if quick else (3000, 7)
        argv, workload = fast_argv("sweep"), W_SWEEP.format(n=n)
    common.progress(f"{workload}: {rounds} rounds")
    with Bench() as bench:
        bench.connect("s", argv)

        async def main() -> None:
            async with AsyncExitStack() as stack:
                subjects = await _sweep_subjects(stack, argv, bench, fm, errlog, n)
                await _rounds(figures, workload, "s", 1.0, subjects, rounds, n)

        anyio.run(main)
    kind = "SDK's server" if sdk_server else "fast server"
    paired(figures, f"map / SDK + CapacityLimiter, {kind}", workload, TB_MAP, SDK,
           None if sdk_server else 1.10)
    paired(figures, f"map / fastmcp + CapacityLimiter, {kind}", workload, TB_MAP, FAST,
           None if sdk_server else 1.0)
    paired(figures, f"map / ClientSessionGroup + CapacityLimiter, {kind}", workload, TB_MAP,
           CSG)
    paired(figures, f"fastmcp / SDK + CapacityLimiter, {kind}", workload, FAST, SDK)


# -- 3. one call, in process ----------------------------------------------------------------
def one_inprocess(figures: common.Figures, quick: bool, fm: Any) -> None:
    rounds, calls = (2, 100) if quick else (9, 400)
    common.progress(f"{W_ONE_IN}: {rounds} rounds x {calls} calls")
    server = common.inprocess_server("inproc")
    with Bench() as bench:
        bench.connect("s", server)

        async def main() -> None:
            async with AsyncExitStack() as stack:
                sdk = await stack.enter_async_context(Client(server))
                subjects: list[Subject] = [
                    (SDK_IN, lambda: _seq(lambda i: sdk.call_tool("add", {"a": i, "b": 2}),
                                          calls)),
                    (TB_CALL, lambda: _sync(_bench_seq(bench, "s-add", calls))),
                    (TB_ACALL, lambda: _sync(_bench_on_loop(bench, "s-add", calls))),
                ]
                if not isinstance(fm, BaseException):
                    fast = await stack.enter_async_context(fm.Client(server))
                    subjects.append((FM_ONE + " (memory JSON-RPC)", lambda: _seq(
                        lambda i: fast.call_tool("add", {"a": i, "b": 2}), calls)))
                await _rounds(figures, W_ONE_IN, "µs/call", 1e6 / calls, subjects, rounds, calls)

        anyio.run(main)
    paired(figures, "Bench.call / SDK awaited, in process", W_ONE_IN, TB_CALL, SDK_IN, 1.10)
    paired(figures, "Bench.acall on its loop / SDK awaited, in process", W_ONE_IN, TB_ACALL,
           SDK_IN)
    paired_share(figures, "(Bench.call - Bench.acall on its loop) / SDK awaited, in process "
                 "(the hop's share; the goal allows 0.10 in all)", W_ONE_IN, TB_CALL, TB_ACALL,
                 SDK_IN, 0.10)


# -- 4. one call, stdio ---------------------------------------------------------------------
def one_stdio(figures: common.Figures, quick: bool, fm: Any, errlog: TextIO, *,
              stdlib_server: bool = False) -> None:
    """One synchronous call at a time over stdio, against the SDK's server or the stdlib one.

    The SDK's MCPServer spends ~700 µs a call, which hides most of the client's cost; the
    stdlib fast server answers in tens of µs, so there the client's own work shows.
    """
    rounds, calls = (2, 50) if quick else (9, 300)
    workload, kind = (W_ONE_FAST, "stdlib server") if stdlib_server else (W_ONE_IO,
                                                                           "SDK's server")
    common.progress(f"{workload}: {rounds} rounds x {calls} calls")
    argv = fast_argv("one") if stdlib_server else common.server_argv(0, "one")
    with Bench() as bench:
        bench.connect("s", argv)
        protocol = str(bench.servers.set_index("name").loc["s", "protocol"])
        other_protocol: str | None = None
        if not stdlib_server:  # the stdlib server speaks only 2025: no other protocol there
            try:  # the other protocol, for comparison (toolbench picks one by default)
                from toolbench._transports.mcp.client import McpClient

                other: Any = McpClient(argv, name="a", protocol_mode="auto")
                bench.connect("a", other)
                other_protocol = str(bench.servers.set_index("name").loc["a", "protocol"])
            except TypeError:  # a toolbench without protocol_mode
                pass

        async def main() -> None:
            async with AsyncExitStack() as stack:
                auto = await stack.enter_async_context(
                    Client(stdio_client(_params(argv), errlog=errlog), mode="auto"))
                legacy = await stack.enter_async_context(
                    Client(stdio_client(_params(argv), errlog=errlog), mode="legacy"))
                csg = await stack.enter_async_context(ClientSessionGroup(
                    component_name_hook=lambda tool, info: f"{info.name}_{tool}"))
                await csg.connect_to_server(_params(argv))
                subjects: list[Subject] = [
                    (SDK_AUTO, lambda: _seq(lambda i: auto.call_tool("add", {"a": i, "b": 2}),
                                            calls)),
                    (SDK_LEGACY, lambda: _seq(
                        lambda i: legacy.call_tool("add", {"a": i, "b": 2}), calls)),
                    (f"{TB_CALL}, protocol {protocol}",
                     lambda: _sync(_bench_seq(bench, "s-add", calls))),
                    (f"{TB_ACALL}, protocol {protocol}",
                     lambda: _sync(_bench_on_loop(bench, "s-add", calls))),
                    *([(f"{TB_CALL}, protocol {other_protocol} (override)",
                        lambda: _sync(_bench_seq(bench, "a-add", calls)))]
                      if other_protocol is not None else []),
                    (CSG_ONE, lambda: _seq(lambda i: csg.call_tool("one_add", {"a": i, "b": 2}),
                                           calls)),
                ]
                if not isinstance(fm, BaseException):
                    from fastmcp.client.transports import StdioTransport

                    fast = await stack.enter_async_context(
                        fm.Client(StdioTransport(argv[0], argv[1:], log_file=errlog)))
                    subjects.append((FM_ONE, lambda: _seq(
                        lambda i: fast.call_tool("add", {"a": i, "b": 2}), calls)))
                await _rounds(figures, workload, "µs/call", 1e6 / calls, subjects, rounds,
                              calls)

        anyio.run(main)
    tb = f"{TB_CALL}, protocol {protocol}"
    both = (SDK_AUTO, SDK_LEGACY)
    paired(figures, f"Bench.call / faster SDK mode, stdio, {kind}", workload, tb, both, 1.05)
    paired(figures, f"Bench.call / SDK auto, stdio, {kind}", workload, tb, SDK_AUTO)
    paired(figures, f"Bench.call / SDK legacy (2025), stdio, {kind}", workload, tb, SDK_LEGACY)
    paired(figures, f"SDK auto / SDK legacy (2025), stdio, {kind}", workload, SDK_AUTO,
           SDK_LEGACY)
    paired(figures, f"Bench.call / fastmcp, stdio, {kind}", workload, tb, FM_ONE)
    on_loop = f"{TB_ACALL}, protocol {protocol}"
    paired(figures, f"Bench.acall on its loop / faster SDK mode, stdio, {kind}", workload,
           on_loop, both)
    paired_share(figures, f"(Bench.call - Bench.acall on its loop) / faster SDK mode, stdio, "
                 f"{kind} (the hop's share; the goal allows 0.05 in all)", workload, tb, on_loop,
                 both, 0.05)


# -- 6. the hop's floor ---------------------------------------------------------------------
W_HOP = "the sync hop around fixed Python work (no toolbench, no SDK)"


def _work(loops: int) -> None:
    """A fixed amount of Python work (not a wall-clock wait: preemption must not count as
    work, and a thread that runs colder after sleeping must show as taking longer)."""
    total = 0
    for i in range(loops):
        total += i


def _loops_for(us: float) -> int:
    """How many ``_work`` loops take ``us`` µs here, warm, in this thread (best of 5)."""
    if not us:
        return 0
    n = 20_000
    best = min(common.timed(lambda: _work(n)) for _ in range(5))
    return max(1, round(n * us / 1e6 / best))


def hop_floor(figures: common.Figures, quick: bool) -> None:
    """What ``SharedLoop.run`` costs around work of a call's length, with nothing else.

    The work is a fixed Python loop on the loop thread (it holds the GIL, as a call's Python
    does), against the same loop in the caller's own thread. Its extra time is the floor of any
    synchronous call through the shared loop: the loop's wake-up, the caller's, and
    whatever the two threads lose by having slept (on a VM whose idle vCPUs halt at once,
    both wake-ups grow with how long a thread slept; BENCHMARKS.md, "Per-call cost").
    """
    rounds, calls = (2, 100) if quick else (9, 400)
    common.progress(f"{W_HOP}: {rounds} rounds x {calls} calls")
    loop = get_loop()
    for us in (0, 300):
        loops = _loops_for(us)

        async def on_loop(loops: int = loops) -> None:
            _work(loops)

        def inline(loops: int = loops) -> Span:
            started = _clock()
            for _ in range(calls):
                _work(loops)
            return _since(started)

        def hopped(fn: Callable[[], Awaitable[None]] = on_loop) -> Span:
            started = _clock()
            for _ in range(calls):
                loop.run(fn)
            return _since(started)

        here, there = (f"{us} µs of work in the caller's thread",
                       f"{us} µs of work via the sync hop")
        inline(), hopped()
        for r in range(rounds):
            pair: list[tuple[str, Callable[[], Span]]] = [(here, inline), (there, hopped)]
            walls: dict[str, float] = {}
            cpus: dict[str, float] = {}
            for subject, fn in (pair if r % 2 == 0 else pair[::-1]):
                wall, cpu = fn()
                walls[subject], cpus[subject] = wall * 1e6 / calls, cpu * 1e6 / calls
                figures.add(W_HOP, subject, "µs/call", walls[subject])
                figures.add(W_HOP + CPU, subject, CPU_UNIT, cpus[subject])
            figures.add(W_HOP, f"hop overhead around {us} µs", "µs/call",
                        walls[there] - walls[here])
            figures.add(W_HOP + CPU, f"hop overhead around {us} µs", CPU_UNIT,
                        cpus[there] - cpus[here])
        if us:
            paired_share(figures, f"hop overhead / {us} µs of work (an in-process SDK call's "
                         "length; the goal allows 0.10 in all)", W_HOP, there, here, here, 0.10)
            paired_share(figures, f"hop overhead / {us} µs of work, CPU per call", W_HOP + CPU,
                         there, here, here)


# -- 5. in-process tools --------------------------------------------------------------------
def one_local(figures: common.Figures, quick: bool) -> None:
    rounds, calls = (2, 200) if quick else (7, 1000)
    common.progress(f"{W_LOCAL}: {rounds} rounds x {calls} calls")
    box = ToolBox()

    @box.tool(server="box")
    async def add(a: int, b: int) -> int:
        return a + b

    ts = Toolset("set", max_concurrent=None)

    @ts.tool("add", input_schema={"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}})
    async def ts_add(data: dict[str, Any]) -> dict[str, Any]:
        return {"result": data["a"] + data["b"]}

    box_id, ts_id = ToolId("box", "add"), ToolId("set", "add")

    async def direct(client: Any, tid: ToolId) -> Span:
        started = _clock()
        for i in range(calls):
            await client.call(tid, {"a": i, "b": 2})
        return _since(started)

    with Bench() as bench:
        bench.add(box)
        bench.connect("set", ts)

        async def main() -> None:
            subjects: list[Subject] = [
                ("ToolBox.call awaited (no bench)", lambda: direct(box, box_id)),
                ("Toolset.call awaited (no bench)", lambda: direct(ts, ts_id)),
                ("toolbench Bench.call -> ToolBox", lambda: _sync(
                    _bench_seq(bench, "box-add", calls))),
                ("toolbench Bench.call -> Toolset", lambda: _sync(
                    _bench_seq(bench, "set-add", calls))),
            ]
            await _rounds(figures, W_LOCAL, "µs/call", 1e6 / calls, subjects, rounds, calls)

        anyio.run(main)


def run(quick: bool = False) -> dict[str, Any]:
    figures = common.Figures()
    fm = _fastmcp()
    if isinstance(fm, BaseException):
        figures.skip("fastmcp", f"not importable ({fm!r}); pip install 'fastmcp>=4,<5'")
    with open(os.devnull, "w") as errlog:
        sweep(figures, quick, fm, errlog, sdk_server=False)
        one_inprocess(figures, quick, fm)
        one_stdio(figures, quick, fm, errlog)
        one_stdio(figures, quick, fm, errlog, stdlib_server=True)
        one_local(figures, quick)
        hop_floor(figures, quick)
        sweep(figures, quick, fm, errlog, sdk_server=True)
    return figures.as_dict()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small and fast (a smoke test)")
    parser.add_argument("--json", default="", help="also write the figures to this file")
    parser.add_argument("--only", default="", help="comma-separated: sweep, sdk_sweep, "
                        "inprocess, stdio (the SDK's server), stdio_fast (the stdlib server), "
                        "local, hop (default: all)")
    ns = parser.parse_args()
    if ns.only:
        figs, fm_ = common.Figures(), _fastmcp()
        with open(os.devnull, "w") as log:
            parts: dict[str, Callable[[], None]] = {
                "sweep": lambda: sweep(figs, ns.quick, fm_, log, sdk_server=False),
                "sdk_sweep": lambda: sweep(figs, ns.quick, fm_, log, sdk_server=True),
                "inprocess": lambda: one_inprocess(figs, ns.quick, fm_),
                "stdio": lambda: one_stdio(figs, ns.quick, fm_, log),
                "stdio_fast": lambda: one_stdio(figs, ns.quick, fm_, log, stdlib_server=True),
                "local": lambda: one_local(figs, ns.quick),
                "hop": lambda: hop_floor(figs, ns.quick)}
            for part in ns.only.split(","):
                parts[part.strip()]()
        data = figs.as_dict()
    else:
        data = run(ns.quick)
    from benchmarks.run import table

    print(table({"machine": {"cores": os.cpu_count(), "implementation": "", "python": "",
                             "platform": "", "load_average_at_start": os.getloadavg(),
                             "packages": {}},
                 "measurements": data["measurements"], "ratios": data["ratios"],
                 "scripts": {}, "skipped": data["skipped"], "missing": [], "failed": []}))
    if ns.json:
        with open(ns.json, "w") as f:
            f.write(json.dumps(data, indent=1, default=str) + "\n")
