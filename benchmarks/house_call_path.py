"""One call walked through the code, and its cost: how many modules a ``bench.call`` enters.

    python -m benchmarks.house_call_path                       # this tree: path and per-call time
    python -m benchmarks.house_call_path --before DIR --rounds 7   # paired against another tree

The walk (issue 32, "Measured"): a synchronous ``Bench.call`` of the in-process latency
server's ``add`` is traced with ``sys.setprofile`` on every thread (the shared loop's too), after
a warm-up call, and every toolbench function entered is charged to its module. It prints the
modules entered, and the *stops*: how many times the call crosses from one toolbench module
into another (a return into a module already left counts again), which is what a reader
following the call has to do.

The cost: each tree is measured in a child process of its own (``PYTHONPATH`` set to it), the
two trees alternating round by round so that a burst of load hits both alike; each round is
the median of ``--calls`` synchronous calls after a warm-up. The ratio is of the medians of the
rounds, with its min–max over rounds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _module_of(filename: str) -> str | None:
    marker = os.sep + "toolbench" + os.sep
    if marker not in filename or "site-packages" in filename:
        return None
    rel = filename.split(marker, 1)[1].removesuffix(".py").replace(os.sep, ".")
    return rel.removesuffix(".__init__")


def walk() -> dict[str, Any]:
    """Trace one synchronous call; the modules it enters and the crossings between them."""
    sys.path.insert(0, str(REPO))
    from benchmarks import common

    entered: list[str] = []
    tracing = threading.Event()

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and tracing.is_set():
            module = _module_of(frame.f_code.co_filename)
            if module is not None:
                entered.append(module)

    threading.setprofile(profiler)  # the shared loop's thread starts after this
    sys.setprofile(profiler)
    import toolbench as tb

    with tb.Bench() as bench:
        bench.connect("s", common.inprocess_server("inproc"))
        bench.call("s-add", {"a": 1, "b": 2})  # warm: imports, validator, caches
        tracing.set()
        bench.call("s-add", {"a": 1, "b": 2})
        tracing.clear()
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]
    stops = sum(1 for before, after in itertools.pairwise(entered) if before != after)
    return {"modules": sorted(set(entered)), "module_count": len(set(entered)),
            "function_entries": len(entered), "stops": stops + 1 if entered else 0}


def cost(calls: int) -> dict[str, float]:
    """Median wall and CPU time of one synchronous call, in µs."""
    sys.path.insert(0, str(REPO))
    import toolbench as tb
    from benchmarks import common

    with tb.Bench() as bench:
        bench.connect("s", common.inprocess_server("inproc"))
        for _ in range(200):
            bench.call("s-add", {"a": 1, "b": 2})
        walls = []
        cpu_start = time.process_time()
        for i in range(calls):
            start = time.perf_counter()
            bench.call("s-add", {"a": i, "b": 2})
            walls.append(time.perf_counter() - start)
        cpu = time.process_time() - cpu_start
    return {"wall_us": statistics.median(walls) * 1e6, "cpu_us": cpu / calls * 1e6}


def _child(tree: Path, mode: str, calls: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-m", "benchmarks.house_call_path", "--child", mode,
                          "--calls", str(calls)], cwd=tree, env=env, check=True,
                         capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another tree to pair against (e.g. a "
                        "worktree of the commit before)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--child", choices=("walk", "cost"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "walk":
        print(json.dumps(walk()))
        return
    if args.child == "cost":
        print(json.dumps(cost(args.calls)))
        return
    trees = {"after": REPO} if args.before is None else {"before": args.before, "after": REPO}
    for label, tree in trees.items():
        path = _child(tree, "walk", 0)
        print(f"{label}: a call enters {path['module_count']} modules, crosses between them "
              f"{path['stops']} times ({path['function_entries']} toolbench functions)")
        print("   ", ", ".join(path["modules"]))
    rounds: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            rounds[label].append(_child(tree, "cost", args.calls))
    for label, figures in rounds.items():
        walls = [f["wall_us"] for f in figures]
        cpus = [f["cpu_us"] for f in figures]
        print(f"{label}: sync Bench.call in process, median of {args.rounds} rounds: "
              f"{statistics.median(walls):.0f} µs wall ({min(walls):.0f}–{max(walls):.0f}), "
              f"{statistics.median(cpus):.0f} µs CPU ({min(cpus):.0f}–{max(cpus):.0f})")
    if args.before is not None:
        ratios = [a["wall_us"] / b["wall_us"] for a, b in zip(rounds["after"], rounds["before"],
                                                               strict=True)]
        cpu_ratios = [a["cpu_us"] / b["cpu_us"] for a, b in zip(rounds["after"], rounds["before"],
                                                                strict=True)]
        print(f"after/before, paired by round: wall ×{statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}–{max(ratios):.3f}), CPU ×{statistics.median(cpu_ratios):.3f} "
              f"({min(cpu_ratios):.3f}–{max(cpu_ratios):.3f})")


if __name__ == "__main__":
    main()
