"""``Bench.map`` on one machine vs on a Dask ``LocalCluster``.

A map of N cases (5,000 by default) to a stdio server whose tool spends 20 ms of CPU per
call (tests/servers/cpu_server.py). Locally, one bench drives one server process, so the
calls take turns on one core; on a ``LocalCluster`` of 2 worker processes, each worker runs
its own server, so on a 2-core machine the ideal is about 2x. Each round runs both maps,
their order alternating, and the ratio is taken within the round (a drifting load weighs
on the pair alike). The cluster's first map (workers importing toolbench and starting their
servers) is a warm-up, not measured.

Over HTTP (issue 47): the same pairing against one streamable HTTP server process
(tests/servers/cache_hints_http.py, stdlib, threaded, an ``echo`` tool that takes
``--server-ms`` of latency, no CPU, as a remote server would), ``IN_FLIGHT`` calls in flight
either way (local: ``concurrency=IN_FLIGHT``; cluster: half per worker). What the cluster
splits is the client's own work per call (toolbench, the SDK, httpx), which on one process
takes turns on one core; the records of both maps are compared (same ``ok``, ``text``,
``arguments``).

    python -m benchmarks.bench_cluster [--quick] [--cases N] [--rounds R] [--ms MS]
                                       [--http-only] [--server-ms MS]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
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
HTTP_SERVER = common.REPO / "tests" / "servers" / "cache_hints_http.py"
IN_FLIGHT = 32
SERVER_MS = 20.0
W_HTTP_RATE = ("Bench.map of an echo tool over streamable HTTP ({ms:g} ms latency), "
               f"{IN_FLIGHT} in flight, calls/s")
W_HTTP_SPEEDUP = "Bench.map over HTTP on a LocalCluster of 2 workers / local (paired)"
HTTP_LOCAL = f"toolbench, local (one process, concurrency {IN_FLIGHT})"
HTTP_CLUSTER = (f"toolbench, LocalCluster 2 worker processes ({IN_FLIGHT // 2} each), "
                "one HTTP server")


def _rate(bench: Bench, cases: list[dict[str, Any]], cluster: Any) -> float:
    started = time.perf_counter()
    df = bench.map("cpu-burn", cases, concurrency=CONCURRENCY, progress=False, cluster=cluster)
    elapsed = time.perf_counter() - started
    assert len(df) == len(cases) and bool(df["ok"].all()), df[~df["ok"]]["error"].head()
    return len(cases) / elapsed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _http_map(bench: Bench, cases: list[dict[str, Any]], cluster: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    df = bench.map("h-echo", cases,
                   concurrency=IN_FLIGHT // 2 if cluster is not None else IN_FLIGHT,
                   progress=False, cluster=cluster)
    elapsed = time.perf_counter() - started
    assert len(df) == len(cases) and bool(df["ok"].all()), df[~df["ok"]]["error"].head()
    return len(cases) / elapsed, df


def run_http(figures: common.Figures, client: Any, count: int, rounds: int,
             server_ms: float = SERVER_MS) -> None:
    """Over HTTP: local vs the cluster, paired per round, records compared."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, str(HTTP_SERVER), str(port), "0", "public",
                               str(server_ms)], stderr=subprocess.DEVNULL)
    w_rate = W_HTTP_RATE.format(ms=server_ms)
    bench = Bench()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                bench.connect("h", f"http://127.0.0.1:{port}/mcp")
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        work = [{"text": f"case {i}"} for i in range(count)]
        _http_map(bench, work[:40], client)  # warm-up: workers connect
        _http_map(bench, work[:40], None)
        common.progress(f"{w_rate}: {rounds} rounds x {count} cases")
        for n in range(rounds):
            pair: dict[str, float] = {}
            frames: dict[str, Any] = {}
            for subject in ((HTTP_LOCAL, HTTP_CLUSTER) if n % 2 == 0
                            else (HTTP_CLUSTER, HTTP_LOCAL)):
                pair[subject], frames[subject] = _http_map(
                    bench, work, client if subject == HTTP_CLUSTER else None)
                figures.add(w_rate, subject, "calls/s", pair[subject])
            for column in ("ok", "text", "arguments"):  # the same records either way
                assert list(frames[HTTP_LOCAL][column]) == list(frames[HTTP_CLUSTER][column])
            figures.add(W_HTTP_SPEEDUP, HTTP_CLUSTER, "x local",
                        pair[HTTP_CLUSTER] / pair[HTTP_LOCAL], note="target 1.5 on 2 idle cores")
            common.progress(f"http round {n + 1}: local {pair[HTTP_LOCAL]:.1f}/s, cluster "
                            f"{pair[HTTP_CLUSTER]:.1f}/s, "
                            f"x{pair[HTTP_CLUSTER] / pair[HTTP_LOCAL]:.2f}")
    finally:
        bench.close()
        server.terminate()
        server.wait(10)
    speedups = figures.measurements[(W_HTTP_SPEEDUP, HTTP_CLUSTER)].samples
    figures.notes.append(
        f"{W_HTTP_SPEEDUP}: median x{statistics.median(speedups):.2f} over {rounds} rounds of "
        f"{count} cases; load average at end "
        f"{os.getloadavg() if hasattr(os, 'getloadavg') else None}")


def run(quick: bool = False, cases: int | None = None, rounds: int | None = None,
        ms: float = CPU_MS, http_only: bool = False,
        server_ms: float = SERVER_MS) -> dict[str, Any]:
    figures = common.Figures()
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        figures.skip(CLUSTER, "dask is not installed (pip install 'toolbench[dask]')")
        return figures.as_dict()
    if http_only:
        cluster = LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                               dashboard_address=":0")
        client = Client(cluster)
        try:
            run_http(figures, client, cases or (100 if quick else 2000),
                     rounds or common.rounds_for(quick, full=3, small=2), server_ms)
        finally:
            client.close()
            cluster.close()
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
        run_http(figures, client, 100 if quick else 2000, rounds)
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
    parser.add_argument("--http-only", action="store_true",
                        help="only the HTTP pairing (issue 47)")
    parser.add_argument("--server-ms", type=float, default=SERVER_MS,
                        help="the HTTP server's latency per call (default 20)")
    args = parser.parse_args()
    print(json.dumps(run(args.quick, args.cases, args.rounds, args.ms, args.http_only,
                         args.server_ms), indent=1, default=str))
