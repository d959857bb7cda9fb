"""bench.replay: recorded argument sets run again, recorded vs new answers, ``changed`` marked,
with map's caps, journal and resume; a server without the tool is a clear error."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import toolbench as tb
from toolbench._bench.replay.replay import answers_differ
from toolbench.demo import geo, geo_precise

CASES = [{"from_city": "London", "to_city": c} for c in ("Paris", "Tokyo", "Sydney", "Lima")]


@pytest.fixture
def bench() -> tb.Bench:
    b = tb.Bench()
    b.connect("geo", geo.create())
    b.connect("geo_precise", geo_precise.create())
    yield b
    b.close()


def test_replay_against_another_server_marks_what_changed(bench: tb.Bench) -> None:
    recorded = bench.map("geo-distance", CASES, progress=False)
    df = bench.replay(recorded, against="geo_precise", progress=False)
    assert len(df) == 2 * len(CASES)
    assert list(df["server"]) == ["recorded", "geo_precise"] * len(CASES)
    assert list(df["case"]) == [i for i in range(len(CASES)) for _ in (0, 1)]
    assert df["changed"].all()  # sphere vs ellipsoid: every distance differs a little
    loose = bench.replay(recorded, against="geo_precise", rtol=0.01, progress=False)
    assert not loose["changed"].any()  # within 1 %
    new = df[df["server"] == "geo_precise"]
    assert set(new["name"]) == {"geo_precise-distance"}
    assert new["call_id"].isin(bench.records["call_id"]).all()  # recorded as calls
    assert df.tb.kind == "compare"
    answers = df.tb.answers()
    assert list(answers.columns) == ["geo_precise", "recorded"]


def test_replay_against_the_same_server_changes_nothing(bench: tb.Bench) -> None:
    recorded = bench.map("geo-distance", CASES, progress=False)
    df = bench.replay(recorded, against="geo", progress=False)
    assert not df["changed"].any()


def test_replay_of_a_journal_with_resume(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as one:
        one.connect("geo", geo.create())
        one.map("geo-distance", CASES, progress=False)
    with tb.Bench(journal=path) as two:
        two.connect("geo", geo.create())
        two.connect("geo_precise", geo_precise.create())
        first = two.replay(path, against="geo_precise", progress=False)  # a journal's path
        assert len(first) == 2 * len(CASES)
        calls = len(two.records)
        loaded = two.records[two.records["server"] == "geo"]  # loaded from the journal
        again = two.replay(loaded, against="geo_precise", progress=False, resume=True)
        assert len(two.records) == calls  # nothing sent twice
        mine = first[first["server"] == "geo_precise"]["call_id"].tolist()
        assert again[again["server"] == "geo_precise"]["call_id"].tolist() == mine


def test_failures_are_rows_and_compare_by_error_type(bench: tb.Bench) -> None:
    recorded = bench.map("geo-distance", [{"from_city": "Atlantis", "to_city": "Paris"}],
                         progress=False)
    assert not recorded["ok"].iloc[0]  # a tool error: still a recorded answer
    df = bench.replay(recorded, against="geo_precise", progress=False)
    assert df["error_type"].tolist() == ["ToolFailed", "ToolFailed"]
    assert not df["changed"].any()


def test_a_server_without_the_tool(bench: tb.Bench) -> None:
    recorded = bench.map("geo-world_map", [{"width": 90}], progress=False)
    with pytest.raises(tb.Unreachable, match="offers none of the recorded tools"):
        bench.replay(recorded, against="geo_precise", progress=False)
    both = pd.concat([recorded, bench.map("geo-distance", CASES[:1], progress=False)])
    df = bench.replay(both, against="geo_precise", progress=False)
    missing = df[(df["server"] == "geo_precise") & ~df["ok"]].iloc[0]
    assert missing["error_type"] == "Unreachable"
    assert missing["disposition"] == "did_not_happen"
    assert "offers no tool 'world_map'" in missing["error"]
    assert df[df["case"] == 1]["ok"].all()


def test_bad_arguments(bench: tb.Bench) -> None:
    recorded = bench.map("geo-distance", CASES[:1], progress=False)
    with pytest.raises(ValueError, match="not a connected server"):
        bench.replay(recorded, against="nowhere")
    with pytest.raises(ValueError, match="rtol"):
        bench.replay(recorded, against="geo", rtol=float("nan"))
    with pytest.raises(ValueError, match="records lack the columns"):
        bench.replay(pd.DataFrame({"x": [1]}), against="geo")
    with pytest.raises(ValueError, match="records frame"):
        bench.replay(42, against="geo")


def test_answers_differ() -> None:
    from types import SimpleNamespace as R

    def ok(structured: object = None, text: str | None = None) -> R:
        return R(ok=True, structured=structured, text=text, error_type=None)

    assert not answers_differ(ok({"result": 1.0}), ok({"result": 1.0000001}), 1e-3)
    assert answers_differ(ok({"result": 1.0}), ok({"result": 1.1}), 1e-3)
    assert answers_differ(ok(text="a"), ok(text="b"), 0)
    assert not answers_differ(ok(text="[1, 2]"), ok(text="[1,2]"), 0)
    assert answers_differ(ok(text="a"), R(ok=False, error_type="TimedOut"), 0)
    assert answers_differ(ok({"a": True}), ok({"a": 1}), 0)
