"""Show, in a terminal, what comparing over time prints: a ``tb.diff`` and a pin refusal.

Against the real demo servers, as stdio children: ``geo_precise`` is pinned, then restarted
as ``geo_precise_v2`` (a changed description and a renamed parameter, ``unit`` -> ``units``),
and ``beyond``'s resource ``beyond://readme`` is pinned and then declared again with another
description (a server restarted with a changed resource). What the user sees is printed as it
is: the ``PinWarning``, the diff frame, and the ``Refused`` of a call and of a read.

Usage: ``python scripts/show_over_time.py`` (offline; a few seconds). Exit status 0 when
every refusal happened, 1 otherwise.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import pandas as pd

import toolbench as tb
from toolbench import demo


def _show_warnings(caught: list[warnings.WarningMessage]) -> None:
    for w in caught:
        print(warnings.formatwarning(w.message, w.category, "<cell>", 1, "").rstrip())


def _refused(what: str, run: object) -> bool:
    print(f">>> {what}")
    try:
        run()  # type: ignore[operator]
    except tb.Refused as exc:
        print(f"{type(exc).__module__}.{type(exc).__name__}: {exc}")
        print(f"    disposition: {exc.disposition.value}")
        return True
    print("(not refused)")
    return False


def main() -> int:
    env = demo.python_path_env()
    python = sys.executable
    refusals = []
    with tempfile.TemporaryDirectory() as folder:
        pins, journal = Path(folder) / "pins.json", Path(folder) / "calls.sqlite"
        with tb.Bench(pins=pins, journal=journal) as bench:
            bench.connect("geo_precise", [python, "-m", "toolbench.demo.geo_precise"], env=env)
            before = bench.snapshot("geo_precise")
            bench.disconnect("geo_precise")
            print(">>> bench.connect('geo_precise', [python, '-m', "
                  "'toolbench.demo.geo_precise_v2'])  # restarted, changed")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                bench.connect("geo_precise", [python, "-m", "toolbench.demo.geo_precise_v2"],
                              env=env)
            _show_warnings(caught)
            after = bench.snapshot("geo_precise")
            print()
            print(">>> print(tb.diff(before, after))")
            print(tb.diff(before, after))
            print()
            print(">>> print(tb.diff(before, after)[['change', 'name', 'field', 'detail']]"
                  ".to_string())")
            with pd.option_context("display.max_colwidth", 200):
                print(tb.diff(before, after)[["change", "name", "field", "detail"]].to_string())
            print()
            refusals.append(_refused(
                "bench.call('geo_precise-distance', from_city='London', to_city='Paris', "
                "units='km')",
                lambda: bench.call("geo_precise-distance", from_city="London",
                                   to_city="Paris", units="km")))
            print(">>> bench.approve('geo_precise-distance')")
            print(repr(bench.approve("geo_precise-distance")))
            print(">>> bench.call('geo_precise-distance', ...).data")
            print(bench.call("geo_precise-distance", from_city="London", to_city="Paris",
                             units="km").data)
        print()
        with tb.Bench(pins=pins) as bench:  # beyond: a resource pinned, then changed
            bench.connect("beyond", [python, "-m", "toolbench.demo.beyond"], env=env)
        with tb.Bench(pins=pins) as bench:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                bench.connect("beyond", [python, str(Path(__file__).with_name(
                    "_beyond_changed.py"))], env=env)
            print(">>> bench.connect('beyond', ...)  # restarted with a changed resource")
            _show_warnings(caught)
            refusals.append(_refused("bench.read('beyond', 'beyond://readme')",
                                     lambda: bench.read("beyond", "beyond://readme")))
    return 0 if all(refusals) else 1


if __name__ == "__main__":
    sys.exit(main())
