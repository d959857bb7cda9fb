"""toolbench beside what a user would pick instead, on the same servers in the same run.

Peers: the SDK's ``mcp.Client`` (the floor), the SDK's ``ClientSessionGroup``, ``fastmcp``'s
``Client``/``ClientGroup`` (the ``bench`` extra), and, in their own venv, peers that pin
``mcp<2`` (``langchain-mcp-adapters`` and the 1.x ``ClientSession``). Every stdio peer starts
its own children from the same script, benchmarks/servers/latency_server.py.

1. sequential call latency, in process and over stdio;
2. N calls to a 20 ms server under a cap of 8 (wall time against the ideal N/8 x 20 ms);
3. fan-out of one tool name to 5 servers (50–250 ms; and with no latency);
4. connect and discover 20 stdio servers: concurrently, and one after another.

The SDK-side peers run in one ``anyio.run`` (their natural use: no thread hop). toolbench's
sync face (what a notebook cell uses) is called from a worker thread of that same run, so
every connection stays open across rounds, and rounds interleave the subjects.

    python -m benchmarks.bench_peers [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any, TextIO

import anyio
import anyio.to_thread
from mcp import Client, ClientSessionGroup, StdioServerParameters, stdio_client

from benchmarks import common
from toolbench import Bench
from toolbench._core.ids import ToolId
from toolbench._loop import get_loop
from toolbench._transports.mcp.client import McpClient

LATENCIES = (50, 100, 150, 200, 250)
CAP = 8
CONC_DELAY_MS = 20

W1_IN = "1. sequential call latency, in process"
W1_IO = "1. sequential call latency, stdio"
W2 = "2. {n:,} calls at 20 ms under a cap of 8 (ideal {ideal:.2f} s)"
W3 = "3. fan-out of one tool to {n} servers at 50–250 ms"
W3_0 = "3. fan-out of one tool to {n} servers, no latency"
W4 = "4. connect and discover {n} stdio servers"

SDK = "mcp.Client (SDK, floor)"
SDK_ONE = "mcp.Client, the slowest server alone"
BENCH = "toolbench Bench"
BENCH_ONE = "toolbench Bench.call, the slowest server alone"
MCPC = "toolbench McpClient.call_sync"
FAST = "fastmcp Client"
CSG = "ClientSessionGroup (SDK)"
MCP1_DIR = common.BENCH_DIR / ".venv-mcp1"


def _fastmcp() -> Any:
    """fastmcp's module, or None with the reason printed (it is the optional ``bench`` extra)."""
    try:
        import fastmcp
        from fastmcp.client import group, transports  # noqa: F401
    except Exception as exc:
        return exc
    return fastmcp


def _params(argv: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=argv[0], args=argv[1:])


async def _seq(call: Callable[[int], Awaitable[Any]], n: int) -> float:
    started = time.perf_counter()
    for i in range(n):
        await call(i)
    return time.perf_counter() - started


async def _capped(call: Callable[[int], Awaitable[Any]], n: int, cap: int = CAP) -> float:
    """``n`` calls, each in its own task, at most ``cap`` at once: how the SDK user does it."""
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


async def _sync(fn: Callable[[], Any]) -> Any:
    """toolbench's sync face, from a plain thread (as in a script or a notebook cell)."""
    return await anyio.to_thread.run_sync(fn)


def _checked(result: Any) -> Any:
    """A benchmark of errors measures nothing: every SDK-style result must be a success."""
    if getattr(result, "is_error", False):
        raise RuntimeError(f"a benchmark call failed: {result!r}")
    return result


def _timed_sync(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


# -- 1. in process ----------------------------------------------------------------------------
def inprocess(figures: common.Figures, quick: bool, fm: Any) -> None:
    rounds, calls = common.rounds_for(quick), (100 if quick else 1000)
    common.progress(f"{W1_IN}: {rounds} rounds x {calls} calls")
    server = common.inprocess_server("inproc")
    bench = Bench()
    mc = McpClient(server, name="inproc")
    try:
        bench.connect("inproc", server)
        get_loop().run(mc.aconnect)  # McpClient is async: the shared loop's hop
        tid = ToolId("inproc", "add")

        def bench_round() -> float:
            return _timed_sync(lambda: [bench.call("inproc-add", {"a": i, "b": 2})
                                        for i in range(calls)])

        def mc_round() -> float:
            return _timed_sync(lambda: [get_loop().run(mc.call, tid, {"a": i, "b": 2})
                                        for i in range(calls)])

        async def main() -> None:
            async with AsyncExitStack() as stack:
                sdk = await stack.enter_async_context(Client(server))
                group = await stack.enter_async_context(ClientSessionGroup())
                # ClientSessionGroup has no in-process transport; hand it the SDK's session.
                shared = await stack.enter_async_context(Client(server))
                assert shared.server_info is not None
                await group.connect_with_session(shared.server_info, shared.session)
                fast = None
                if not isinstance(fm, BaseException):
                    fast = await stack.enter_async_context(fm.Client(server))
                subjects: list[tuple[str, Callable[[], Awaitable[float]]]] = [
                    (SDK, lambda: _seq(lambda i: sdk.call_tool("add", {"a": i, "b": 2}), calls)),
                    (BENCH + ".call", lambda: _sync(bench_round)),
                    (MCPC, lambda: _sync(mc_round)),
                    (CSG, lambda: _seq(lambda i: group.call_tool("add", {"a": i, "b": 2}),
                                       calls)),
                ]
                if fast is not None:
                    subjects.append((FAST + " (memory-stream JSON-RPC)", lambda: _seq(
                        lambda i: fast.call_tool("add", {"a": i, "b": 2}), calls)))
                for _, fn in subjects:  # warm every path once
                    await fn()
                for _ in range(rounds):
                    for subject, fn in subjects:
                        figures.add(W1_IN, subject, "µs/call", await fn() / calls * 1e6)

        anyio.run(main)
    finally:
        get_loop().run(mc.aclose)
        bench.close()
    figures.ratio("Bench.call / mcp.Client, in process (auto mode)", W1_IN, BENCH + ".call", SDK)
    figures.ratio("McpClient.call_sync / mcp.Client, in process", W1_IN, MCPC, SDK)


# -- 1-3. over stdio --------------------------------------------------------------------------
def stdio(figures: common.Figures, quick: bool, fm: Any, errlog: TextIO) -> None:
    rounds = common.rounds_for(quick)
    seq_calls, conc_calls = (30, 80) if quick else (300, 1000)
    ideal = conc_calls / CAP * CONC_DELAY_MS / 1000
    w2 = W2.format(n=conc_calls, ideal=ideal)
    # --quick keeps the fastest and the slowest server: every child costs ~1 s of CPU to start.
    latencies = (LATENCIES[0], LATENCIES[-1]) if quick else LATENCIES
    servers = {f"lat{ms:03d}": common.server_argv(ms, f"lat{ms:03d}") for ms in latencies}
    first, slowest = "lat050", "lat250"
    w3, w30 = W3.format(n=len(servers)), W3_0.format(n=len(servers))
    common.progress(f"stdio workloads 1-3: {len(servers)} servers per peer, {rounds} rounds")
    bench = Bench()
    mc = McpClient(servers[first], name=first)
    try:
        table = bench.load_config(common.mcp_config(servers))
        bad = table[table["status"] != "connected"]
        if len(bad):
            raise RuntimeError(f"servers failed to connect: {bad[['name', 'error']]}")
        get_loop().run(mc.aconnect)  # McpClient is async: the shared loop's hop
        tid = ToolId(first, "add")
        work = [{"x": i, "delay_ms": CONC_DELAY_MS} for i in range(conc_calls)]

        def bench_seq() -> float:
            return _timed_sync(lambda: [bench.call(f"{first}-add", {"a": i, "b": 2})
                                        for i in range(seq_calls)])

        def mc_seq() -> float:
            return _timed_sync(lambda: [get_loop().run(mc.call, tid, {"a": i, "b": 2})
                                        for i in range(seq_calls)])

        def bench_map() -> float:
            started = time.perf_counter()
            df = bench.map(f"{first}-work", work, concurrency=CAP, progress=False)
            took = time.perf_counter() - started
            if not df["ok"].all():
                raise RuntimeError(f"map had failures: {df[~df['ok']]['error'].head()}")
            return took

        def bench_compare(args: dict[str, Any]) -> float:
            started = time.perf_counter()
            df = bench.compare("work", args)
            took = time.perf_counter() - started
            if len(df) != len(servers) or not df["ok"].all():
                raise RuntimeError(f"compare had failures: {df[['server', 'error']]}")
            return took

        async def main() -> None:
            async with AsyncExitStack() as stack:
                sdk: dict[str, Client] = {}
                for name, argv in servers.items():
                    sdk[name] = await stack.enter_async_context(
                        Client(stdio_client(_params(argv), errlog=errlog)))
                csg = await stack.enter_async_context(ClientSessionGroup(
                    component_name_hook=lambda tool, info: f"{info.name}_{tool}"))
                for argv in servers.values():
                    await csg.connect_to_server(_params(argv))
                fgroup = None
                if not isinstance(fm, BaseException):
                    from fastmcp.client.group import ClientGroup
                    from fastmcp.client.transports import StdioTransport

                    fgroup = ClientGroup({
                        name: fm.Client(StdioTransport(argv[0], argv[1:], log_file=errlog))
                        for name, argv in servers.items()})
                    await stack.enter_async_context(fgroup)
                    await fgroup.list_tools()

                async def sdk_call(name: str, tool: str, args: dict[str, Any]) -> None:
                    _checked(await sdk[name].call_tool(tool, args))

                seq: list[tuple[str, Callable[[], Awaitable[float]]]] = [
                    (SDK, lambda: _seq(lambda i: sdk_call(first, "add", {"a": i, "b": 2}),
                                       seq_calls)),
                    (BENCH + ".call", lambda: _sync(bench_seq)),
                    (MCPC, lambda: _sync(mc_seq)),
                    (CSG, lambda: _seq(lambda i: csg.call_tool(f"{first}_add",
                                                               {"a": i, "b": 2}), seq_calls)),
                ]
                conc: list[tuple[str, Callable[[], Awaitable[float]]]] = [
                    (SDK + " + CapacityLimiter(8)",
                     lambda: _capped(lambda i: sdk_call(first, "work", work[i]), conc_calls)),
                    (BENCH + ".map(concurrency=8)", lambda: _sync(bench_map)),
                    (CSG + " + CapacityLimiter(8)",
                     lambda: _capped(lambda i: csg.call_tool(f"{first}_work", work[i]),
                                     conc_calls)),
                ]

                def fan(args: dict[str, Any]) -> list[tuple[str, Callable[[], Awaitable[float]]]]:
                    subjects: list[tuple[str, Callable[[], Awaitable[float]]]] = [
                        (SDK + " xN, task group", lambda: _fan([
                            (lambda n=n: sdk_call(n, "work", args)) for n in servers])),
                        (BENCH + ".compare", lambda: _sync(lambda: bench_compare(args))),
                        (CSG + ", task group", lambda: _fan([
                            (lambda n=n: csg.call_tool(f"{n}_work", args)) for n in servers])),
                    ]
                    if fgroup is not None:
                        group = fgroup
                        subjects.append(("fastmcp ClientGroup, task group", lambda: _fan([
                            (lambda n=n: group.call_tool(f"{n}_work", args))
                            for n in servers])))
                    return subjects

                if fgroup is not None:
                    fast = fgroup.clients[first]
                    seq.append((FAST, lambda: _seq(
                        lambda i: fast.call_tool("add", {"a": i, "b": 2}), seq_calls)))
                    conc.append((FAST + " + CapacityLimiter(8)", lambda: _capped(
                        lambda i: fast.call_tool("work", work[i]), conc_calls)))
                fan_slow, fan_none = fan({"x": 1}), fan({"x": 1, "delay_ms": 0})
                fan_slow += [
                    (SDK_ONE, lambda: _fan([lambda: sdk_call(slowest, "work", {"x": 1})])),
                    (BENCH_ONE, lambda: _sync(lambda: _timed_sync(
                        lambda: bench.call(f"{slowest}-work", {"x": 1})))),
                ]
                for _, fn in seq + fan_none:  # warm every path once
                    await fn()
                for r in range(rounds):
                    common.progress(f"  round {r + 1}/{rounds}")
                    for subject, fn in seq:
                        figures.add(W1_IO, subject, "µs/call", await fn() / seq_calls * 1e6)
                    for subject, fn in conc:
                        figures.add(w2, subject, "s", await fn())
                    for subject, fn in fan_slow:
                        figures.add(w3, subject, "ms", await fn() * 1e3)
                    for subject, fn in fan_none:
                        figures.add(w30, subject, "ms", await fn() * 1e3)

        anyio.run(main)
    finally:
        get_loop().run(mc.aclose)
        bench.close()
    _mcp1(figures, quick, servers, rounds, seq_calls, conc_calls, (w2, w3, w30))
    _stdio_ratios(figures, (w2, w3, w30), ideal)


def _stdio_ratios(figures: common.Figures, workloads: tuple[str, str, str], ideal: float) -> None:
    w2, w3, w30 = workloads
    figures.ratio("Bench.call / mcp.Client, stdio", W1_IO, BENCH + ".call", SDK)
    figures.ratio("McpClient.call_sync / mcp.Client, stdio", W1_IO, MCPC, SDK)
    for (workload, subject), m in list(figures.measurements.items()):
        if workload == w2:
            figures.ratios.append(common.Ratio(f"{subject}: wall / ideal", m.median / ideal,
                                               note=f"ideal {ideal:.2f} s"))
    figures.ratio("Bench.map / SDK + CapacityLimiter, 20 ms x cap 8", w2,
                  BENCH + ".map(concurrency=8)", SDK + " + CapacityLimiter(8)", 1.10)
    figures.ratio("Bench.compare / slowest server alone (Bench.call), 50–250 ms", w3,
                  BENCH + ".compare", BENCH_ONE, 1.2)
    figures.ratio("Bench.compare / slowest server alone (mcp.Client), 50–250 ms", w3,
                  BENCH + ".compare", SDK_ONE, 1.2)
    figures.ratio("Bench.compare / SDK task group, 50–250 ms", w3,
                  BENCH + ".compare", SDK + " xN, task group")
    figures.ratio("Bench.compare / SDK task group, no latency", w30,
                  BENCH + ".compare", SDK + " xN, task group")


def _mcp1(figures: common.Figures, quick: bool, servers: dict[str, list[str]], rounds: int,
          seq_calls: int, conc_calls: int, workloads: tuple[str, str, str]) -> None:
    """Peers pinned to mcp<2, in their own venv (built once, cached under benchmarks/)."""
    subject = "langchain-mcp-adapters / mcp 1.x"
    if quick:
        figures.skip(subject, "--quick skips the separate mcp<2 venv (building it takes ~1 min)")
        return
    python = MCP1_DIR / "bin" / "python"
    if not python.exists():
        common.progress(f"building {MCP1_DIR} (mcp<2 peers) ...")
        base = os.path.join(sys.base_prefix, "bin", "python3")
        try:
            subprocess.run([base, "-m", "venv", str(MCP1_DIR)], check=True, timeout=120,
                           capture_output=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", "-r",
                            str(common.BENCH_DIR / "peers_mcp1" / "requirements.txt")],
                           check=True, timeout=600, capture_output=True, text=True)
        except (subprocess.SubprocessError, OSError) as exc:
            tail = getattr(exc, "stderr", "") or ""
            figures.skip(subject, f"could not build {MCP1_DIR.name}: {exc} {tail[-300:]}")
            return
    spec = {"servers": servers, "rounds": rounds, "seq_calls": seq_calls,
            "conc_calls": conc_calls, "cap": CAP, "conc_delay_ms": CONC_DELAY_MS,
            "default_calls": 3}
    common.progress(f"mcp<2 peers in {MCP1_DIR.name}: {rounds} rounds")
    try:
        out = subprocess.run([str(python), str(common.BENCH_DIR / "peers_mcp1" / "peer.py"),
                              json.dumps(spec)], capture_output=True, text=True, timeout=900,
                             check=True)
        samples = json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, OSError, ValueError, IndexError) as exc:
        tail = getattr(exc, "stderr", "") or ""
        figures.skip(subject, f"the mcp<2 peer run failed: {exc} {tail[-500:]}")
        return
    w2, w3, w30 = workloads
    # peer.py reports seconds: per call for "seq", wall time for the rest.
    where = {"seq": (W1_IO, "µs/call", 1e6), "conc": (w2, "s", 1.0),
             "fan": (w3, "ms", 1e3), "fan0": (w30, "ms", 1e3)}
    for peer, keys in samples.items():
        for key, values in keys.items():
            workload, unit, scale = where[key]
            label = peer + (" + CapacityLimiter(8)" if key == "conc" else "")
            for v in values:
                figures.add(workload, label, unit, v * scale, note="own process, own rounds")


# -- 4. connect and discover ------------------------------------------------------------------
async def _sdk_connect_all(servers: dict[str, list[str]], errlog: TextIO) -> float:
    """Every server in its own task (enter, list, wait), so the SDK connects concurrently."""
    listed, all_listed, stop = [0], anyio.Event(), anyio.Event()

    async def one(argv: list[str]) -> None:
        async with Client(stdio_client(_params(argv), errlog=errlog)) as client:
            await client.list_tools()
            listed[0] += 1
            if listed[0] == len(servers):
                all_listed.set()
            await stop.wait()

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for argv in servers.values():
            tg.start_soon(one, argv)
        with anyio.fail_after(120):
            await all_listed.wait()
        took = time.perf_counter() - started
        stop.set()
    return took


async def _csg_connect_all(servers: dict[str, list[str]]) -> float:
    started = time.perf_counter()
    async with ClientSessionGroup(
            component_name_hook=lambda tool, info: f"{info.name}_{tool}") as group:
        for argv in servers.values():
            await group.connect_to_server(_params(argv))
        took = time.perf_counter() - started
        assert len(group.tools) == 2 * len(servers)
    return took


async def _fastmcp_connect_all(fm: Any, servers: dict[str, list[str]], errlog: TextIO) -> float:
    from fastmcp.client.group import ClientGroup
    from fastmcp.client.transports import StdioTransport

    group = ClientGroup({name: fm.Client(StdioTransport(argv[0], argv[1:], log_file=errlog))
                         for name, argv in servers.items()})
    started = time.perf_counter()
    async with group:
        tools = await group.list_tools()
        took = time.perf_counter() - started
        assert len(tools) == 2 * len(servers)
    return took


def connect_many(figures: common.Figures, quick: bool, fm: Any, errlog: TextIO) -> None:
    n, rounds = (2, 2) if quick else (20, 3)
    w = W4.format(n=n)
    common.progress(f"{w}: {rounds} rounds")
    servers = {f"c{i:02d}": common.server_argv(0, f"c{i:02d}") for i in range(n)}
    config = common.mcp_config(servers)

    def bench_concurrent() -> float:
        with Bench() as bench:
            started = time.perf_counter()
            table = bench.load_config(config)
            took = time.perf_counter() - started
            assert (table["status"] == "connected").all() and table["tools"].sum() == 2 * n
        return took

    def bench_sequential() -> float:
        with Bench() as bench:
            started = time.perf_counter()
            for name, argv in servers.items():
                bench.connect(name, argv)
            took = time.perf_counter() - started
            assert bench.pegboard.tool_count() == 2 * n
        return took

    for r in range(rounds):
        common.progress(f"  round {r + 1}/{rounds}")
        figures.add(w, "toolbench Bench.load_config (concurrent)", "s", bench_concurrent())
        figures.add(w, "toolbench Bench.connect, one after another", "s", bench_sequential())
        figures.add(w, "mcp.Client x N, task per server (SDK, floor)", "s",
                    anyio.run(_sdk_connect_all, servers, errlog))
        if not quick:
            figures.add(w, "ClientSessionGroup.connect_to_server, one after another", "s",
                        anyio.run(_csg_connect_all, servers))
        if not isinstance(fm, BaseException) and not quick:
            figures.add(w, "fastmcp ClientGroup (concurrent)", "s",
                        anyio.run(_fastmcp_connect_all, fm, servers, errlog))
    figures.ratio("Bench.load_config / one after another", w,
                  "toolbench Bench.load_config (concurrent)",
                  "toolbench Bench.connect, one after another")
    figures.ratio("Bench.load_config / SDK task per server", w,
                  "toolbench Bench.load_config (concurrent)",
                  "mcp.Client x N, task per server (SDK, floor)")


def run(quick: bool = False) -> dict[str, Any]:
    figures = common.Figures()
    fm = _fastmcp()
    if isinstance(fm, BaseException):
        figures.skip("fastmcp", f"not importable ({fm!r}); install the bench extra: "
                                "pip install 'fastmcp>=4,<5'")
    with open(os.devnull, "w") as errlog:  # the children's stderr: quiet servers, clean table
        inprocess(figures, quick, fm)
        stdio(figures, quick, fm, errlog)
        connect_many(figures, quick, fm, errlog)
    return figures.as_dict()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small and fast (a smoke test)")
    print(json.dumps(run(parser.parse_args().quick), indent=1, default=str))
