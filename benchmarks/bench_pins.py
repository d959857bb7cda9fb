"""What pins cost a call: the pin check on the hot path, and a whole call with and without pins.

The check is ``if blocked and target.tool in blocked`` (``blocked = guard.blocked``) in
``Calls.invoke``: an empty frozenset's truth test without pins (or with no changed tool), one set
lookup (a ToolId's hash) when some pinned tool has changed. Fingerprints are computed when a
listing is applied, never per call (bench_diff measures that).

Measured here, as medians of several rounds:

- the check alone (timeit): without pins (empty set), and with 1 and 10,000 blocked tools;
- a whole ``Bench.call`` path on a ToolBox tool (in process, no I/O, so the bench's own cost
  dominates), run on the shared loop N times in a row: a bench without pins, and one with a
  pins file in which another tool is blocked (so every call does the lookup). CPU time is
  reported beside wall time: on a shared machine, wall time mostly measures the wait for a core.

Reads and prompt fetches are gated too (``History.gated``): without pins that is
one truth test; with pins, ``pins.changed_key``: a dict lookup, plus one re2 match per
changed resource template of the server (none, usually). Measured alone (timeit) for a read
with no changes, 1 changed resource, and 100 changed templates of the same server.

    python -m benchmarks.bench_pins            # 20,000 calls x 5 rounds
    python -m benchmarks.bench_pins --quick    # 2,000 calls x 2 rounds
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import timeit
import warnings
from pathlib import Path
from typing import Any

import toolbench as tb
from toolbench._core.ids import ToolId
from toolbench._loop import get_loop


def _check_ns(blocked: frozenset[ToolId], tid: ToolId, number: int) -> float:
    def check() -> bool:
        return bool(blocked and tid in blocked)

    return min(timeit.repeat(check, number=number, repeat=5)) / number * 1e9


def _gate_ns(changes: dict[Any, Any], number: int) -> float:
    from toolbench._bench.overtime.pins import changed_key

    def check() -> object:
        return changed_key(changes, "s", "resource", "city://paris")

    return min(timeit.repeat(check, number=number, repeat=5)) / number * 1e9


def _box(second: str) -> tb.ToolBox:
    box = tb.ToolBox()

    @box.tool(server="calc", name="add")
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @box.tool(server="calc", name=second)
    def other(a: int) -> int:
        """Another tool (it changes between the two benches)."""
        return a

    return box


def _calls(bench: tb.Bench, n: int) -> tuple[float, float]:
    async def many() -> None:
        for i in range(n):
            await bench._call("calc-add", {"a": i, "b": 1}, progress=False)

    t0, c0 = time.perf_counter(), time.process_time()
    get_loop().run(many)
    return (time.perf_counter() - t0) / n * 1e6, (time.process_time() - c0) / n * 1e6


def run(quick: bool = False) -> dict[str, Any]:
    n, rounds = (2_000, 2) if quick else (20_000, 5)
    out: dict[str, Any] = {"calls": n, "rounds": rounds}
    tid = ToolId("calc", "add")
    many = frozenset(ToolId("s", f"t{i}") for i in range(10_000))
    out["check_no_pins_ns"] = _check_ns(frozenset(), tid, 1_000_000)
    out["check_1_blocked_ns"] = _check_ns(frozenset({ToolId("calc", "other")}), tid, 1_000_000)
    out["check_10000_blocked_ns"] = _check_ns(many, tid, 1_000_000)
    out["read_gate_no_changes_ns"] = _gate_ns({}, 200_000)
    out["read_gate_1_changed_resource_ns"] = _gate_ns({("s", "resource", "note://a"): 1},
                                                      200_000)
    out["read_gate_100_changed_templates_ns"] = _gate_ns(
        {("s", "resource_template", f"t{i}://{{x}}/{{+rest}}"): 1 for i in range(100)}, 2_000)
    with tempfile.TemporaryDirectory() as folder:
        pins = Path(folder) / "pins.json"
        with tb.Bench(pins=pins) as first:
            first.add(_box("other"))
        plain = tb.Bench()
        pinned = tb.Bench(pins=pins)
        try:
            plain.add(_box("other"))
            box = tb.ToolBox()

            @box.tool(server="calc", name="add")
            def add(a: int, b: int) -> int:
                """Add two numbers."""
                return a + b

            @box.tool(server="calc", name="other")
            def other(a: int, b: int = 0) -> int:
                """Another tool, changed: calls to it are refused until approved."""
                return a

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", tb.PinWarning)
                pinned.add(box)
            assert pinned.guard.blocked == frozenset({ToolId("calc", "other")})
            _calls(plain, 200)
            _calls(pinned, 200)  # warm both
            results: dict[str, list[tuple[float, float]]] = {"no_pins": [], "pins": []}
            for _ in range(rounds):  # interleaved, so drifting load hits both alike
                results["no_pins"].append(_calls(plain, n))
                results["pins"].append(_calls(pinned, n))
            for label, values in results.items():
                out[f"call_{label}_us"] = statistics.median(v[0] for v in values)
                out[f"call_{label}_cpu_us"] = statistics.median(v[1] for v in values)
        finally:
            plain.close()
            pinned.close()
    out["pins_overhead_cpu_us"] = out["call_pins_cpu_us"] - out["call_no_pins_cpu_us"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(run(parser.parse_args().quick), indent=1))


if __name__ == "__main__":
    main()
