"""Issue 46 items 1 and 2, and issue 47's ``rate=``/``retries=`` cost: the code before and
after, paired, in one run.

Each round starts one child process per code tree (``--before /path/to/an/old/checkout`` and
this checkout), in an order that flips every round; a child imports ``toolbench`` from its
tree (``PYTHONPATH``) and measures, in one process, subjects that are compared with each other
(so each ratio is paired within seconds, on the same load):

- ``fast``: a map of N calls at cap 8 to the stdlib stdio server (``servers/fast_server.py``)
  beside the SDK's ``mcp.Client`` + ``anyio.CapacityLimiter(8)`` and fastmcp + the same
  limiter, alternating, wall and process CPU;
- ``journal``: a map of N calls at cap 8 to the in-process zero-latency server, without and
  with a journal, alternating;
- ``limited``: a map of N calls to an in-process ToolBox tool (a sync function, as
  ``bench_limited --only overhead``) plain and with ``rate="1000000/s", retries=3``,
  alternating; and the same with an async tool (no worker thread: less noise).

``--count`` instead runs one journaled map of 1,000 calls per tree under ``strace -f`` and
counts the ``fsync``/``fdatasync`` and ``write`` calls on the journal's files (the SQLite
file, its WAL, the intent log): the syscalls the journal pays per 1,000 calls.

    python -m benchmarks.bench_map46 --before /tmp/before [--rounds 5] [--calls 3000]
    python -m benchmarks.bench_map46 --before /tmp/before --count
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
FAST_SERVER = HERE.parent / "servers" / "fast_server.py"
LATENCY_SERVER = HERE.parent / "servers" / "latency_server.py"
CAP = 8


# -- the child: one tree, every subject of a round ------------------------------------------
def _span() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - start[0], time.process_time() - start[1]


def _inprocess_server() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("latency_server", LATENCY_SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build("inproc", 0.0)


def _ok(df: Any, n: int) -> None:
    if len(df) != n or not bool(df["ok"].all()):
        raise RuntimeError(f"a benchmark map failed: {df[~df['ok']]['error'].head()}")


def child_fast(calls: int, reps: int) -> dict[str, list[list[float]]]:
    import anyio
    import fastmcp
    from fastmcp.client.transports import StdioTransport
    from mcp import Client, StdioServerParameters, stdio_client

    import toolbench as tb

    argv = [sys.executable, str(FAST_SERVER), "--name", "sweep"]
    out: dict[str, list[list[float]]] = {"map": [], "sdk": [], "fastmcp": []}
    errlog = open(os.devnull, "w")  # noqa: SIM115
    with tb.Bench() as bench:
        bench.connect("s", argv)
        work = [{"x": i} for i in range(calls)]
        bench.map("s-work", work[:200], progress=False)

        async def capped(call: Any) -> tuple[float, float]:
            limiter = anyio.CapacityLimiter(CAP)

            async def one(i: int) -> None:
                async with limiter:
                    result = await call(i)
                    if getattr(result, "is_error", False):
                        raise RuntimeError("failed")

            started = _span()
            async with anyio.create_task_group() as tg:
                for i in range(calls):
                    tg.start_soon(one, i)
            return _since(started)

        def tb_map() -> tuple[float, float]:
            started = _span()
            df = bench.map("s-work", work, concurrency=CAP, progress=False)
            took = _since(started)
            _ok(df, calls)
            return took

        async def main() -> None:
            params = StdioServerParameters(command=argv[0], args=argv[1:])
            async with Client(stdio_client(params, errlog=errlog)) as sdk, fastmcp.Client(
                    StdioTransport(argv[0], argv[1:], log_file=errlog)) as fm:
                await capped(lambda i: sdk.call_tool("work", {"x": i}))
                await capped(lambda i: fm.call_tool("work", {"x": i}))
                for rep in range(reps):
                    order = ["map", "sdk", "fastmcp"]
                    if rep % 2:
                        order.reverse()
                    for subject in order:
                        if subject == "map":
                            took = await anyio.to_thread.run_sync(tb_map)
                        elif subject == "sdk":
                            took = await capped(lambda i: sdk.call_tool("work", {"x": i}))
                        else:
                            took = await capped(lambda i: fm.call_tool("work", {"x": i}))
                        out[subject].append(list(took))

        anyio.run(main)
    errlog.close()
    return out


def child_journal(calls: int, reps: int) -> dict[str, list[list[float]]]:
    import toolbench as tb

    out: dict[str, list[list[float]]] = {"plain": [], "journal": []}
    server = _inprocess_server()
    args = [{"a": i, "b": 2} for i in range(calls)]
    with tempfile.TemporaryDirectory() as tmp:
        plain, journaled = tb.Bench(), tb.Bench(journal=Path(tmp) / "j.sqlite")
        try:
            for bench in (plain, journaled):
                bench.connect("s", server)
                bench.map("s-add", args[:200], progress=False)
            for rep in range(reps):
                order = [("plain", plain), ("journal", journaled)]
                if rep % 2:
                    order.reverse()
                for subject, bench in order:
                    started = _span()
                    df = bench.map("s-add", args, concurrency=CAP, progress=False)
                    took = _since(started)
                    _ok(df, calls)
                    out[subject].append(list(took))
        finally:
            plain.close()
            journaled.close()
    return out


def child_limited(calls: int, reps: int) -> dict[str, list[list[float]]]:
    import toolbench as tb

    @tb.tool(server="fast")
    def work(n: int) -> int:
        return n + 1

    @tb.tool(server="afast")
    async def awork(n: int) -> int:
        return n + 1

    out: dict[str, list[list[float]]] = {k: [] for k in ("plain", "options", "aplain",
                                                         "aoptions")}
    cases = [{"n": i} for i in range(calls)]
    with tb.Bench() as bench:
        bench.add(tb.ToolBox(work))
        bench.add(tb.ToolBox(awork))
        for name in ("fast-work", "afast-awork"):
            bench.map(name, cases[:200], progress=False)
        for rep in range(reps):
            for name, prefix in (("fast-work", ""), ("afast-awork", "a")):
                order = [False, True] if rep % 2 == 0 else [True, False]
                for with_options in order:
                    kw: dict[str, Any] = ({"rate": "1000000/s", "retries": 3}
                                          if with_options else {})
                    started = _span()
                    df = bench.map(name, cases, progress=False, **kw)
                    took = _since(started)
                    _ok(df, calls)
                    out[prefix + ("options" if with_options else "plain")].append(list(took))
    return out


def child_count(calls: int) -> None:
    """One journaled map of ``calls`` (after a warm-up map), for strace to count."""
    import toolbench as tb

    server = _inprocess_server()
    args = [{"a": i, "b": 2} for i in range(calls)]
    path = Path(os.environ["BENCH_MAP46_JOURNAL"])
    with tb.Bench(journal=path) as bench:
        bench.connect("s", server)
        bench.map("s-add", [{"a": -1, "b": 0}], progress=False)
        print("BEGIN-MAP", flush=True)
        os.write(2, b"BEGIN-MAP\n")
        df = bench.map("s-add", args, concurrency=CAP, progress=False)
        os.write(2, b"END-MAP\n")
        _ok(df, calls)


# -- the driver -----------------------------------------------------------------------------
def _run_child(tree: Path, what: str, calls: int, reps: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, str(HERE), "--child", what, "--calls", str(calls),
                           "--reps", str(reps)], env=env, capture_output=True, text=True,
                          timeout=1800, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"child {what} in {tree} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _ratios(pairs: list[tuple[list[list[float]], list[list[float]]]], index: int
            ) -> list[float]:
    """Per repetition, subject ÷ peer (wall: index 0, CPU: index 1)."""
    return [a[index] / b[index] for num, den in pairs
            for a, b in zip(num, den, strict=True)]


def _summary(values: list[float]) -> str:
    return (f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f}, "
            f"n={len(values)})")


FIGURES = {
    "fast": [("fast map / SDK + CapacityLimiter(8)", "map", "sdk"),
             ("fast map / fastmcp + CapacityLimiter(8)", "map", "fastmcp")],
    "journal": [("journaled / unjournaled map, in process (time; throughput kept is 1/x)",
                 "journal", "plain")],
    "limited": [("rate= + retries= / plain, sync ToolBox tool", "options", "plain"),
                ("rate= + retries= / plain, async ToolBox tool", "aoptions", "aplain")],
}


def drive(trees: dict[str, Path], rounds: int, calls: int, reps: int, only: list[str]
          ) -> dict[str, Any]:
    raw: dict[str, dict[str, list[dict[str, Any]]]] = {
        label: {what: [] for what in only} for label in trees}
    loads = [os.getloadavg()[0]]
    for r in range(rounds):
        labels = list(trees) if r % 2 == 0 else list(reversed(trees))
        for what in only:
            for label in labels:
                raw[label][what].append(_run_child(trees[label], what, calls, reps))
        loads.append(os.getloadavg()[0])
        print(f"round {r + 1}/{rounds} done, load {loads[-1]:.2f}", file=sys.stderr,
              flush=True)
    report: dict[str, Any] = {"rounds": rounds, "calls": calls, "reps_per_child": reps,
                              "load_1min": [round(x, 2) for x in loads], "figures": {}}
    for what in only:
        for title, num, den in FIGURES[what]:
            for label in trees:
                pairs = [(child[num], child[den]) for child in raw[label][what]]
                report["figures"][f"{title} [{label}]"] = {
                    "wall": _summary(_ratios(pairs, 0)), "cpu": _summary(_ratios(pairs, 1))}
        for label in trees:
            for subject in raw[label][what][0]:
                walls = [rep[0] for child in raw[label][what] for rep in child[subject]]
                cpus = [rep[1] for child in raw[label][what] for rep in child[subject]]
                report["figures"][f"{what}: {subject} µs/call [{label}]"] = {
                    "wall": round(statistics.median(walls) / calls * 1e6, 1),
                    "cpu": round(statistics.median(cpus) / calls * 1e6, 1)}
    return report


_LINE = re.compile(r'^\d+\s+(fsync|fdatasync|write|pwrite64)\((\d+)<([^>]*)>')


def count(trees: dict[str, Path], calls: int, runs: int) -> dict[str, Any]:
    """Syscalls on the journal's files during one journaled map, per 1,000 calls."""
    report: dict[str, Any] = {}
    for label, tree in trees.items():
        totals: list[Counter[str]] = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                journal = Path(tmp) / "count.sqlite"
                trace = Path(tmp) / "trace.txt"
                env = {**os.environ, "PYTHONPATH": str(tree),
                       "BENCH_MAP46_JOURNAL": str(journal)}
                subprocess.run(["strace", "-f", "-y", "-qq", "-o", str(trace), "-e",
                                "trace=fsync,fdatasync,write,pwrite64", sys.executable,
                                str(HERE), "--child", "count", "--calls", str(calls)],
                               env=env, check=True, capture_output=True, timeout=600)
                counted: Counter[str] = Counter()
                inside = False
                for line in trace.read_text().splitlines():
                    if "BEGIN-MAP" in line:
                        inside = True
                    elif "END-MAP" in line:
                        inside = False
                    found = _LINE.match(line)
                    if not found or "count.sqlite" not in found.group(3):
                        continue
                    if found.group(1) in ("fsync", "fdatasync"):
                        counted["fsync, the whole run (connect to close)"] += 1
                    if not inside:
                        continue
                    path = found.group(3)
                    kind = ("intent log" if "-intents-" in path else
                            "WAL" if path.endswith("-wal") else
                            "shm" if path.endswith("-shm") else "database")
                    syscall = "fsync" if found.group(1) in ("fsync", "fdatasync") else "write"
                    counted[f"{syscall} {kind}, in the map"] += 1
                totals.append(counted)
        keys = sorted({k for c in totals for k in c})
        report[label] = {k: [round(c[k] * 1000 / calls, 1) for c in totals] for k in keys}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", default="")
    parser.add_argument("--before", default="", help="a checkout of the code before")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--reps", type=int, default=3, help="repetitions per child")
    parser.add_argument("--only", default="fast,journal,limited")
    parser.add_argument("--count", action="store_true")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    if args.child == "count":
        child_count(args.calls)
        return
    if args.child:
        found = {"fast": child_fast, "journal": child_journal,
                 "limited": child_limited}[args.child](args.calls, args.reps)
        print(json.dumps(found))
        return
    trees = {"before": Path(args.before), "after": REPO} if args.before else {"after": REPO}
    if args.count:
        report = count(trees, 1000, 3)
    else:
        report = drive(trees, args.rounds, args.calls, args.reps, args.only.split(","))
    text = json.dumps(report, indent=1, ensure_ascii=False)
    print(text)
    if args.json:
        Path(args.json).write_text(text)


if __name__ == "__main__":
    main()
