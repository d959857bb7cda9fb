"""Retries and rates on ``bench.run`` and ``bench.evaluate`` (``models/runs.py``,
``models/evaluate.py``), against the bundled ``limited`` demo server: a real streamable HTTP
server on 127.0.0.1 that answers HTTP 429 past its rate and counts at ``/stats`` what it
received, ran, limited and ran twice.

With ``retries`` every tool call of a run lands, each attempt is a record, and the server ran
none twice; with ``rate`` each call waited its turn (``queued_ms``) and the server limited
none. An eval's rate is one bucket per server for all its rows: ``concurrency`` runs at once
keep to it together. Bad values are refused before the model is asked anything.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import toolbench as tb
from tests.serving import limited_server, limited_stats

pytestmark = pytest.mark.slow

FAST_429 = ("--retry-after", "0.05")  # a quick Retry-After, so retries take little time


def lookups(count: int) -> tb.ScriptedModel:
    """A model that looks up 0..count-1 in one reply, then answers."""
    return tb.ScriptedModel([[{"tool": "lim-lookup", "arguments": {"n": n}}
                              for n in range(count)], "done"], name="lookups")


def of_run(bench: tb.Bench, run: tb.Run) -> Any:
    """Every record of this run's calls, each attempt included, as the bench keeps them."""
    records = bench.records
    return records[records["provenance"].map(lambda p: (p or {}).get("run") == run.id)]


def picker(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """An eval's model: looks up the number in the prompt, then answers."""
    if messages[-1]["role"] == "tool":
        return "done"
    n = int(str(messages[-1]["content"]).split()[-1])
    name = next(t["function"]["name"] for t in tools if t["function"]["name"].endswith("lookup"))
    return {"tool": name, "arguments": {"n": n}}


CASES = [{"id": f"c{n}", "prompt": f"look up {n}",
          "expect": [{"tool": "lookup", "arguments": {"n": n}}]} for n in range(4)]


# -- a run ----------------------------------------------------------------------------------
def test_without_retries_a_429_is_the_tool_calls_failure_told_to_the_model() -> None:
    with limited_server("--rate", "1", "--burst", "1", *FAST_429) as url, \
            tb.Bench() as bench:
        bench.connect("lim", url)
        run = bench.run(lookups(3), "look them up")
        stats = limited_stats(url)
    assert run.stopped == "answered"
    tools = run.steps[run.steps["kind"] == "tool"]
    assert list(tools["ok"]) == [True, False, False]  # the burst of one, then 429s
    assert all("HTTP 429" in e for e in tools["error"].iloc[1:])
    assert stats["served"] == 1 and stats["limited"] == 2


def test_with_retries_every_tool_call_of_a_run_lands_and_none_runs_twice() -> None:
    with limited_server("--rate", "4", "--burst", "1", *FAST_429) as url, \
            tb.Bench() as bench:
        bench.connect("lim", url)
        run = bench.run(lookups(4), "look them up", retries=50)
        records = of_run(bench, run)
        stats = limited_stats(url)
    assert run.stopped == "answered" and run.error is None
    assert bool(run.steps[run.steps["kind"] == "tool"]["ok"].all())
    assert [s["square"] for s in run.calls["structured"]] == [0, 1, 4, 9]
    # The server was hit at once by a burst of four with room for one: 429s, retried.
    assert stats["served"] == 4 and stats["repeated"] == 0 and stats["limited"] >= 1
    assert len(records) == stats["received"]  # every attempt is a record of this run
    assert int(run.calls["attempts"].max()) >= 2
    assert int(run.calls["attempts"].sum()) == len(records)  # the run keeps each last one
    earlier = records[~records["ok"]]
    assert set(earlier["disposition"]) == {"did_not_happen"}
    assert all("HTTP 429" in e for e in earlier["error"])
    for record in run.records:  # the last attempt lists those before it, and their waits
        retried = (record.provenance or {}).get("retried", [])
        assert len(retried) == record.attempts - 1
        assert all(r["wait_ms"] == 50.0 for r in retried)  # the server's Retry-After


def test_a_runs_rate_paces_its_calls_and_the_server_limits_none() -> None:
    with limited_server("--rate", "8", "--burst", "1", *FAST_429) as url, \
            tb.Bench() as bench:
        bench.connect("lim", url)
        run = bench.run(lookups(4), "look them up", rate="4/s")
        stats = limited_stats(url)
    assert bool(run.calls["ok"].all()) and len(run.calls) == 4
    assert run.calls["queued_ms"].notna().all()  # each waited its turn under the rate
    assert run.calls["queued_ms"].sum() > 0
    assert stats["served"] == 4 and stats["limited"] == 0


def test_without_a_rate_a_run_records_no_queueing() -> None:
    with limited_server("--rate", "100", "--burst", "100") as url, tb.Bench() as bench:
        bench.connect("lim", url)
        run = bench.run(lookups(2), "look them up")
    assert bool(run.calls["ok"].all()) and run.calls["queued_ms"].isna().all()


# -- an eval --------------------------------------------------------------------------------
def test_an_eval_with_retries_gathers_every_row_and_runs_no_call_twice() -> None:
    with limited_server("--rate", "4", "--burst", "1", *FAST_429) as url, \
            tb.Bench() as bench:
        bench.connect("lim", url)
        df = bench.evaluate(tb.ScriptedModel(picker, name="picker"), CASES, steps=2,
                            concurrency=4, retries=50, progress=False)
        records = bench.records
        stats = limited_stats(url)
    assert bool(df["passed"].all()) and df["error"].isna().all()
    assert stats["served"] == 4 and stats["repeated"] == 0 and stats["limited"] >= 1
    assert len(records) == stats["received"]  # each attempt is a record
    assert int(records["attempts"].max()) >= 2
    assert set(records[~records["ok"]]["disposition"]) == {"did_not_happen"}
    landed = records[records["ok"]]
    assert sorted(p["case"] for p in landed["provenance"]) == ["c0", "c1", "c2", "c3"]
    assert {p["run"] for p in landed["provenance"]} == set(df["run"])


def test_an_evals_rate_is_one_bucket_per_server_for_all_its_rows() -> None:
    # Four rows at once; the eval's 4/s keeps them, together, under the server's 8/s.
    with limited_server("--rate", "8", "--burst", "1", *FAST_429) as url, \
            tb.Bench() as bench:
        bench.connect("lim", url)
        df = bench.evaluate(tb.ScriptedModel(picker, name="picker"), CASES, steps=2,
                            concurrency=4, rate="4/s", progress=False)
        records = bench.records
        stats = limited_stats(url)
    assert bool(df["passed"].all())
    assert stats["served"] == 4 and stats["limited"] == 0
    assert len(records) == 4 and records["queued_ms"].notna().all()
    assert records["queued_ms"].max() > 0


def test_a_one_step_eval_takes_retries_and_rate_and_sends_nothing() -> None:
    with limited_server(*FAST_429) as url, tb.Bench() as bench:
        bench.connect("lim", url)
        df = bench.evaluate(tb.ScriptedModel(picker, name="picker"), CASES, retries=3,
                            rate="1/s", progress=False)
        assert len(bench.records) == 0
        stats = limited_stats(url)
    assert bool(df["passed"].all()) and stats["received"] == 0


# -- bad values -----------------------------------------------------------------------------
@pytest.mark.parametrize(("given", "said"), [
    ({"retries": -1}, "invalid retries -1: a whole number, 0 or more"),
    ({"retries": True}, "invalid retries True"),
    ({"retries": 1.5}, "invalid retries 1.5"),
    ({"max_retry_wait": 0}, "invalid max_retry_wait 0: a positive number of seconds"),
    ({"max_retry_wait": float("inf")}, "invalid max_retry_wait inf"),
    ({"rate": "fast"}, "invalid rate 'fast': a rate is a text \"N/s\""),
    ({"rate": "0/s"}, "invalid rate '0/s'"),
    ({"rate": 10}, "invalid rate 10"),
])
def test_bad_retries_and_rates_are_refused_before_the_model_is_asked(
        given: dict[str, Any], said: str) -> None:
    asked: list[int] = []

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        asked.append(1)
        return "done"

    with limited_server() as url, tb.Bench() as bench:
        bench.connect("lim", url)
        with pytest.raises(ValueError, match=re.escape(said)):
            bench.run(model, "look it up", **given)
        for steps in (1, 2):
            with pytest.raises(ValueError, match=re.escape(said)):
                bench.evaluate(model, CASES, steps=steps, progress=False, **given)
        assert len(bench.records) == 0
    assert asked == []


NOT_A_CLUSTER: Any = object()  # refused before the cluster is looked at


def test_an_eval_on_a_cluster_refuses_retries_and_rate() -> None:
    with limited_server() as url, tb.Bench() as bench:
        bench.connect("lim", url)
        for given in ({"retries": 2}, {"rate": "5/s"}):
            with pytest.raises(ValueError, match=r"evaluate\(cluster=\.\.\.\) takes no "
                                                 r"retries= or rate="):
                bench.evaluate(picker, CASES, cluster=NOT_A_CLUSTER, progress=False, **given)
