"""A huge tools/list page beside a healthy server (DESIGN, "The trust boundary"; issue 27 #5).

A hostile server answers tools/list with one page of many small tools (under the 32 MiB
message cap, far over ``max_tools``), over stdio or streamable HTTP (a JSON body). It is
connected again and again on another thread while a healthy stdio server's calls are timed
through the synchronous face. Before the pre-parse count, the SDK parsed and validated the
whole page on the shared loop (100,000 tools: 1.9 s a page) before ``max_tools`` was checked.

Each case runs in a fresh process (so its peak RSS is its own). Reported per case: the
healthy server's p50/p99/max alone and beside the connects, the p99 and max ratios (target:
p99 within 2x of alone), the time a refused connect takes, and the peak RSS growth (from
``ru_maxrss``) against the page's size (target: within 2x); and the load average.

    python -m benchmarks.bench_catalog_page [--quick] [--case stdio:100000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from benchmarks import common
from benchmarks.bench_neighbours import _healthy_round, _percentile
from toolbench import Bench
from toolbench._core.errors import Unreachable

SERVERS = common.REPO / "tests" / "servers"
CASES = ("stdio:100000", "http:100000", "stdio:600000", "http:600000", "stdio:10001",
         "http:10001")
"""``transport:tools``; the 10,001-tool pages are the control: a refused connect whose page
costs nearly nothing, so what remains is the cost of connecting itself."""
QUICK_CASES = ("stdio:100000", "http:100000")


def _workload(case: str) -> str:
    transport, tools = case.split(":")
    return f"8c. a healthy stdio server's calls beside a {int(tools):,}-tool page ({transport})"


def _tiny(tools: int) -> bool:
    return tools > 100_000  # 600,000 tools fit under the message cap only when tiny


def _page_bytes(tools: int) -> int:
    if _tiny(tools):
        return len(json.dumps([{"name": f"t{i}", "inputSchema": {}} for i in range(tools)]))
    tool = {"name": "t99999", "description": "d" * 20, "inputSchema": {"type": "object"}}
    return len(json.dumps(tool)) * tools


@contextmanager
def _target(transport: str, tools: int) -> Iterator[list[str] | str]:
    """What ``bench.connect`` is given for the hostile server (an HTTP one is started here)."""
    flags = ["--tools", str(tools), *(["--tiny"] if _tiny(tools) else [])]
    if transport == "stdio":
        with tempfile.TemporaryDirectory() as tmp:
            yield [sys.executable, str(SERVERS / "big_catalog_server.py"), *flags,
                   "--page-cache", str(Path(tmp) / "page.json")]
        return
    proc = subprocess.Popen([sys.executable, str(SERVERS / "big_catalog_http.py"), "0", *flags],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


class _Connects:
    """Connects the huge catalog over and over on its own thread; records each one's time."""

    def __init__(self, bench: Bench, target: list[str] | str) -> None:
        self.bench = bench
        self.target = target
        self.times: list[float] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    self.bench.connect("huge", self.target)
                    raise AssertionError("a page over max_tools was accepted")
                except Unreachable as exc:
                    self.times.append(time.perf_counter() - started)
                    self.errors.append(str(exc))
                self.bench.disconnect("huge")
        except BaseException as exc:
            self.error = exc


def run_case(case: str, quick: bool) -> dict[str, Any]:
    """One case in this process: figures for ``transport:tools``."""
    transport, count = case.split(":")
    tools = int(count)
    workload = _workload(case)
    rounds = common.rounds_for(quick, full=3, small=1)
    calls = 100 if quick else 400
    figures = common.Figures()
    me = psutil.Process()
    load = [os.getloadavg()]
    with _target(transport, tools) as target, \
            Bench(timeout=120, connect_timeout=120) as bench:
        bench.load_config(common.mcp_config({"healthy": common.server_argv(0.0, "healthy")}),
                          progress=False)
        _healthy_round(bench, 30)
        warm = _Connects(bench, target)  # a first refusal imports what counting needs
        warm.stop.set()
        warm.thread.start()
        warm.thread.join(300)
        base_rss = me.memory_info().rss
        errors: list[str] = []
        for _ in range(rounds):
            alone = _healthy_round(bench, calls)
            connects = _Connects(bench, target)
            connects.thread.start()
            time.sleep(0.2)
            beside: list[float] = []
            while len(beside) < calls or len(connects.times) < 2:
                beside += _healthy_round(bench, 20)
            connects.stop.set()
            connects.thread.join(300)
            if connects.error is not None:
                raise RuntimeError(f"the neighbour failed: {connects.error!r}")
            errors = connects.errors
            for label, samples in (("alone", alone), ("beside the page", beside)):
                figures.add(workload, f"healthy p50, {label}", "ms",
                            statistics.median(samples) * 1e3)
                figures.add(workload, f"healthy p99, {label}", "ms",
                            _percentile(samples, 0.99) * 1e3)
                # Calls are sequential: one stall delays one call, so the max shows it.
                figures.add(workload, f"healthy max, {label}", "ms", max(samples) * 1e3)
            figures.add(workload, "a refused connect of the page", "s",
                        statistics.median(connects.times))
            load.append(os.getloadavg())
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        figures.add(workload, "peak RSS growth / page size", "x",
                    max(peak - base_rss, 0) / _page_bytes(tools))
    for stat in ("p99", "max"):
        figures.ratio(f"healthy {stat} beside the page / alone ({case})", workload,
                      f"healthy {stat}, beside the page", f"healthy {stat}, alone",
                      target=2.0 if stat == "p99" else None)
    out = figures.as_dict()
    out["workload"] = {"case": case, "calls": calls, "rounds": rounds, "tools": tools,
                       "page_bytes": _page_bytes(tools), "load_average": load,
                       "refusal": errors[-1] if errors else None}
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """Every case, each in a fresh process; their figures merged."""
    merged: dict[str, Any] = {"measurements": [], "ratios": [], "skipped": [], "cases": {}}
    for case in QUICK_CASES if quick else CASES:
        common.progress(f"catalog page: {case}")
        argv = [sys.executable, "-m", "benchmarks.bench_catalog_page", "--case", case,
                *(["--quick"] if quick else [])]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=1800,
                              cwd=common.REPO, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"case {case} failed: {done.stderr[-2000:]}")
        data = json.loads(done.stdout)
        for key in ("measurements", "ratios", "skipped"):
            merged[key].extend(data.get(key, []))
        merged["cases"][case] = data["workload"]
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small and fast (a smoke test)")
    parser.add_argument("--case", help="run one case (transport:tools) in this process")
    args = parser.parse_args()
    data = run_case(args.case, args.quick) if args.case else run(args.quick)
    print(json.dumps(data, indent=1, default=str))


if __name__ == "__main__":
    main()
