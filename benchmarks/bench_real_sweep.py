"""A real server's sweep: 1,000 ``echo`` calls to server-everything over stdio, cap 8.

toolbench's ``Bench.map(concurrency=8)`` against the raw SDK (``mcp.Client`` over
``stdio_client``, an ``anyio.CapacityLimiter(8)`` and a task per call), both talking to their
own ``@modelcontextprotocol/server-everything`` child (the pinned npm version that
``.ci/run`` installs; ``tests/servers/everything.py`` finds it). Per subject: calls per second
and CPU per call, of this process (every thread: the caller, toolbench's loop thread, the SDK's
tasks) and of the server child (node), each over exactly the span the wall time covers.

Pairing: one child process per tree and round (``--against DIR`` adds another checkout, run
with ``PYTHONPATH=DIR``, the trees alternating and their order flipping each round). In each
child both subjects are warmed once, then run ``--reps`` times each, interleaved, the order
flipping every repetition; the child's ratio is the median of its per-repetition ratios
(toolbench's calls/s ÷ the SDK's). The report gives, per tree, the median and range of those
ratios over rounds, and the load average at the start and the end.

    python -m benchmarks.bench_real_sweep [--rounds 5] [--reps 3] [--calls 1000]
        [--against /tmp/before-sweep] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CAP = 8
TB = "toolbench Bench.map(concurrency=8)"
SDK = "mcp.Client + CapacityLimiter(8)"


def _everything_argv() -> list[str]:
    sys.path.insert(0, str(REPO / "tests"))
    from servers import everything  # tests/servers/everything.py: locate + pinned version

    return everything.stdio_command()


def _child_cpu(pids: set[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def _children() -> set[int]:
    import psutil

    return {p.pid for p in psutil.Process().children(recursive=True)}


def child(calls: int, reps: int) -> dict[str, Any]:
    """One process: both subjects warmed, then ``reps`` interleaved repetitions of each."""
    import anyio
    import anyio.to_thread
    from mcp import Client, StdioServerParameters, stdio_client

    import toolbench
    from toolbench import Bench

    argv = _everything_argv()
    work = [{"message": f"m{i}"} for i in range(calls)]
    out: dict[str, Any] = {"toolbench": toolbench.__file__, "reps": []}
    with Bench(timeout=60, connect_timeout=60) as bench:
        bench.connect("e", argv)
        tb_pids = _children()

        def tb_map() -> None:
            df = bench.map("e-echo", work, concurrency=CAP, progress=False)
            if len(df) != calls or not df["ok"].all():
                raise RuntimeError(f"map had failures: {df[~df['ok']]['error'].head()}")

        async def main() -> None:
            errlog = open(os.devnull, "w")  # noqa: SIM115 (closed below)
            params = StdioServerParameters(command=argv[0], args=argv[1:])
            try:
                async with Client(stdio_client(params, errlog=errlog)) as sdk:
                    sdk_pids = _children() - tb_pids

                    async def sdk_map() -> None:
                        limiter = anyio.CapacityLimiter(CAP)

                        async def one(i: int) -> None:
                            async with limiter:
                                result = await sdk.call_tool("echo", work[i])
                                if result.is_error:
                                    raise RuntimeError(f"the SDK's call failed: {result!r}")

                        async with anyio.create_task_group() as tg:
                            for i in range(calls):
                                tg.start_soon(one, i)

                    async def tb() -> None:
                        await anyio.to_thread.run_sync(tb_map)

                    subjects = {TB: (tb, tb_pids), SDK: (sdk_map, sdk_pids)}
                    for fn, _ in subjects.values():
                        await fn()  # warm: imports, caches, the server's JIT
                    for r in range(reps):
                        order = [TB, SDK] if r % 2 == 0 else [SDK, TB]
                        rep: dict[str, Any] = {}
                        for name in order:
                            fn, pids = subjects[name]
                            c0 = _child_cpu(pids)
                            w0, p0 = time.perf_counter(), time.process_time()
                            await fn()
                            wall = time.perf_counter() - w0
                            cpu = time.process_time() - p0
                            server = _child_cpu(pids) - c0
                            rep[name] = {"calls_per_s": calls / wall,
                                         "cpu_us": cpu / calls * 1e6,
                                         "server_cpu_us": server / calls * 1e6}
                        out["reps"].append(rep)
            finally:
                errlog.close()

        anyio.run(main)
    return out


def _summary(values: list[float]) -> str:
    return (f"{statistics.median(values):.3f} (range {min(values):.3f}–{max(values):.3f}, "
            f"n={len(values)})")


def run_trees(trees: dict[str, str], rounds: int, reps: int, calls: int) -> dict[str, Any]:
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    load_start = os.getloadavg()
    names = list(trees)
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for label in order:
            env = {**os.environ, "PYTHONPATH": trees[label]}
            # Run by path from a neutral folder: ``-m`` would put this checkout first on
            # sys.path, ahead of PYTHONPATH's tree.
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child",
                   "--calls", str(calls), "--reps", str(reps)]
            proc = subprocess.run(cmd, cwd="/", env=env, capture_output=True, text=True,
                                  timeout=600)
            line = [x for x in proc.stdout.splitlines() if x.startswith("{")]
            if proc.returncode != 0 or not line:
                raise SystemExit(f"{label} round {r} failed:\n{proc.stdout[-2000:]}"
                                 f"\n{proc.stderr[-3000:]}")
            got = json.loads(line[-1])
            if not got["toolbench"].startswith(trees[label]):
                raise SystemExit(f"{label} imported toolbench from {got['toolbench']}")
            results[label].append(got)
            ratio = statistics.median(rep[TB]["calls_per_s"] / rep[SDK]["calls_per_s"]
                                      for rep in got["reps"])
            print(f"  round {r} {label}: toolbench ÷ SDK calls/s {ratio:.3f}", flush=True)
    load_end = os.getloadavg()
    report: dict[str, Any] = {"load_start": load_start, "load_end": load_end, "trees": {}}
    for label, runs in results.items():
        reps_all = [rep for got in runs for rep in got["reps"]]
        per_round = [statistics.median(rep[TB]["calls_per_s"] / rep[SDK]["calls_per_s"]
                                       for rep in got["reps"]) for got in runs]
        row: dict[str, Any] = {"ratio_calls_per_s_by_round": per_round}
        for subject in (TB, SDK):
            for key in ("calls_per_s", "cpu_us", "server_cpu_us"):
                row[f"{subject} {key}"] = statistics.median(rep[subject][key] for rep in reps_all)
        row["cpu ratio (process)"] = statistics.median(
            rep[TB]["cpu_us"] / rep[SDK]["cpu_us"] for rep in reps_all)
        row["cpu ratio (process + server)"] = statistics.median(
            (rep[TB]["cpu_us"] + rep[TB]["server_cpu_us"])
            / (rep[SDK]["cpu_us"] + rep[SDK]["server_cpu_us"]) for rep in reps_all)
        report["trees"][label] = row
        print(f"{label}: toolbench ÷ SDK calls/s {_summary(per_round)}")
        for subject in (TB, SDK):
            print(f"  {subject}: {row[f'{subject} calls_per_s']:.0f} calls/s, "
                  f"{row[f'{subject} cpu_us']:.0f} µs CPU/call in process, "
                  f"{row[f'{subject} server_cpu_us']:.0f} µs in the server")
        print(f"  CPU ratio: process {row['cpu ratio (process)']:.3f}, "
              f"process + server {row['cpu ratio (process + server)']:.3f}")
    print(f"load average: start {load_start}, end {load_end}")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--against", default="", help="another checkout, run beside this one")
    parser.add_argument("--json", default="")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.calls, args.reps)), flush=True)
        return
    trees = {"this tree": str(REPO)}
    if args.against:
        trees = {"before": str(Path(args.against).resolve()), "after": str(REPO)}
    report = run_trees(trees, args.rounds, args.reps, args.calls)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
