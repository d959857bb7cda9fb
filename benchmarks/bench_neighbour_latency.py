"""A neighbour's calls while a pinned server pulls the rug or lists 10,000 tools (issue 33).

DESIGN, "Bounded work on what a server or a file sends": while a rug-pull warning is being
built, a neighbour's call stays within 2x of its latency alone, plus 50 ms; connecting or
re-listing a 10,000-tool server keeps a neighbour's worst call within 100 ms of alone.

Each round is one child process per tree (this one, and ``--against`` another checkout): a
pinned Bench, a healthy stdio server (the latency server's ``add``) called flat out from a
thread, first alone (``ALONE_S``), then while one scenario runs:

- ``rugpull_6000``: the rug-pull server (``tests/servers/rugpull_server.py``, stdio) has a
  pinned ``echo`` of 6,000 repetitive words; ``flip`` changes one word in ten and announces
  it: the re-list, the fingerprint and the PinWarning's word diff;
- ``connect_10k``: connecting ``tests/servers/big_catalog_server.py --tools 10000``;
- ``relist_10k``: the same catalog server (``--flipper``) changes one tool and announces it:
  the re-list of 10,001 tools and one changed tool's PinWarning. This server answers from
  stdlib JSON, so what it costs the machine is small beside what the bench does.

Latencies are of the synchronous face a notebook uses; p50, p99 and the worst call alone and
during, paired in one process. A scenario that has not finished after ``DEADLINE_S`` is cut,
and the neighbour's call in flight counts with the time it has waited so far.

    python -m benchmarks.bench_neighbour_latency [--quick] [--against /path/to/checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SERVERS = REPO / "tests" / "servers"
LATENCY = REPO / "benchmarks" / "servers" / "latency_server.py"
SCENARIOS = ("rugpull_6000", "connect_10k", "relist_10k")
ALONE_S = 2.0
DEADLINE_S = 60.0
WORDS = 6000


def _quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _figures(samples: list[float]) -> dict[str, float]:
    return {"n": len(samples), "p50_ms": _quantile(samples, 0.5) * 1e3,
            "p99_ms": _quantile(samples, 0.99) * 1e3, "worst_ms": max(samples) * 1e3}


# -- the child: one scenario, one tree ---------------------------------------------------------
def child(scenario: str, folder: str) -> dict[str, Any]:
    import warnings

    from toolbench import Bench, PinWarning

    warned = threading.Event()
    shown = warnings.showwarning

    def show(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        if issubclass(category, PinWarning):
            warned.set()
            return
        shown(message, category, *args, **kwargs)

    warnings.showwarning = show
    warnings.simplefilter("always")
    state = Path(folder) / f"state-{scenario}.json"
    state.write_text(json.dumps({"version": 1, "words": WORDS}))
    bench = Bench(pins=str(Path(folder) / f"pins-{scenario}-{os.getpid()}.json"))
    bench.connect("healthy", [sys.executable, str(LATENCY)])
    big = [sys.executable, str(SERVERS / "big_catalog_server.py"), "--tools", "10000"]
    if scenario == "rugpull_6000":
        bench.connect("rug", [sys.executable, str(SERVERS / "rugpull_server.py"), str(state)])
    elif scenario == "relist_10k":
        bench.connect("big", [*big, "--flipper"], max_tools=20_000)
    for i in range(50):
        bench.call("healthy-add", {"a": i, "b": 1})

    samples: list[float] = []
    in_flight: list[float] = []
    stop = threading.Event()

    def neighbour() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            in_flight[:] = [started]
            bench.call("healthy-add", {"a": 1, "b": 2})
            samples.append(time.perf_counter() - started)
            in_flight.clear()

    def run_scenario() -> None:
        if scenario == "connect_10k":
            bench.connect("big", big, max_tools=20_000)
            return
        if scenario == "relist_10k":
            bench.call("big-flip")
        else:
            bench.call("rug-flip", {"version": 2, "words": WORDS})
        if not warned.wait(DEADLINE_S):
            raise TimeoutError("no PinWarning")

    thread = threading.Thread(target=neighbour, daemon=True)
    thread.start()
    time.sleep(ALONE_S)
    alone = list(samples)
    samples.clear()
    started = time.perf_counter()
    worker = threading.Thread(target=run_scenario, daemon=True)
    worker.start()
    worker.join(DEADLINE_S)
    finished = not worker.is_alive()
    took = time.perf_counter() - started
    time.sleep(0.1 if finished else 0.0)
    during = list(samples)
    if in_flight:  # a call still waiting counts with what it has waited so far
        during.append(time.perf_counter() - in_flight[0])
    stop.set()
    result = {"scenario": scenario, "finished": finished, "scenario_s": took,
              "alone": _figures(alone), "during": _figures(during)}
    if finished:
        thread.join(10)
        bench.close()
    return result


# -- the parent ---------------------------------------------------------------------------------
def _run_one(tree: Path, scenario: str, folder: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", scenario, folder]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=DEADLINE_S + 60, cwd=folder)
    except subprocess.TimeoutExpired:
        return {"scenario": scenario, "error": "the child did not exit"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"scenario": scenario, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def run(quick: bool = False, against: str | None = None,
        scenarios: tuple[str, ...] = SCENARIOS) -> dict[str, Any]:
    rounds = 1 if quick else 3
    trees = {"this": REPO} | ({"other": Path(against)} if against else {})
    out: dict[str, Any] = {"rounds": rounds, "against": against,
                           "load": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="bench-neighbour-") as folder:
        for scenario in scenarios:
            for label in trees:
                out.setdefault(scenario, {})[label] = []
            for _ in range(rounds):
                for label, tree in trees.items():  # the trees alternate, round by round
                    one = _run_one(tree, scenario, folder)
                    out[scenario][label].append(one)
                    _print(label, one)
    out["summary"] = {s: {label: _summary(out[s][label]) for label in trees} for s in scenarios}
    return out


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "during" in r]
    if not ok:
        return {"error": runs[-1].get("error") if runs else "no run"}

    def median(side: str, key: str) -> float:
        return round(statistics.median(r[side][key] for r in ok), 1)

    return {"alone_p50_ms": median("alone", "p50_ms"), "alone_p99_ms": median("alone", "p99_ms"),
            "alone_worst_ms": median("alone", "worst_ms"),
            "during_p50_ms": median("during", "p50_ms"),
            "during_p99_ms": median("during", "p99_ms"),
            "during_worst_ms": median("during", "worst_ms"),
            "worst_of_all_ms": round(max(r["during"]["worst_ms"] for r in ok), 1),
            "scenario_s": round(statistics.median(r["scenario_s"] for r in ok), 2),
            "finished": sum(r["finished"] for r in ok), "runs": len(runs)}


def _print(label: str, one: dict[str, Any]) -> None:
    if "during" not in one:
        print(f"  {label:>5} {one['scenario']:<13} {one.get('error')}", flush=True)
        return
    a, d = one["alone"], one["during"]
    print(f"  {label:>5} {one['scenario']:<13} alone p50 {a['p50_ms']:.2f} p99 {a['p99_ms']:.2f}"
          f" worst {a['worst_ms']:.1f} ms | during p50 {d['p50_ms']:.2f} p99 {d['p99_ms']:.2f}"
          f" worst {d['worst_ms']:.1f} ms | {one['scenario_s']:.2f} s"
          f"{'' if one['finished'] else ' (cut: still running)'}", flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2], sys.argv[3])), flush=True)
        os._exit(0)  # a cut scenario may leave the loop busy: do not wait for it
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--against", help="another checkout, measured the same way")
    parser.add_argument("--scenario", action="append", choices=SCENARIOS)
    args = parser.parse_args()
    result = run(args.quick, args.against,
                 tuple(args.scenario) if args.scenario else SCENARIOS)
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
