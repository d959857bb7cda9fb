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

    python -m benchmarks.bench_models            # 5 rounds
    python -m benchmarks.bench_models --quick    # 2 rounds, 200 cases
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import toolbench as tb
from toolbench.demo import geo, geo_precise

CALL = {"tool": "geo-distance", "arguments": {"from_city": "London", "to_city": "Paris"}}


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
                "journal": lambda j=journal: bench.evaluate(with_usage, items, journal=j,
                                                            progress=False),
                "resumed": lambda j=journal: bench.evaluate(with_usage, items, journal=j,
                                                            resume=True, progress=False),
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
    targets = {"in process": geo.create, "stdio": lambda: [sys.executable, "-m",
                                                           "toolbench.demo.geo"]}
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
    print(json.dumps({k: v.get("median_us_per_row", v.get("median_us_per_step"))
                      for k, v in result.items()}))


if __name__ == "__main__":
    main()
