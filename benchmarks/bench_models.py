"""A model in the loop (issue 44): toolbench's own cost per eval row and per run step.

Evals (``bench.evaluate``): toolbench's own time per row with a ``ScriptedModel`` (no model
time to speak of), ``steps=1`` (nothing is executed), 1,000 cases x 2 servers (the geo demos,
in process: a step-1 row never reaches a server). Aim: <= 1 ms a row, so the 2,000 rows in
under 2 s. The model is a ScriptedModel over a function (it picks the offered ``distance``),
which ``ask`` runs in a worker thread as it would any user's function. Variants: the model
reports usage (no counting); it does not (the report's tokenizer counts each row); with an
eval journal (one appended line a row); resuming all 2,000 rows from that journal (nothing
asked); and ``inline``: a ScriptedModel over a list, answered on the loop without a thread
(one server, 2 repeats, for the same 2,000 rows). Wall and process CPU, medians of rounds.

A killed eval (``eval_killed``): a child evaluating 2,000 rows with a journal is killed with
SIGKILL mid-eval; the resumed eval must ask for no row the journal held (rows asked twice: 0).

Beside a long eval (``eval_neighbour``): a neighbour's synchronous calls while 10,000 cases x
2 repeats are evaluated with a model that answers on the loop itself, and the peak memory the
eval's 20,000 rows add.

    python -m benchmarks.bench_models            # 5 rounds
    python -m benchmarks.bench_models --quick    # 2 rounds, 200 cases
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import toolbench as tb
from toolbench.demo import geo, geo_precise

CALL: dict[str, Any] = {"tool": "geo-distance",
                        "arguments": {"from_city": "London", "to_city": "Paris"}}


def _cases(count: int) -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "prompt": f"How far is London from Paris? ({i})",
             "expect": [{"tool": "distance", "arguments": {"from_city": "London"}}]}
            for i in range(count)]


def _timed(work: Any) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def eval_rows(cases: int = 1000, rounds: int = 5) -> dict[str, Any]:
    """µs of wall and CPU per eval row (median of ``rounds``), per variant."""
    def pick(usage: bool) -> Any:
        def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
            name = next(t["function"]["name"] for t in tools
                        if t["function"]["name"].endswith("-distance"))
            call = {"tool": name, "arguments": CALL["arguments"]}
            return tb.Reply(call, usage={"input": 120, "output": 20}) if usage else call

        return reply

    with_usage = tb.ScriptedModel(pick(True), name="scripted")
    no_usage = tb.ScriptedModel(pick(False), name="scripted")
    inline = tb.ScriptedModel([tb.Reply(CALL, usage={"input": 120, "output": 20})],
                              name="inline")
    found: dict[str, dict[str, list[float]]] = {}
    rows = 0
    with tb.Bench() as bench, tempfile.TemporaryDirectory() as folder:
        bench.connect("geo", geo.create())
        bench.connect("geo_precise", geo_precise.create())
        items = _cases(cases)
        bench.evaluate(with_usage, items[:20], progress=False)  # warm: imports, the loop
        bench.evaluate(no_usage, items[:20], progress=False)  # and the tokenizer's load
        for index in range(rounds):
            journal = Path(folder) / f"eval{index}.jsonl"
            variants = {
                "usage": lambda: bench.evaluate(with_usage, items, progress=False),
                "counted": lambda: bench.evaluate(no_usage, items, progress=False),
                "journal": functools.partial(bench.evaluate, with_usage, items,
                                             journal=journal, progress=False),
                "resumed": functools.partial(bench.evaluate, with_usage, items,
                                             journal=journal, resume=True, progress=False),
                "inline": lambda: bench.evaluate(inline, items, servers="geo", repeats=2,
                                                 progress=False),
            }
            for name, work in variants.items():
                wall, cpu, df = _timed(work)
                rows = len(df)
                assert rows == 2 * cases and bool(df["passed"].all()), name
                entry = found.setdefault(name, {"wall_us": [], "cpu_us": []})
                entry["wall_us"].append(wall / rows * 1e6)
                entry["cpu_us"].append(cpu / rows * 1e6)
    return {"rows": rows, "rounds": rounds,
            "median_us_per_row": {name: {k: round(statistics.median(v), 1)
                                         for k, v in entry.items()}
                                  for name, entry in found.items()},
            "all_us_per_row": found}


def eval_neighbour(cases: int = 10_000, calls: int = 400) -> dict[str, Any]:
    """A neighbour's calls while a long eval runs, and what the eval's rows cost in memory.

    The eval is the loop's worst case: a ScriptedModel over a list answers on the loop itself
    (no thread, no wait), ``cases`` x 2 repeats on geo, steps=1. Meanwhile the main thread
    calls geo_precise-distance through the synchronous face, one call at a time (the
    neighbour). Its latencies (p50, p99, worst) alone and during the eval; the process's peak
    RSS before and after the eval (the rows, the plan, the journal-less result frame).
    DESIGN's bound for a neighbour elsewhere: within 2x of its latency alone, plus 50 ms.
    """
    import resource
    import threading

    model = tb.ScriptedModel([tb.Reply(CALL, usage={"input": 120, "output": 20})],
                             name="inline")

    def latencies(count: int, until: threading.Event | None = None) -> list[float]:
        out: list[float] = []
        while len(out) < count or (until is not None and not until.is_set()):
            started = time.perf_counter()
            bench.call("geo_precise-distance", CALL["arguments"])
            out.append((time.perf_counter() - started) * 1000)
            if until is None and len(out) >= count:
                break
        return out

    def summary(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)
        return {"calls": len(values), "p50_ms": round(statistics.median(ordered), 3),
                "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
                "worst_ms": round(ordered[-1], 3)}

    with tb.Bench() as bench:
        bench.connect("geo", geo.create())
        bench.connect("geo_precise", geo_precise.create())
        items = _cases(cases)
        bench.evaluate(model, items[:50], servers="geo", progress=False)  # warm
        alone = latencies(calls)
        done = threading.Event()
        result: dict[str, Any] = {}
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

        def evaluate() -> None:
            started = time.perf_counter()
            try:
                result["df"] = bench.evaluate(model, items, servers="geo", repeats=2,
                                              concurrency=8, progress=False)
            finally:
                result["seconds"] = time.perf_counter() - started
                done.set()

        worker = threading.Thread(target=evaluate)
        worker.start()
        during = latencies(0, until=done)
        worker.join()
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rows = len(result["df"])
    assert rows == 2 * cases and bool(result["df"]["passed"].all())
    return {"rows": rows, "eval_s": round(result["seconds"], 2),
            "us_per_row": round(result["seconds"] / rows * 1e6, 1),
            "alone": summary(alone), "during": summary(during),
            "peak_rss_growth_mb": round((rss_after - rss_before) / 1024, 1)}


KILLED_CHILD = """
import sys, time
import toolbench as tb
from toolbench.demo import geo, geo_precise

def ask(messages, tools):
    time.sleep(0.002)  # a model that takes a moment, so the kill lands mid-eval
    name = next(t["function"]["name"] for t in tools
                if t["function"]["name"].endswith("-distance"))
    return {"role": "assistant", "tool_calls": [{"id": "1", "function": {
        "name": name, "arguments": '{"from_city": "London", "to_city": "Paris"}'}}]}

ask.name = "resumable"
cases = [{"id": f"c{i}", "prompt": f"How far is London from Paris? ({i})",
          "expect": [{"tool": "distance", "arguments": {"from_city": "London"}}]}
         for i in range(int(sys.argv[2]))]
bench = tb.Bench()
bench.connect("geo", geo.create())
bench.connect("geo_precise", geo_precise.create())
bench.evaluate(ask, cases, journal=sys.argv[1], concurrency=4, progress=False)
"""


def eval_killed(cases: int = 1000, kill_after: int = 800) -> dict[str, Any]:
    """A killed eval, resumed: a child process evaluates ``cases`` x 2 servers with a journal
    and is killed (SIGKILL) once ``kill_after`` rows are in the file; the resumed eval asks
    a counting model for the rest. Rows asked twice (asked again although the journal held
    them finished) must be 0."""
    import os
    import signal
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "eval.jsonl"
        child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(path), str(cases)])
        deadline = time.monotonic() + 300
        try:
            while True:
                lines = path.read_bytes().count(b"\n") - 1 if path.exists() else 0
                if lines >= kill_after or child.poll() is not None:
                    break
                assert time.monotonic() < deadline, "the child wrote too few rows"
                time.sleep(0.005)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait(timeout=30)
        finished = set()
        for line in path.read_text().splitlines()[1:]:
            try:
                row = json.loads(line)["row"]
            except ValueError:
                continue  # the line the kill cut
            finished.add((row["case"], row["server"]))
        asked: list[tuple[str, str]] = []

        def counting(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
            name = next(t["function"]["name"] for t in tools
                        if t["function"]["name"].endswith("-distance"))
            case = "c" + messages[-1]["content"].rsplit("(", 1)[1].rstrip(")")
            asked.append((case, name.removesuffix("-distance")))
            return {"role": "assistant", "tool_calls": [{"id": "1", "function": {
                "name": name, "arguments": json.dumps(CALL["arguments"])}}]}

        counting.name = "resumable"  # type: ignore[attr-defined]
        with tb.Bench() as bench:
            bench.connect("geo", geo.create())
            bench.connect("geo_precise", geo_precise.create())
            df = bench.evaluate(counting, _cases(cases), journal=path, resume=True,
                                progress=False)
    twice = sorted(set(asked) & finished)
    assert len(df) == 2 * cases and bool(df["passed"].all())
    return {"rows": 2 * cases, "finished_before_the_kill": len(finished),
            "asked_on_resume": len(asked), "asked_twice": len(twice),
            "asked_once_each": len(asked) == len(set(asked)) == 2 * cases - len(finished)}


def run_steps(runs: int = 20, steps: int = 10, rounds: int = 5) -> dict[str, Any]:
    """µs of wall and CPU per run step (engineer A's part): ``bench.run`` with a ScriptedModel
    whose every reply calls ``geo-distance`` once, ``steps`` replies then an answer, against
    the same number of plain ``bench.call``s (the baseline: what one call costs anyway), in
    process and over stdio. The difference is the run's own cost per step: asking the model,
    building the specs, checking the reply, handing the result back, the Step row.

    Variants: ``inline`` (a ScriptedModel over a list, answered on the loop), ``thread`` (a
    ScriptedModel over a function, which ``ask`` runs in a worker thread as any user's
    function), ``refused`` (every call names a tool not offered: recorded, never sent)."""
    import sys

    reply = {"tool": "geo-distance", "arguments": CALL["arguments"]}
    inline = tb.ScriptedModel([reply] * steps + ["done"], name="inline")
    threaded = tb.ScriptedModel(
        lambda messages, tools: reply if len(messages) < 2 * steps + 1 else "done",
        name="thread")
    refused = tb.ScriptedModel([{"tool": "geo-teleport"}] * steps + ["done"], name="refused")
    found: dict[str, dict[str, list[float]]] = {}
    targets: dict[str, Callable[[], Any]] = {
        "in process": geo.create,
        "stdio": lambda: [sys.executable, "-m", "toolbench.demo.geo"]}
    for where, target in targets.items():
        with tb.Bench() as bench:
            bench.connect("geo", target())
            for _ in range(3):  # warm: imports, the schema checker, the loop
                bench.run(inline, "warm", servers="geo", max_steps=steps + 1)
                bench.call("geo-distance", **CALL["arguments"])
            for _ in range(rounds):
                variants = {
                    "call": lambda: [bench.call("geo-distance", **CALL["arguments"])
                                     for _ in range(runs * steps)],
                    "inline": lambda: [bench.run(inline, "go", servers="geo", max_steps=steps + 1)
                                       for _ in range(runs)],
                    "thread": lambda: [bench.run(threaded, "go", servers="geo", max_steps=steps + 1)
                                       for _ in range(runs)],
                    "refused": lambda: [bench.run(refused, "go", servers="geo", max_steps=steps + 1)
                                        for _ in range(runs)],
                }
                for name, work in variants.items():
                    wall, cpu, out = _timed(work)
                    if name != "call":
                        assert all(r.stopped == "answered" and r.tool_calls == steps
                                   for r in out), name
                    entry = found.setdefault(f"{where}: {name}", {"wall_us": [], "cpu_us": []})
                    entry["wall_us"].append(wall / (runs * steps) * 1e6)
                    entry["cpu_us"].append(cpu / (runs * steps) * 1e6)
    medians = {name: {k: round(statistics.median(v), 1) for k, v in entry.items()}
               for name, entry in found.items()}
    return {"steps": runs * steps, "rounds": rounds, "median_us_per_step": medians,
            "all_us_per_step": found}


def run(quick: bool) -> dict[str, Any]:
    """What ``benchmarks/run.py`` would call (the lead decides whether it is in MODULES)."""
    return {"eval_rows": eval_rows(cases=200 if quick else 1000, rounds=2 if quick else 5),
            "eval_neighbour": eval_neighbour(cases=1000 if quick else 10_000,
                                             calls=100 if quick else 400),
            "eval_killed": eval_killed(cases=200 if quick else 1000,
                                       kill_after=150 if quick else 800),
            "run_steps": run_steps(runs=5 if quick else 20, rounds=2 if quick else 5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    result = run(args.quick)
    for name, figures in result["eval_rows"]["median_us_per_row"].items():
        print(f"eval, steps=1, {name:>8}: {figures['wall_us']:8.1f} µs wall, "
              f"{figures['cpu_us']:8.1f} µs CPU per row "
              f"({result['eval_rows']['rows']:,} rows, median of "
              f"{result['eval_rows']['rounds']})")
    for name, figures in result["run_steps"]["median_us_per_step"].items():
        print(f"run step, {name:>19}: {figures['wall_us']:8.1f} µs wall, "
              f"{figures['cpu_us']:8.1f} µs CPU per step "
              f"({result['run_steps']['steps']:,} steps, median of "
              f"{result['run_steps']['rounds']})")
    neighbour = result["eval_neighbour"]
    print(f"a neighbour's call beside an eval of {neighbour['rows']:,} rows "
          f"({neighbour['eval_s']} s, {neighbour['us_per_row']} µs a row): alone "
          f"{neighbour['alone']}, during {neighbour['during']}; peak RSS grew "
          f"{neighbour['peak_rss_growth_mb']} MB")
    killed = result["eval_killed"]
    print(f"a killed eval of {killed['rows']:,} rows, resumed: "
          f"{killed['finished_before_the_kill']:,} finished before the kill, "
          f"{killed['asked_on_resume']:,} asked on resume, "
          f"{killed['asked_twice']} asked twice")
    print(json.dumps({k: v.get("median_us_per_row", v.get("median_us_per_step", v))
                      for k, v in result.items()}))


if __name__ == "__main__":
    main()
