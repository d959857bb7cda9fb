"""``Bench.map`` on one machine vs on a Dask ``LocalCluster``.

A map of N cases (5,000 by default) to a stdio server whose tool spends 20 ms of CPU per
call (tests/servers/cpu_server.py). Locally, one bench drives one server process, so the
calls take turns on one core; on a ``LocalCluster`` of 2 worker processes, each worker runs
its own server, so on a 2-core machine the ideal is about 2x. Each round runs both maps,
their order alternating, and the ratio is taken within the round (a drifting load weighs
on the pair alike). The cluster's first map (workers importing toolbench and starting their
servers) is a warm-up, not measured.

    python -m benchmarks.bench_cluster [--quick] [--cases N] [--rounds R] [--ms MS]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

from benchmarks import common
from toolbench import Bench

CPU_SERVER = common.REPO / "tests" / "servers" / "cpu_server.py"
CPU_MS = 20.0
CONCURRENCY = 8
W_RATE = "Bench.map of a {ms:g} ms-CPU stdio tool, cap " + f"{CONCURRENCY}, calls/s"
W_SPEEDUP = "Bench.map on a LocalCluster of 2 workers / local (same round, paired)"
LOCAL = "toolbench, local (one server)"
CLUSTER = "toolbench, LocalCluster 2 worker processes (a server each)"


def _rate(bench: Bench, cases: list[dict[str, Any]], cluster: Any) -> float:
    started = time.perf_counter()
    df = bench.map("cpu-burn", cases, concurrency=CONCURRENCY, progress=False, cluster=cluster)
    elapsed = time.perf_counter() - started
    assert len(df) == len(cases) and bool(df["ok"].all()), df[~df["ok"]]["error"].head()
    return len(cases) / elapsed


def run(quick: bool = False, cases: int | None = None, rounds: int | None = None,
        ms: float = CPU_MS) -> dict[str, Any]:
    figures = common.Figures()
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        figures.skip(CLUSTER, "dask is not installed (pip install 'toolbench[dask]')")
        return figures.as_dict()
    count = cases if cases is not None else (120 if quick else 5000)
    rounds = rounds if rounds is not None else common.rounds_for(quick, full=3, small=2)
    work = [{"i": i, "ms": ms} for i in range(count)]
    w_rate = W_RATE.format(ms=ms)
    common.progress(f"{w_rate}: {rounds} rounds x {count} cases, local and on the cluster")
    cluster = LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                           dashboard_address=":0")
    client = Client(cluster)
    bench = Bench()
    try:
        bench.connect("cpu", [sys.executable, str(CPU_SERVER)])
        _rate(bench, work[:40], client)  # warm-up: workers start their servers
        _rate(bench, work[:40], None)
        for n in range(rounds):
            pair: dict[str, float] = {}
            for subject in ((LOCAL, CLUSTER) if n % 2 == 0 else (CLUSTER, LOCAL)):
                pair[subject] = _rate(bench, work, client if subject == CLUSTER else None)
                figures.add(w_rate, subject, "calls/s", pair[subject])
            figures.add(W_SPEEDUP, CLUSTER, "x local", pair[CLUSTER] / pair[LOCAL],
                        note="ideal about 2 on 2 cores")
            common.progress(f"round {n + 1}: local {pair[LOCAL]:.1f}/s, cluster "
                            f"{pair[CLUSTER]:.1f}/s, x{pair[CLUSTER] / pair[LOCAL]:.2f}")
    finally:
        bench.close()
        client.close()
        cluster.close()
    speedups = figures.measurements[(W_SPEEDUP, CLUSTER)].samples
    figures.notes.append(
        f"{W_SPEEDUP}: median x{statistics.median(speedups):.2f} over {rounds} rounds of "
        f"{count} cases; load average at end "
        f"{os.getloadavg() if hasattr(os, 'getloadavg') else None}")
    return figures.as_dict()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small and fast (a smoke test)")
    parser.add_argument("--cases", type=int, default=None, help="cases per map (default 5000)")
    parser.add_argument("--rounds", type=int, default=None, help="paired rounds (default 3)")
    parser.add_argument("--ms", type=float, default=CPU_MS,
                        help="CPU per call (default 20; 0 measures the cluster's own overhead)")
    args = parser.parse_args()
    print(json.dumps(run(args.quick, args.cases, args.rounds, args.ms), indent=1, default=str))
