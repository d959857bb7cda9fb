"""Run one benchmark module on two checkouts, alternating, and set their ratios side by side.

Each round runs ``python -m benchmarks.MODULE ARGS`` once in each checkout (its own
``benchmarks`` and ``toolbench``: the working folder and ``PYTHONPATH`` are the checkout), the
order flipping every round, so drifting load on a shared machine weighs on both. The lines the
module prints as ratios (``name   value  target ...``) are collected per tree; the report gives
each ratio's median and range per tree, and the load average at the start and the end.

    python -m benchmarks.paired_trees --against /tmp/before-sweep --rounds 3 bench_neighbours
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RATIO = re.compile(r"^(?P<name>.*\S)\s+(?P<value>\d+\.\d+)(?:\s+target.*)?$")


def _ratios(output: str, keep: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for line in output.splitlines():
        match = RATIO.match(line.strip())
        if match and re.search(keep, match["name"]):
            found[match["name"]] = float(match["value"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module")
    parser.add_argument("--against", default="", help="the other checkout (before)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", default=r" / ", help="regex on the ratio names to keep")
    parser.add_argument("--script-from-here", action="store_true",
                        help="run this checkout's benchmark script (by path) in both trees; "
                        "only toolbench comes from each tree")
    parser.add_argument("--trees", default="", help="label=path,... instead of before/after")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if not args.against and not args.trees:
        parser.error("--against or --trees is required")
    trees = {"before": Path(args.against).resolve(), "after": REPO}
    if args.trees:
        trees = {label: Path(path).resolve() for label, path in
                 (item.split("=", 1) for item in args.trees.split(","))}
    results: dict[str, dict[str, list[float]]] = {label: {} for label in trees}
    load_start = os.getloadavg()
    for r in range(args.rounds):
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for label in order:
            tree = trees[label]
            if args.script_from_here:  # this checkout's script; the tree's toolbench
                command = [sys.executable, str(REPO / "benchmarks" / f"{args.module}.py")]
                cwd, path = Path("/"), f"{tree}{os.pathsep}{REPO}"
            else:
                command = [sys.executable, "-m", f"benchmarks.{args.module}"]
                cwd, path = tree, str(tree)
            proc = subprocess.run([*command, *args.args], cwd=cwd,
                                  env={**os.environ, "PYTHONPATH": path},
                                  capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                raise SystemExit(f"{label} round {r} failed:\n{proc.stdout[-3000:]}"
                                 f"\n{proc.stderr[-3000:]}")
            got = _ratios(proc.stdout, args.keep)
            for name, value in got.items():
                results[label].setdefault(name, []).append(value)
            print(f"round {r} {label}: " + ", ".join(f"{v:.2f}" for v in got.values()),
                  flush=True)
    print(f"load average: start {load_start}, end {os.getloadavg()}")
    for name in results[list(trees)[-1]]:
        cells = []
        for label in trees:
            values = results[label].get(name, [])
            if values:
                cells.append(f"{label} {statistics.median(values):.2f} "
                             f"({min(values):.2f}–{max(values):.2f})")
        print(f"{name}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
