"""Gathering from a rate-limited server (issue 47): a sweep at the limit, and what ``rate=``
and ``retries=`` cost when nothing is limited.

1. A sweep of 2,000 cases (``--quick``: 300) against the bundled ``limited`` demo server over
   streamable HTTP (``python -m toolbench.demo.limited``: a token bucket of ``--rate`` calls a
   second, 429 with ``Retry-After`` beyond it, a 503 every 97th admitted call), with
   ``map(rate=<the server's rate>, retries=10)``. Counted at the server (``/stats``): rows
   gathered, calls run twice (must be 0), 429s and 503s; wall time against cases / rate.
   The same sweep with ``retries=10`` but no ``rate=`` shows what pacing saves.
2. The cost of ``rate=`` and ``retries=`` on a fast ``map`` (an in-process ToolBox tool, 3,000
   calls at concurrency 8) when nothing is limited: ``map(...)`` against ``map(...,
   rate="1000000/s", retries=3)``, alternating round by round; the median of per-round ratios.

    python -m benchmarks.bench_limited [--quick] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any

import toolbench as tb

RATE = 20.0
"""The server's limit (calls a second) in the sweep: low enough that this 2-core VM keeps up."""


def _stats(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url.removesuffix("/mcp") + "/stats", timeout=10) as answer:
        found: dict[str, int] = json.load(answer)
    return found


def sweep(cases: int, *, paced: bool) -> dict[str, Any]:
    proc = subprocess.Popen([sys.executable, "-m", "toolbench.demo.limited", "--port", "0",
                             "--rate", str(RATE), "--burst", "5", "--unavailable-every", "97"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[1]
        with tb.Bench() as bench:
            bench.connect("lim", url)
            started = time.perf_counter()
            df = bench.map("lim-lookup", [{"n": i} for i in range(cases)], retries=10,
                           rate=f"{RATE:g}/s" if paced else None, timeout=120,
                           progress=False)
            wall = time.perf_counter() - started
            load = df.tb.latency().loc["lim"]
        stats = _stats(url)
    finally:
        proc.terminate()
        proc.wait(10)
    ideal = cases / RATE
    return {"cases": cases, "paced": paced, "rows": len(df), "ok": int(df["ok"].sum()),
            "sent_twice": stats["repeated"], "served": stats["served"],
            "http_429": stats["limited"], "http_503": stats["unavailable"],
            "retries": int(load["retries"]), "wall_s": round(wall, 2),
            "cases_over_rate_s": round(ideal, 2), "wall_over_ideal": round(wall / ideal, 3),
            "queued_p50_ms": round(float(load["queued_p50_ms"]), 1)
            if paced else None}


def overhead(rounds: int, calls: int = 3000) -> dict[str, Any]:
    @tb.tool(server="fast")
    def work(n: int) -> int:
        return n + 1

    cases = [{"n": i} for i in range(calls)]
    ratios, plain_s, paced_s, cpu_ratios = [], [], [], []
    with tb.Bench() as bench:
        bench.add(tb.ToolBox(work))
        bench.map("fast-work", cases[:200], progress=False)  # warm
        for r in range(rounds):
            order = [False, True] if r % 2 == 0 else [True, False]
            took, cpu = {}, {}
            for with_options in order:
                started, cpu_started = time.perf_counter(), time.process_time()
                if with_options:
                    bench.map("fast-work", cases, progress=False, rate="1000000/s", retries=3)
                else:
                    bench.map("fast-work", cases, progress=False)
                took[with_options] = time.perf_counter() - started
                cpu[with_options] = time.process_time() - cpu_started
            plain_s.append(took[False])
            paced_s.append(took[True])
            ratios.append(took[True] / took[False])
            cpu_ratios.append(cpu[True] / cpu[False])
    return {"calls": calls, "rounds": rounds,
            "plain_median_s": round(statistics.median(plain_s), 4),
            "rate_and_retries_median_s": round(statistics.median(paced_s), 4),
            "ratio_median": round(statistics.median(ratios), 4),
            "ratio_min": round(min(ratios), 4), "ratio_max": round(max(ratios), 4),
            "cpu_ratio_median": round(statistics.median(cpu_ratios), 4)}


def run(quick: bool, only: str = "") -> dict[str, Any]:
    cases = 300 if quick else 2000
    out: dict[str, Any] = {}
    if only in ("", "overhead"):
        out["overhead"] = overhead(5 if quick else 21)
        print(json.dumps(out["overhead"]), flush=True)
    if only in ("", "sweep"):
        out["sweep_paced"] = sweep(cases, paced=True)
        print(json.dumps(out["sweep_paced"]), flush=True)
        out["sweep_retries_only"] = sweep(cases, paced=False)
        print(json.dumps(out["sweep_retries_only"]), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", default=None)
    parser.add_argument("--only", choices=("overhead", "sweep"), default="")
    args = parser.parse_args()
    found = run(args.quick, args.only)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f, indent=2)


if __name__ == "__main__":
    main()
