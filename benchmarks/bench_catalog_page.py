"""A huge tools/list page beside a healthy server (DESIGN, "The trust boundary"; issue 27 #5).

A neighbour stdio server answers tools/list with one page of 100,000 small tools (about
6 MB, under the 32 MiB message cap, ten times ``max_tools``). It is connected again and
again on another thread while a healthy stdio server's calls are timed through the
synchronous face. Before the pre-parse count, the SDK parsed and validated the whole page on
the shared loop (1.9 s a page) before ``max_tools`` was checked. Reported: the healthy
server's p50/p99 alone and beside the connects, their ratio (target: p99 within 2x of
alone), the time a refused connect takes, and the process's peak RSS growth against the
page's size (target: within 2x).

    python -m benchmarks.bench_catalog_page [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from typing import Any

import psutil

from benchmarks import common
from benchmarks.bench_neighbours import _healthy_round, _percentile
from toolbench import Bench
from toolbench._core.errors import Unreachable

WORKLOAD = "8c. a healthy stdio server's calls beside a 100,000-tool page"
TOOLS = 100_000
PAGE_ARGV = [sys.executable, str(common.REPO / "tests" / "servers" / "big_catalog_server.py"),
             "--tools", str(TOOLS)]


def _page_bytes() -> int:
    tool = {"name": "t99999", "description": "d" * 20, "inputSchema": {"type": "object"}}
    return len(json.dumps(tool)) * TOOLS


class _Connects:
    """Connects the huge catalog over and over on its own thread; records each one's time."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self.times: list[float] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    self.bench.connect("huge", PAGE_ARGV)
                    raise AssertionError("a 100,000-tool page was accepted")
                except Unreachable:
                    self.times.append(time.perf_counter() - started)
                self.bench.disconnect("huge")
        except BaseException as exc:
            self.error = exc


def run(quick: bool = False) -> dict[str, Any]:
    rounds = common.rounds_for(quick, full=3, small=1)
    calls = 100 if quick else 400
    figures = common.Figures()
    me = psutil.Process()
    with Bench(timeout=120, connect_timeout=120) as bench:
        bench.load_config(common.mcp_config({"healthy": common.server_argv(0.0, "healthy")}),
                          progress=False)
        _healthy_round(bench, 30)
        base_rss = me.memory_info().rss
        peak = base_rss
        for _ in range(rounds):
            alone = _healthy_round(bench, calls)
            connects = _Connects(bench)
            connects.thread.start()
            time.sleep(0.2)
            beside: list[float] = []
            while len(beside) < calls or not connects.times:
                beside += _healthy_round(bench, 20)
                peak = max(peak, me.memory_info().rss)
            connects.stop.set()
            connects.thread.join(300)
            if connects.error is not None:
                raise RuntimeError(f"the neighbour failed: {connects.error!r}")
            for label, samples in (("alone", alone), ("beside the page", beside)):
                figures.add(WORKLOAD, f"healthy p50, {label}", "ms",
                            statistics.median(samples) * 1e3)
                figures.add(WORKLOAD, f"healthy p99, {label}", "ms",
                            _percentile(samples, 0.99) * 1e3)
                # Calls are sequential: one stall delays one call, so the max shows it.
                figures.add(WORKLOAD, f"healthy max, {label}", "ms", max(samples) * 1e3)
            figures.add(WORKLOAD, "a refused connect of the page", "s",
                        statistics.median(connects.times))
        figures.add(WORKLOAD, "peak RSS growth / page size", "x",
                    (peak - base_rss) / _page_bytes())
    figures.ratio("healthy p99 beside the page / alone", WORKLOAD,
                  "healthy p99, beside the page", "healthy p99, alone", target=2.0)
    out = figures.as_dict()
    out["workload"] = {"calls": calls, "rounds": rounds, "tools": TOOLS,
                       "page_bytes": _page_bytes()}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small and fast (a smoke test)")
    print(json.dumps(run(parser.parse_args().quick), indent=1, default=str))


if __name__ == "__main__":
    main()
