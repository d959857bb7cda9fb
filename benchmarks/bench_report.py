"""The catalog report (``df.tb.report()``, issue 36): 10,000 tools, hostile catalogs, and a
neighbour's calls while a hostile catalog is reported.

Measured, as medians of several rounds (wall and CPU time: on a shared machine, wall time is
mostly the wait for a core):

- the report of 10,000 synthetic tools (a 200-character description, four typed parameters
  with an enum and a default, as in ``bench_diff``), with the estimate and with cl100k_base;
  ``by="server"`` from that report; its HTML (``df.tb.show()``, capped rows);
- bounded work on hostile catalogs, one tool each: a 10 MB description (words, a base64
  run, zero-width characters), a schema nested 10,000 deep; and 100,000 ordinary tools;
- the shared loop under a report: a healthy stdio server (the latency server, no waiting) is
  called from a thread through the synchronous face, in windows of N calls: alone; beside
  plain Python computing in the kernel's thread (a control: it shares the interpreter lock as
  any Python code does, and allocates nothing the garbage collector tracks); and while the
  kernel's thread reports the hostile catalog (both hostile tools plus 2,000 ordinary ones)
  over and over. p50, p99 and the worst call of each window, medians over the
  rounds, and paired ratios. This runs first, before the large inputs below exist, so the
  garbage collector's pauses are the report's own.

    python -m benchmarks.bench_report            # 5 rounds, 400 calls per window
    python -m benchmarks.bench_report --quick    # smaller inputs, 2 rounds, 60 calls
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import pandas as pd

from benchmarks import common
from toolbench import Bench
from toolbench._bench.report.report import report
from toolbench._bench.report.tokens import counter, unavailable
from toolbench._notebook.views.display import frame_html

CPU: dict[str, float] = {}


def _tool(i: int, server: str = "srv") -> dict[str, Any]:
    props = {
        "query": {"type": "string", "description": "what to look for"},
        "limit": {"type": "integer", "default": 10, "minimum": 1},
        "unit": {"type": "string", "enum": ["km", "mi", "nmi"], "default": "km"},
        "exact": {"type": "boolean", "default": False},
    }
    words = "returns the matching items ranked by relevance " * 4
    return {"name": f"{server}-tool_{i:05d}", "server": server, "tool": f"tool_{i:05d}",
            "title": f"Tool {i}", "description": f"Tool {i}: {words}"[:200],
            "input_schema": {"type": "object", "properties": props, "required": ["query"]},
            "output_schema": None, "annotations": None}


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _hostile_description(chars: int) -> str:
    part = ("Look it up. " * 1_000 + "aB3/" * 2_500 + "\u200b") * (chars // 22_001 + 1)
    return part[:chars]


def _hostile(chars: int, levels: int, ordinary: int) -> pd.DataFrame:
    rows = [{**_tool(0, "evil"), "name": "evil-big", "tool": "big",
             "description": _hostile_description(chars)},
            {**_tool(1, "evil"), "name": "evil-deep", "tool": "deep",
             "input_schema": _deep(levels)}]
    rows += [_tool(i, "evil") for i in range(2, ordinary + 2)]
    return pd.DataFrame(rows)


def _timed(fn: Callable[[], Any], rounds: int, label: str) -> tuple[float, Any]:
    times, cpu, value = [], [], None
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        value = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU[label] = statistics.median(cpu)
    return statistics.median(times), value


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _window(bench: Bench, calls: int) -> list[float]:
    out = []
    for i in range(calls):
        started = time.perf_counter()
        result = bench.call("healthy-add", {"a": i, "b": 1})
        out.append(time.perf_counter() - started)
        if result.data not in (i + 1, {"result": i + 1}):
            raise AssertionError(f"healthy server answered {result.data!r} to {i} + 1")
    return out


def _plain_work() -> None:
    """The control: some 50 ms of plain Python computing (short-lived strings, no containers
    kept, so no garbage collection): what sharing the interpreter lock costs by itself."""
    sum(len(str(i * 7)) for i in range(200_000))


def _neighbour(out: dict[str, Any], quick: bool) -> None:
    rounds = 2 if quick else 5
    calls = 60 if quick else 400
    hostile = _hostile(1_000_000 if quick else 10_000_000, 1_000 if quick else 10_000,
                       200 if quick else 2_000)
    figures: dict[str, list[float]] = {}
    reports = 0
    with Bench(timeout=120) as bench:
        bench.load_config(common.mcp_config({"healthy": common.server_argv(0.0, "healthy")}),
                          progress=False)
        _window(bench, 30)  # warm
        for _ in range(rounds):
            for label in ("alone", "beside plain Python", "while reporting"):
                samples: list[float] = []
                done = threading.Event()

                def caller(into: list[float] = samples, stop: threading.Event = done) -> None:
                    try:
                        into.extend(_window(bench, calls))
                    finally:
                        stop.set()

                thread = threading.Thread(target=caller, name="bench-neighbour")
                thread.start()
                if label == "alone":
                    done.wait(300)
                elif label == "beside plain Python":
                    while not done.is_set():
                        _plain_work()
                else:
                    while not done.is_set():
                        report(hostile)
                        reports += 1
                thread.join(300)
                for name, value in (("p50", statistics.median(samples)),
                                    ("p99", _percentile(samples, 0.99)),
                                    ("worst", max(samples))):
                    figures.setdefault(f"neighbour_{name}_{label.replace(' ', '_')}_ms",
                                       []).append(value * 1e3)
    for key, values in figures.items():
        out[key] = statistics.median(values)
        out[key + "_rounds"] = values
    for label in ("while_reporting", "beside_plain_Python"):
        pairs = zip(figures[f"neighbour_p99_{label}_ms"], figures["neighbour_p99_alone_ms"],
                    strict=True)
        out[f"neighbour_p99_ratio_{label}_paired"] = statistics.median(w / a for w, a in pairs)
    pairs = zip(figures["neighbour_p99_while_reporting_ms"],
                figures["neighbour_p99_beside_plain_Python_ms"], strict=True)
    out["neighbour_p99_reporting_over_control_paired"] = statistics.median(
        w / c for w, c in pairs)
    out["neighbour_worst_minus_alone_ms"] = (out["neighbour_worst_while_reporting_ms"]
                                             - out["neighbour_worst_alone_ms"])
    out["neighbour_calls_per_window"] = calls
    out["neighbour_rounds"] = rounds
    out["hostile_reports_during_windows"] = reports


def run(quick: bool = False) -> dict[str, Any]:
    n, rounds = (1_000, 2) if quick else (10_000, 5)
    catalog = pd.DataFrame([_tool(i) for i in range(n)])
    out: dict[str, Any] = {"tools": n, "rounds": rounds,
                           "tokenizer_available": unavailable() is None}
    counter(None)  # the vocabulary is read once per process; not part of any figure
    _neighbour(out, quick)
    report(catalog.head(10), tokenizer="estimate")
    t, rep = _timed(lambda: report(catalog, tokenizer="estimate"), rounds, "report_estimate")
    out["report_estimate_s"] = t
    if unavailable() is None:
        t, rep_bpe = _timed(lambda: report(catalog, tokenizer="cl100k_base"), rounds,
                            "report_cl100k")
        out["report_cl100k_s"] = t
        out["tokens_estimate_over_cl100k"] = rep["tokens"].sum() / rep_bpe["tokens"].sum()
    t, _ = _timed(lambda: report(rep, by="server"), rounds, "by_server")
    out["by_server_from_report_s"] = t
    t, _ = _timed(lambda: frame_html(rep), rounds, "report_html")
    out["report_html_s"] = t
    size, levels, many = ((1_000_000, 1_000, 10_000) if quick
                          else (10_000_000, 10_000, 100_000))
    big = pd.DataFrame([{**_tool(0), "description": _hostile_description(size)}])
    deep = pd.DataFrame([{**_tool(0), "input_schema": _deep(levels)}])
    lots = pd.DataFrame([_tool(i) for i in range(many)])
    out["hostile"] = {"description_chars": size, "schema_levels": levels, "tools": many}
    t, _ = _timed(lambda: report(big, tokenizer="estimate"), 1, "big_estimate")
    out["description_10mb_estimate_s"] = t
    if unavailable() is None:
        t, _ = _timed(lambda: report(big), 1, "big_cl100k")
        out["description_10mb_cl100k_s"] = t
        t, _ = _timed(lambda: report(deep), 1, "deep_cl100k")
        out["schema_10000_deep_cl100k_s"] = t
    t, _ = _timed(lambda: report(deep, tokenizer="estimate"), 1, "deep_estimate")
    out["schema_10000_deep_estimate_s"] = t
    t, _ = _timed(lambda: report(lots, tokenizer="estimate"), 1, "tools_100000_estimate")
    out["tools_100000_estimate_s"] = t
    out.update({f"{label}_cpu_s": seconds for label, seconds in CPU.items()})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(run(parser.parse_args().quick), indent=1))


if __name__ == "__main__":
    main()
