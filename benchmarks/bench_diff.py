"""Snapshots and diffs at 10,000 tools: fingerprinting a listing, tb.diff, schema_diff, HTML.

Builds 10,000 synthetic tools (a 200-character description, four typed parameters with an
enum and a default), then a changed copy: 5 % new descriptions, 2 % a renamed parameter,
1 % removed, 1 % added. Measures, as the median of several rounds:

- fingerprinting the listing (what the bench does when a listing is applied);
- building the snapshot frame (``bench.snapshot()``'s frame);
- ``tb.diff(a, b)`` of the two snapshots;
- ``schema_diff`` of a two-server catalog (10,000 same-named tools each);
- rendering each as HTML (``df.tb.show()``, capped rows).

    python -m benchmarks.bench_diff            # 10,000 tools, 5 rounds
    python -m benchmarks.bench_diff --quick    # 1,000 tools, 2 rounds
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from toolbench._bench.overtime.diff import diff, schema_diff
from toolbench._bench.overtime.snapshots import fingerprint_tools, snapshot_frame
from toolbench._core.client import ToolSpec
from toolbench._notebook.views.display import frame_html


def _spec(i: int, *, rename: bool = False, reword: bool = False) -> ToolSpec:
    unit = "units" if rename else "unit"
    props = {
        "query": {"type": "string", "description": "what to look for"},
        "limit": {"type": "integer", "default": 10, "minimum": 1},
        unit: {"type": "string", "enum": ["km", "mi", "nmi"], "default": "km"},
        "exact": {"type": "boolean", "default": False},
    }
    words = "returns the matching items ranked by relevance " * 4
    text = f"Tool {i}: {'now ' if reword else ''}{words}"[:200]
    return ToolSpec(f"tool_{i:05d}", text, {"type": "object", "properties": props,
                                            "required": ["query"]}, title=f"Tool {i}")


def _listings(n: int) -> tuple[list[ToolSpec], list[ToolSpec]]:
    old = [_spec(i) for i in range(n)]
    new = []
    for i in range(n):
        if i % 100 == 3:
            continue  # 1 % removed
        new.append(_spec(i, rename=i % 50 == 1, reword=i % 20 == 7))
    new += [_spec(n + i) for i in range(n // 100)]  # 1 % added
    return old, new


CPU: dict[str, float] = {}
"""CPU seconds (process time) of the last measurement, per label: on a shared, loaded machine
wall time mostly measures the wait for a core, so both are reported."""


def _median(fn: Callable[[], Any], rounds: int, label: str = "") -> tuple[float, Any]:
    times, cpu, value = [], [], None
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        value = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU[label] = statistics.median(cpu)
    return statistics.median(times), value


def run(quick: bool = False) -> dict[str, Any]:
    n, rounds = (1_000, 2) if quick else (10_000, 5)
    old, new = _listings(n)
    now = datetime.now(UTC)
    out: dict[str, Any] = {"tools": n, "rounds": rounds}
    t, items_a = _median(lambda: fingerprint_tools((s.name, s) for s in old), rounds,
                         "fingerprint_listing")
    out["fingerprint_listing_ms"] = t * 1000
    out["fingerprint_per_tool_us"] = t / n * 1e6
    items_b = fingerprint_tools((s.name, s) for s in new)
    t, a = _median(lambda: snapshot_frame(("srv", now, i) for i in items_a.values()), rounds,
                   "snapshot_frame")
    out["snapshot_frame_ms"] = t * 1000
    b = snapshot_frame(("srv", now, i) for i in items_b.values())
    t, d = _median(lambda: diff(a, b), rounds, "diff")
    out["diff_ms"] = t * 1000
    out["diff_rows"] = len(d)
    catalog = pd.DataFrame(
        [{"name": f"{srv}-{s.name}", "server": srv, "tool": s.name,
          "input_schema": s.input_schema, "parameters": s.parameters, "required": s.required}
         for srv, specs in (("a", old), ("b", new)) for s in specs])
    t, sd = _median(lambda: schema_diff(catalog), rounds, "schema_diff")
    out["schema_diff_ms"] = t * 1000
    out["schema_diff_rows"] = len(sd)
    out["schema_diff_catalog_rows"] = len(catalog)
    t, _ = _median(lambda: frame_html(d), rounds, "diff_html")
    out["diff_html_ms"] = t * 1000
    t, _ = _median(lambda: frame_html(sd), rounds, "schema_diff_html")
    out["schema_diff_html_ms"] = t * 1000
    out.update({f"{label}_cpu_ms": seconds * 1000 for label, seconds in CPU.items()})
    out["fingerprint_per_tool_cpu_us"] = CPU["fingerprint_listing"] / n * 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(run(parser.parse_args().quick), indent=1))


if __name__ == "__main__":
    main()
