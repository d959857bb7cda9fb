"""``df.tb.latency()`` and ``df.tb.timeline()`` (toolbench/_notebook/views/load.py) on the
records of real in-process sweeps: retried, paced, failing."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import toolbench as tb
from tests.test_retry import Scripted, busy
from toolbench._core.errors import TimedOut, ToolFailed
from toolbench._notebook.views.load import LATENCY_COLUMNS, lanes


def _sweep() -> pd.DataFrame:
    limited = Scripted("limited", [busy(), None, busy(), busy(), None, TimedOut("lost"),
                                   ToolFailed("no such n")])
    with tb.Bench() as bench:
        bench.connect("limited", limited, rate="50/s")
        bench.connect("quick", Scripted("quick", []))
        bench.map("limited-work", [{"n": i} for i in range(5)], concurrency=1, retries=3,
                  progress=False)
        bench.map("quick-work", [{"n": i} for i in range(4)], progress=False)
        return bench.records


def test_latency_counts_calls_attempts_retries_and_failures_by_disposition() -> None:
    records = _sweep()
    table = records.tb.latency()
    assert list(table.columns) == list(LATENCY_COLUMNS)
    assert list(table.index) == ["limited", "quick"] and table.index.name == "server"
    limited, quick = table.loc["limited"], table.loc["quick"]
    assert (limited["calls"], limited["attempts"], limited["retries"]) == (5, 8, 3)
    assert limited["error_rate"] == pytest.approx(2 / 5)
    assert limited["in_doubt"] == pytest.approx(1 / 5)
    assert limited["landed_failed"] == pytest.approx(1 / 5)
    assert limited["did_not_happen"] == 0.0
    assert limited["queued_p99_ms"] >= limited["queued_p50_ms"] >= 0.0  # paced: measured
    assert (quick["calls"], quick["retries"], quick["error_rate"]) == (4, 0, 0.0)
    assert math.isnan(quick["queued_p50_ms"])  # no rate: nothing queued
    assert quick["p99_ms"] >= quick["p50_ms"] >= 0.0
    everything = records.tb.latency(by=None)
    assert list(everything.index) == ["all"] and everything.loc["all", "calls"] == 9


def test_latency_of_a_map_frame_counts_retries_from_attempts() -> None:
    with tb.Bench() as bench:
        bench.connect("s", Scripted("s", [busy(), busy(), None, None]))
        df = bench.map("s-work", [{"n": 1}, {"n": 2}], concurrency=1, retries=3,
                       progress=False)
    row = df.tb.latency().loc["s"]
    assert (row["calls"], row["attempts"], row["retries"]) == (2, 2, 2)


def test_latency_by_batch_counts_single_calls_and_a_concat_of_frames() -> None:
    """Calls outside any batch (``bench.call``: batch None) are a group of their own, not 0
    calls; two record frames put together (repeated index labels) count each row once."""
    with tb.Bench() as bench:
        bench.connect("s", Scripted("s", []))
        bench.call("s-work", n=0)
        bench.map("s-work", [{"n": i} for i in range(3)], progress=False)
        records = bench.records
    by_batch = records.tb.latency(by="batch")
    assert sorted(by_batch["calls"].tolist()) == [1, 3] and by_batch["calls"].sum() == 4
    twice = pd.concat([records, records])
    assert twice.tb.latency().loc["s", "calls"] == 8


def test_latency_refuses_what_is_not_a_records_frame() -> None:
    with pytest.raises(ValueError, match="reads a records frame"):
        pd.DataFrame({"x": [1]}).tb.latency()
    with pytest.raises(ValueError, match="invalid by 'colour'"):
        _sweep().tb.latency(by="colour")


def test_lanes_give_calls_in_flight_together_different_rows() -> None:
    assert lanes([0, 1, 2, 3], [1, 2, 3, 4]) == [0, 0, 0, 0]  # one after another: one lane
    assert lanes([0, 0, 0, 2], [1, 3, 1.5, 4]) == [0, 2, 1, 0]  # the first free lane


def test_timeline_draws_each_server_with_its_lanes_and_marks_failures() -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    fig = _sweep().tb.timeline()
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "limited (1 lane)" and labels[1].startswith("quick (")  # concurrency 1
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    colours = sorted(line.get_color() for line in crosses)
    assert colours.count("#fd8d3c") == 3 and colours.count("#d62728") == 2  # retried; failed
    assert fig.get_axes()[0].get_xlabel() == "seconds since the first call"
    empty = _sweep().iloc[0:0].tb.timeline()
    assert empty.axes[0].get_title() == "no calls"
