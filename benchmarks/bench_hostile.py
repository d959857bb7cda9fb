"""What a hostile server or file costs: word diffs, tb.diff, load_snapshot, recordings, pins.

Each case is the input of a finding of issue 33, run in a child process of its own (so a
stall can be cut at ``--timeout`` and its peak memory measured), against this tree and,
with ``--against DIR``, against another checkout (the tree before the issue), paired:

- ``word_diff`` of a 6,000-word repetitive description (the rug pull's ``PinWarning``
  detail: a repeated sentence with one word changed in every copy), and of a 3,996-word one
  (under the cap, so diffed word by word);
- ``tb.diff`` of two snapshots whose description has 10,000 such words, and its HTML;
- ``tb.load_snapshot`` of a ~16 kB journal whose ``snapshots.items`` is a generated column
  (``hex(zeroblob(n))``; 84 s before), and of three 60 MB snapshot rows of tiny items (58 s,
  +3 GB and 4 million rows before); ``tb.serve_recording`` of the crafted journal;
- an honest ``load_snapshot`` (10 servers x 1,000 tools), to show the checks cost nothing;
- a pins file of 100,000 tools (``max_tools=200_000``): written, then read back (refused
  before: 58.8 MB over the 32 MiB cap).

    python -m benchmarks.bench_hostile                           # this tree
    python -m benchmarks.bench_hostile --against /work/wt/before # and the tree before
    python -m benchmarks.bench_hostile --quick                   # smaller inputs, 1 round

The other tree is imported by its own module paths (the flat ``toolbench._bench.diff`` of
before the house moves, or ``toolbench._bench.overtime.diff``): only public names and the few
modules both have are used. CPU seconds (the child's) are reported beside wall seconds: on a
shared machine the wall clock mostly measures the wait for a core.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CASES = ("word_diff_6000", "word_diff_4000", "tb_diff_10000", "load_generated",
         "serve_generated", "load_three_big_rows", "load_honest", "pins_100k")


# -- inputs (made once, by the parent, with sqlite3 alone) ----------------------------------------
def _repetitive(words: int, seed: int) -> str:
    """A repeated sentence with one word changed in every copy (``seed``: which word): the
    worst case found for difflib (141 s at 6,000 words, where a/b noise took 3 s)."""
    sentence = f"Returns the weather for a {('city', 'town')[seed % 2]}.".split()
    return " ".join(sentence[i % len(sentence)] for i in range(words))


def _journal(path: Path) -> sqlite3.Connection:
    """An empty toolbench journal (schema 3), made by hand as a crafted one would be."""
    db = sqlite3.connect(path)
    cols = ("call_id", "batch", "started", "server", "tool", "name", "arguments", "ok",
            "disposition", "error_type", "error", "latency_ms", "text", "structured",
            "content", "provenance", "kind")
    db.execute("CREATE TABLE calls (seq INTEGER PRIMARY KEY, " + ", ".join(
        f"{c} {'INTEGER' if c == 'ok' else 'REAL' if c == 'latency_ms' else 'TEXT'}"
        for c in cols) + ")")
    db.execute("CREATE TABLE intents (call_id TEXT PRIMARY KEY, session TEXT, pid INTEGER, "
               "proc TEXT, batch TEXT, started TEXT, server TEXT, tool TEXT, name TEXT, "
               "arguments TEXT, provenance TEXT) WITHOUT ROWID")
    db.execute("PRAGMA application_id = 1952598604")  # 0x74624A4C, "tbJL"
    db.execute("PRAGMA user_version = 3")
    return db


_SNAPSHOTS = ("CREATE TABLE snapshots (seq INTEGER PRIMARY KEY, taken TEXT NOT NULL, server "
              "TEXT NOT NULL, kind TEXT NOT NULL, cause TEXT, format INTEGER NOT NULL, "
              "items TEXT NOT NULL)")


def make_inputs(folder: Path, quick: bool) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    crafted = folder / "generated.sqlite"
    db = _journal(crafted)
    db.execute("CREATE TABLE snapshots (seq INTEGER PRIMARY KEY, taken TEXT NOT NULL, server "
               "TEXT NOT NULL, kind TEXT NOT NULL, cause TEXT, format INTEGER NOT NULL, "
               "n INTEGER, items TEXT GENERATED ALWAYS AS (hex(zeroblob(n))) VIRTUAL)")
    rows = 20 if quick else 250
    db.executemany("INSERT INTO snapshots (taken, server, kind, cause, format, n) VALUES "
                   "(?, ?, 'tool', 'connect', 1, 33554433)",
                   [(now, f"s{i}") for i in range(rows)])
    db.execute("INSERT INTO calls (call_id, started, server, tool, name, arguments, ok, "
               "disposition, text, content, kind) VALUES ('c', ?, 's0', 't', 's0-t', '{}', 1, "
               "'landed', 'x', '[]', 'tool')", (now,))
    db.commit()
    db.close()

    big = folder / "three_big_rows.sqlite"
    db = _journal(big)
    db.execute(_SNAPSHOTS)
    per_row = 130_000 if quick else 1_330_000  # ~6 MB / ~60 MB of tiny items a row
    text = "[" + ",".join(f'{{"kind":"tool","name":"t{i}"}}' for i in range(per_row)) + "]"
    for i in range(3):
        db.execute("INSERT INTO snapshots (taken, server, kind, cause, format, items) VALUES "
                   "(?, ?, 'tool', 'connect', 1, ?)", (now, f"big{i}", text))
    db.commit()
    db.close()
    del text

    honest = folder / "honest.sqlite"
    db = _journal(honest)
    db.execute(_SNAPSHOTS)
    for s in range(10):
        items = [{"kind": "tool", "name": f"tool_{i}", "title": f"Tool {i}",
                  "description": "returns the matching items ranked by relevance " * 3,
                  "input_schema": {"type": "object", "properties": {
                      "query": {"type": "string"}, "limit": {"type": "integer"}}},
                  "output_schema": None, "annotations": None, "fingerprint": f"{i:064x}"}
                 for i in range(1000)]
        db.execute("INSERT INTO snapshots (taken, server, kind, cause, format, items) VALUES "
                   "(?, ?, 'tool', 'connect', 1, ?)", (now, f"srv{s}", json.dumps(items)))
    db.commit()
    db.close()
    return {"generated": str(crafted), "three_big_rows": str(big), "honest": str(honest),
            "pins": str(folder / "pins.json"), "quick": quick}


# -- the cases (run in the child, against whichever toolbench PYTHONPATH gives) -------------------
def _import(*names: str) -> Any:
    import importlib

    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"none of {names}")


def _word_diff(words: int) -> Callable[[dict[str, Any]], str]:
    def case(inputs: dict[str, Any]) -> str:
        diff = _import("toolbench._bench.overtime.diff", "toolbench._bench.diff")
        told = diff.word_diff(_repetitive(words, 1), _repetitive(words, 2))
        return f"ok: {len(told):,} characters"
    return case


def _tb_diff(inputs: dict[str, Any]) -> str:
    import toolbench as tb

    snapshots = _import("toolbench._bench.overtime.snapshots", "toolbench._bench.snapshots")
    from toolbench._core.client import ToolSpec

    now = datetime.now(UTC)
    words = 2000 if inputs["quick"] else 10_000
    a = snapshots.snapshot_frame([("s", now, snapshots.item_from_spec(
        ToolSpec("t", _repetitive(words, 3))))])
    b = snapshots.snapshot_frame([("s", now, snapshots.item_from_spec(
        ToolSpec("t", _repetitive(words, 4))))])
    frame = tb.diff(a, b)
    html = tb.show(frame)._repr_mimebundle_()["text/html"]
    return f"ok: {len(frame)} rows, {len(html):,} characters of HTML"


def _load(which: str) -> Callable[[dict[str, Any]], str]:
    def case(inputs: dict[str, Any]) -> str:
        import toolbench as tb

        return f"ok: {len(tb.load_snapshot(inputs[which])):,} rows"
    return case


def _serve(inputs: dict[str, Any]) -> str:
    import toolbench as tb

    tb.serve_recording(inputs["generated"])
    return "ok: served"


def _pins(inputs: dict[str, Any]) -> str:
    pins = _import("toolbench._bench.overtime.pins", "toolbench._bench.pins")
    n = 20_000 if inputs["quick"] else 100_000
    path = inputs["pins"]
    if os.path.exists(path):
        os.remove(path)
    schema = {"type": "object", "properties": {"query": {"type": "string", "description":
                                                         "what to look for"},
                                               "limit": {"type": "integer"}}}
    entries = {("big", "tool", f"tool_{i:06d}"): {
        "fingerprint": f"{i:064x}", "pinned": "2026-01-31T12:00:00+00:00",
        "item": {"kind": "tool", "name": f"tool_{i:06d}", "title": f"Tool {i}",
                 "description": "returns the matching items ranked by relevance",
                 "input_schema": schema, "output_schema": None, "annotations": None,
                 "fingerprint": f"{i:064x}"}} for i in range(n)}
    writer = pins.PinFile(path)
    writer.save(entries)
    writer.close()
    size = os.path.getsize(path)
    return f"ok: {size / 1e6:.1f} MB written, {len(pins.PinFile(path).pins):,} pins read back"


RUN: dict[str, Callable[[dict[str, Any]], str]] = {
    "word_diff_6000": _word_diff(6000), "word_diff_4000": _word_diff(3996),
    "tb_diff_10000": _tb_diff, "load_generated": _load("generated"),
    "serve_generated": _serve, "load_three_big_rows": _load("three_big_rows"),
    "load_honest": _load("honest"), "pins_100k": _pins,
}


def child(case: str, inputs: dict[str, Any]) -> dict[str, Any]:
    import warnings

    import pandas  # noqa: F401  (imports are not what is measured)

    import toolbench  # noqa: F401

    warnings.simplefilter("ignore")
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        outcome = RUN[case](inputs)
    except Exception as exc:
        outcome = f"refused: {type(exc).__name__}: {str(exc)[:160]}"
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "cpu_s": cpu, "peak_mb": peak, "outcome": outcome}


# -- the parent ---------------------------------------------------------------------------------
def _run_one(tree: Path, case: str, inputs: dict[str, Any], timeout: float) -> dict[str, Any]:
    # by its file, so the other tree's own benchmarks package is never the one imported
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", case, json.dumps(inputs)]
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return {"seconds": time.perf_counter() - start, "cpu_s": None, "peak_mb": None,
                "outcome": f"stopped: still running after {timeout:g} s"}
    if done.returncode != 0:
        return {"seconds": time.perf_counter() - start, "cpu_s": None, "peak_mb": None,
                "outcome": f"crashed: {done.stderr.strip().splitlines()[-1:]}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(tree: Path, inputs: dict[str, Any], rounds: int, timeout: float,
            cases: tuple[str, ...] = CASES) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for case in cases:
        runs = [_run_one(tree, case, inputs, timeout)]
        if runs[0]["seconds"] < 10:  # a stall is measured once
            runs += [_run_one(tree, case, inputs, timeout) for _ in range(rounds - 1)]
        best = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
        out[case] = {**best, "seconds_all": [round(r["seconds"], 3) for r in runs],
                     "median_s": statistics.median(r["seconds"] for r in runs)}
        print(f"  {tree.name:>10} {case:<22} {best['seconds']:8.3f} s  "
              f"cpu {best['cpu_s'] if best['cpu_s'] is None else round(best['cpu_s'], 3)}  "
              f"peak {best['peak_mb'] if best['peak_mb'] is None else round(best['peak_mb'])}"
              f" MB  {best['outcome']}", flush=True)
    return out


def run(quick: bool = False, against: str | None = None, timeout: float | None = None,
        cases: tuple[str, ...] = CASES) -> dict[str, Any]:
    rounds = 1 if quick else 3
    limit = timeout or (60.0 if quick else 180.0)
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as folder:
        inputs = make_inputs(Path(folder), quick)
        results: dict[str, Any] = {"quick": quick, "timeout_s": limit,
                                   "this": measure(REPO, inputs, rounds, limit, cases)}
        if against:
            results["against"] = against
            results["other"] = measure(Path(against), inputs, rounds, limit, cases)
    return results


def main() -> None:
    if sys.argv[1:2] == ["--child"]:  # one case, in the child process
        print(json.dumps(child(sys.argv[2], json.loads(sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--against", help="another checkout to measure the same way")
    parser.add_argument("--timeout", type=float, help="seconds a case may run (180)")
    parser.add_argument("--case", action="append", choices=CASES, help="only these cases")
    args = parser.parse_args()
    print(json.dumps(run(args.quick, args.against, args.timeout,
                         tuple(args.case) if args.case else CASES), indent=1))


if __name__ == "__main__":
    main()
