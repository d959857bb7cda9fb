"""The fast ``map``, each client in a fresh process of its own: the outside harness's way.

Why this exists: the project's figure for "``Bench.map`` of 3,000 calls at cap 8 on the stdlib
fast server, over the SDK's ``mcp.Client`` with an ``anyio.CapacityLimiter(8)``" was **0.95**
(benchmarks/bench_sweep.py: every subject in *one* process, alternating, measured under load
2–5), while an outside peer-comparison harness measured **×1.25–1.41** on a quiet machine,
driving each client in a child process of its own. The two differ in two conditions at once:
one shared process against a fresh process per client, and a loaded machine against a quiet
one. This script measures the harness's way (a process per client) in both conditions:
``--burn 0`` (quiet, as the harness ran) and ``--burn N`` (N ``while True: pass`` children
competing for the 2 cores, as the project's own figure was taken), so the ratio's move can be
put on the right condition. bench_sweep still measures the one-process way.

Subjects (each run as ``python -m benchmarks.bench_processes --child SUBJECT``, a fresh
interpreter that imports only its own client, connects to its own fast server, warms up with
one whole sweep, then times ``--rounds`` sweeps and prints one JSON line: wall and process CPU
per call of each round):

- ``toolbench``: ``Bench.map(tool, work, concurrency=8, progress=False)``;
- ``sdk``: ``mcp.Client`` over ``stdio_client``, a task per call under ``CapacityLimiter(8)``;
- ``fastmcp``: fastmcp's ``Client`` with the same limiter (skipped when not importable).

Processes alternate subject by subject (the order flips each time, so drifting load weighs
on all); the i-th process of one subject is paired with the i-th of another, round by round,
and a ratio is the **median of those per-round ratios** with their range. Process CPU is the
child's own (its threads), not its server's. Every result is checked: a failed or wrong row
aborts the child, and a failed child aborts the run. Load average is printed at start and end.

    python -m benchmarks.bench_processes [--quick] [--burn N] [--rounds R] [--processes P]
                                         [--calls N] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks import common

FAST_SERVER = common.BENCH_DIR / "servers" / "fast_server.py"
CAP = 8
CPU_TARGET = 1.10
SUBJECTS = {
    "toolbench": "toolbench Bench.map(concurrency=8)",
    "sdk": "mcp.Client (SDK) + CapacityLimiter(8)",
    "fastmcp": "fastmcp Client + CapacityLimiter(8)",
}


# -- the child: one client, one process ---------------------------------------------------
def _server_argv() -> list[str]:
    return [sys.executable, str(FAST_SERVER), "--name", "proc"]


def _check(values: list[Any], n: int) -> None:
    """Every call must have answered ``x + 1``: a benchmark of failures measures nothing."""
    wrong = [(i, v) for i, v in enumerate(values) if v != i + 1]
    if len(values) != n or wrong:
        raise RuntimeError(f"{len(values)} answers for {n} calls; wrong: {wrong[:3]}")


def _child_toolbench(n: int, rounds: int) -> list[tuple[float, float]]:
    from toolbench import Bench

    work = [{"x": i} for i in range(n)]
    spans = []
    with Bench() as bench:
        bench.connect("s", _server_argv())
        for _ in range(rounds + 1):  # the first is the warm-up
            wall, cpu = time.perf_counter(), time.process_time()
            df = bench.map("s-work", work, concurrency=CAP, progress=False)
            spans.append((time.perf_counter() - wall, time.process_time() - cpu))
            if not df["ok"].all():
                raise RuntimeError(f"map had failures: {df[~df['ok']]['error'].head()}")
            _check([(s or {}).get("result") for s in df["structured"]], n)
    return spans[1:]


async def _capped(call: Callable[[int], Awaitable[Any]], n: int) -> tuple[float, float]:
    """``n`` calls, a task each, at most CAP at once (how an SDK user sweeps); checked after."""
    import anyio

    limiter = anyio.CapacityLimiter(CAP)
    results: list[Any] = [None] * n

    async def one(i: int) -> None:
        async with limiter:
            results[i] = await call(i)

    wall, cpu = time.perf_counter(), time.process_time()
    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
    span = (time.perf_counter() - wall, time.process_time() - cpu)
    failed = [r for r in results if r is None or getattr(r, "is_error", True)]
    if failed:
        raise RuntimeError(f"{len(failed)} calls failed, e.g. {failed[0]!r}")
    _check([(r.structured_content or {}).get("result") for r in results], n)
    return span


def _child_sdk(n: int, rounds: int) -> list[tuple[float, float]]:
    import anyio
    from mcp import Client, StdioServerParameters, stdio_client

    argv = _server_argv()

    async def main() -> list[tuple[float, float]]:
        with open(os.devnull, "w") as errlog:
            params = StdioServerParameters(command=argv[0], args=argv[1:])
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return [await _capped(lambda i: client.call_tool("work", {"x": i}), n)
                        for _ in range(rounds + 1)][1:]

    return anyio.run(main)


def _child_fastmcp(n: int, rounds: int) -> list[tuple[float, float]]:
    import anyio
    import fastmcp
    from fastmcp.client.transports import StdioTransport

    argv = _server_argv()

    async def main() -> list[tuple[float, float]]:
        with open(os.devnull, "w") as errlog:
            async with fastmcp.Client(StdioTransport(argv[0], argv[1:],
                                                     log_file=errlog)) as client:
                return [await _capped(lambda i: client.call_tool("work", {"x": i}), n)
                        for _ in range(rounds + 1)][1:]

    return anyio.run(main)


CHILDREN: dict[str, Callable[[int, int], list[tuple[float, float]]]] = {
    "toolbench": _child_toolbench, "sdk": _child_sdk, "fastmcp": _child_fastmcp}


def child(subject: str, n: int, rounds: int) -> None:
    spans = CHILDREN[subject](n, rounds)
    print(json.dumps({"subject": subject, "pid": os.getpid(), "calls": n,
                      "wall_us_per_call": [w / n * 1e6 for w, _ in spans],
                      "cpu_us_per_call": [c / n * 1e6 for _, c in spans]}), flush=True)


# -- the parent: alternate fresh processes, pair them ---------------------------------------
def _fastmcp_importable() -> str | None:
    """Why fastmcp cannot be a subject here, or None when it can (asked of a child Python)."""
    out = subprocess.run([sys.executable, "-c", "import fastmcp.client.transports"],
                         capture_output=True, text=True, timeout=120)
    return None if out.returncode == 0 else (out.stderr.strip().splitlines() or ["?"])[-1]


def _spawn(subject: str, n: int, rounds: int) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(common.REPO), env.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-m", "benchmarks.bench_processes", "--child",
                          subject, "--calls", str(n), "--rounds", str(rounds)],
                         cwd=common.REPO, env=env, capture_output=True, text=True,
                         timeout=120 + n * rounds * 0.01)
    if out.returncode != 0:
        raise RuntimeError(f"the {subject} child failed ({out.returncode}): "
                           f"{out.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def _burners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            for _ in range(count)]


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait(timeout=10)


def paired(figures: common.Figures, name: str, workload: str, runs: dict[str, list[Any]],
           num: str, den: str, key: str, target: float | None) -> None:
    """Median of per-round ratios, the i-th process of ``num`` against the i-th of ``den``."""
    if num not in runs or den not in runs:
        return
    ratios = [a / b for top, bottom in zip(runs[num], runs[den], strict=True)
              for a, b in zip(top[key], bottom[key], strict=True)]
    figures.ratios.append(common.Ratio(
        name, statistics.median(ratios), target,
        note=f"{workload}: median of {len(ratios)} paired rounds "
             f"({len(runs[num])} processes each), range {min(ratios):.3f}–{max(ratios):.3f}"))


def measure(quick: bool, burn: int, processes: int | None = None, rounds: int | None = None,
            calls: int | None = None) -> dict[str, Any]:
    processes = processes or (2 if quick else 5)
    rounds = rounds or (2 if quick else 5)
    n = calls or (300 if quick else 3000)
    figures = common.Figures()
    subjects = ["toolbench", "sdk", "fastmcp"]
    why = _fastmcp_importable()
    if why is not None:
        subjects.remove("fastmcp")
        figures.skip(SUBJECTS["fastmcp"], f"not importable ({why}); pip install 'fastmcp>=4,<5'")
    workload = (f"map of {n:,} calls, cap 8, fast stdlib stdio server, a fresh process per "
                f"client, {burn} CPU burner{'s' * (burn != 1)}")
    start_load = os.getloadavg()
    common.progress(f"{workload}: {processes} processes x {rounds} rounds each; "
                    f"load average at start {start_load}")
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in subjects}
    burners = _burners(burn)
    try:
        if burn:
            time.sleep(1.0)  # let the burners get going before the first child
        for i in range(processes):
            for subject in (subjects if i % 2 == 0 else subjects[::-1]):
                data = _spawn(subject, n, rounds)
                runs[subject].append(data)
                common.progress(f"process {i + 1} {subject}: wall "
                                f"{statistics.median(data['wall_us_per_call']):.1f} µs/call, "
                                f"CPU {statistics.median(data['cpu_us_per_call']):.1f} µs/call")
    finally:
        _stop(burners)
    end_load = os.getloadavg()
    common.progress(f"load average at end {end_load}")
    for subject, datas in runs.items():
        for data in datas:
            for wall, cpu in zip(data["wall_us_per_call"], data["cpu_us_per_call"], strict=True):
                figures.add(workload, SUBJECTS[subject], "µs/call", wall)
                figures.add(workload + " [process CPU]", SUBJECTS[subject], "µs CPU/call", cpu)
    for num, den, target, label in (("toolbench", "sdk", 1.10, "SDK + CapacityLimiter"),
                                    ("toolbench", "fastmcp", 1.0, "fastmcp + CapacityLimiter"),
                                    ("fastmcp", "sdk", None, "fastmcp / SDK")):
        name = (label if num == "fastmcp" else f"map / {label}") + \
            f", a process each, {burn} burners"
        paired(figures, name, workload, runs, num, den, "wall_us_per_call", target)
        paired(figures, f"{name}, CPU per call", workload, runs, num, den, "cpu_us_per_call",
               None if target is None else CPU_TARGET)
    figures.notes.append(f"load average at start {start_load}, at end {end_load}; "
                         f"{burn} CPU burners; {os.cpu_count()} cores")
    return figures.as_dict() | {"load_average": {"start": start_load, "end": end_load}}


def run(quick: bool = False) -> dict[str, Any]:
    """The runner's entry (benchmarks/run.py ``MODULES``), quiet: no burners."""
    return measure(quick, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small and fast (a smoke test)")
    parser.add_argument("--burn", type=int, default=0,
                        help="run N CPU-burner processes during the measurement")
    parser.add_argument("--processes", type=int, default=0,
                        help="fresh processes per subject (default 5; 2 with --quick)")
    parser.add_argument("--rounds", type=int, default=0,
                        help="timed sweeps per process after its warm-up (default 5; 2 quick)")
    parser.add_argument("--calls", type=int, default=0,
                        help="calls per sweep (default 3,000; 300 with --quick)")
    parser.add_argument("--json", default="", help="also write the figures to this file")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.child:
        child(ns.child, ns.calls, ns.rounds)
        return
    if ns.burn < 0:
        parser.error("--burn must be 0 or more")
    data = measure(ns.quick, ns.burn, ns.processes, ns.rounds, ns.calls)
    from benchmarks.run import table

    print(table({"machine": {"cores": os.cpu_count(), "implementation": "", "python": "",
                             "platform": "",
                             "load_average_at_start": data["load_average"]["start"],
                             "packages": {}},
                 "measurements": data["measurements"], "ratios": data["ratios"],
                 "scripts": {}, "skipped": data["skipped"], "missing": [], "failed": []}))
    for note in data["notes"]:
        print(note)
    if ns.json:
        with open(ns.json, "w") as f:
            f.write(json.dumps(data, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
