"""Scores of an eval frame (``toolbench/_bench/models/scores.py``): the Wilson interval against
published values, tool-choice counts, argument accuracy, the confusion table, the plot."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

import toolbench  # noqa: F401 - df.tb
from toolbench._bench.models.scores import confusion, pairs, tool_counts, wilson


@pytest.mark.parametrize(("passed", "total", "low", "high"), [
    # Wilson score intervals, 95 %: Newcombe (1998), Statistics in Medicine 17, table I,
    # and statsmodels' proportion_confint(method="wilson").
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
    (8, 10, 0.4902, 0.9433),
    (10, 10, 0.7225, 1.0),
    (50, 100, 0.4038, 0.5962),
])
def test_wilson_matches_published_intervals(passed: int, total: int, low: float,
                                            high: float) -> None:
    got = wilson(passed, total)
    assert got[0] == pytest.approx(low, abs=5e-5) and got[1] == pytest.approx(high, abs=5e-5)


def test_wilson_of_nothing_is_nan() -> None:
    assert all(math.isnan(v) for v in wilson(0, 0))


def _row(case: str, server: str, expected: list[str], called: list[str], *, passed: bool,
         tool_ok: bool = True, args_ok: bool = True, error: str | None = None,
         tokens: tuple[int, int] = (100, 10), ms: float = 5.0) -> dict[str, Any]:
    return {"case": case, "server": server, "repeat": 0, "expected": expected,
            "called": called, "tool_ok": tool_ok, "args_ok": args_ok, "order_ok": True,
            "extra_calls": 0, "forbidden": [], "passed": passed, "steps": 1,
            "tokens_in": tokens[0], "tokens_out": tokens[1], "model_ms": ms, "tool_ms": 0.0,
            "error": error, "run": None, "tokenizer": "usage"}


def _frame() -> pd.DataFrame:
    return pd.DataFrame([
        _row("a", "geo", ["distance"], ["distance"], passed=True),
        _row("b", "geo", ["distance"], ["distance"], passed=False, args_ok=False),
        _row("c", "geo", [], [], passed=True),
        _row("d", "geo", ["bearing"], [], passed=False, tool_ok=False, args_ok=False,
             error="no reply within 1 s (model_timeout)", tokens=(0, 0)),
        _row("a", "geo_precise", ["distance"], ["distance", "distance"], passed=True),
        _row("b", "geo_precise", ["distance"], ["bearing"], passed=False, tool_ok=False,
             args_ok=False),
        _row("c", "geo_precise", [], ["distance"], passed=False, tool_ok=False),
        _row("d", "geo_precise", ["bearing"], ["bearing"], passed=True, ms=15.0),
    ])


def test_scores_by_server() -> None:
    table = _frame().tb.scores()
    assert list(table.index) == ["geo", "geo_precise"] and table.index.name == "server"
    geo, precise = table.loc["geo"], table.loc["geo_precise"]
    assert (geo["rows"], geo["passed"], geo["pass_rate"]) == (4, 2, 0.5)
    assert (geo["pass_low"], geo["pass_high"]) == pytest.approx(wilson(2, 4))
    # geo: 2 hits, 0 false positives, 1 miss (d)
    assert geo["precision"] == 1.0 and geo["recall"] == pytest.approx(2 / 3)
    assert geo["f1"] == pytest.approx(0.8)
    # args over rows whose expected tools were all called: a (ok), b (not)
    assert geo["args_accuracy"] == 0.5
    assert geo["errors"] == 1
    # geo_precise: hits a, d; false positives a's second call, b's bearing, c's distance
    assert precise["precision"] == pytest.approx(2 / 5)
    assert precise["recall"] == pytest.approx(2 / 3)
    assert precise["args_accuracy"] == 1.0 and precise["errors"] == 0
    assert precise["tokens_in"] == 100 and geo["tokens_in"] == 75
    assert precise["model_ms"] == pytest.approx(7.5)


def test_scores_by_case() -> None:
    table = _frame().tb.scores(by="case")
    assert list(table.index) == ["a", "b", "c", "d"] and table.index.name == "case"
    assert list(table["pass_rate"]) == [1.0, 0.0, 0.5, 0.5]
    assert math.isnan(table.loc["c", "args_accuracy"])  # nothing expected: no arguments


def test_a_row_whose_passed_is_missing_is_not_a_pass() -> None:
    frame = _frame()
    frame["passed"] = frame["passed"].astype(object)
    frame.loc[1, "passed"] = math.nan  # geo's b: was False
    frame.loc[3, "passed"] = None  # geo's d: was False
    geo = frame.tb.scores().loc["geo"]
    assert (geo["rows"], geo["passed"]) == (4, 2)


def test_scores_refuse_another_frame_and_a_bad_by() -> None:
    with pytest.raises(ValueError, match=r"needs an eval frame.*lacks expected, called"):
        pd.DataFrame({"case": [0], "server": ["s"], "passed": [True]}).tb.scores()
    with pytest.raises(ValueError, match="'server' or 'case', not 'tool'"):
        _frame().tb.scores(by="tool")


def test_tool_counts_are_a_multiset() -> None:
    assert tool_counts(["distance"], ["distance", "distance"]) == (1, 1, 0)
    assert tool_counts(["a", "b"], ["b"]) == (1, 0, 1)
    assert tool_counts([], []) == (0, 0, 0)


def test_confusion_pairs_what_was_missed_with_what_was_chosen() -> None:
    assert pairs(["distance"], ["distance"]) == [("distance", "distance")]
    assert pairs(["distance"], ["bearing"]) == [("distance", "bearing")]
    assert pairs(["distance"], []) == [("distance", "(none)")]
    assert pairs([], ["distance"]) == [("(none)", "distance")]
    assert pairs([], []) == [("(none)", "(none)")]
    table = _frame().tb.confusion()
    assert table.index.name == "expected" and table.columns.name == "chosen"
    assert list(table.index) == ["bearing", "distance", "(none)"]
    assert table.loc["distance", "distance"] == 3 and table.loc["distance", "bearing"] == 1
    assert table.loc["bearing", "(none)"] == 1 and table.loc["(none)", "distance"] == 2
    assert table.loc["(none)", "(none)"] == 1
    geo = confusion(_frame(), server="geo")
    assert int(geo.to_numpy().sum()) == 4 and "bearing" not in geo.columns
    with pytest.raises(ValueError, match="server 'nope' is not in this eval frame"):
        confusion(_frame(), server="nope")


def test_a_frame_read_back_from_csv_still_scores(tmp_path: Any) -> None:
    path = tmp_path / "eval.csv"
    _frame().tb.to_csv(path)
    back = pd.read_csv(path)
    assert back.tb.scores().equals(_frame().tb.scores())


@pytest.mark.slow  # on a fresh font cache matplotlib runs fc-list, a process
def test_plot_scores_draws_a_bar_per_server() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = _frame().tb.plot_scores()
    try:
        assert [t.get_text() for t in ax.get_yticklabels()] == ["geo", "geo_precise"]
        assert [round(p.get_width(), 3) for p in ax.patches] == [0.5, 0.5]
    finally:
        plt.close(ax.figure)


def test_an_eval_frame_knows_its_kind_and_shows_escaped() -> None:
    frame = _frame()
    frame.loc[0, "error"] = "<script>alert(1)</script>"
    assert frame.tb.kind == "eval"
    shown = frame.tb.show()._repr_mimebundle_()["text/html"]
    assert "<script>alert(1)" not in shown and "&lt;script&gt;" in shown and "eval" in shown
