"""``bench.evaluate(..., cluster=client)`` (``toolbench/_bench/models/eval_cluster.py``) on a
real LocalCluster of worker processes: the same rows as on one machine, written to the eval
journal, resumed without asking again; ``steps>1`` and a non-client refused before anything
runs; a model the workers cannot run is an error row, not an exception."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench.demo import geo, geo_precise

pytest.importorskip("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("dask_resource_tracker")]

CASES = [{"id": f"c{i}", "prompt": f"How far is London from Paris? ({i})",
          "expect": [{"tool": "distance", "arguments": {"from_city": "London"}}]}
         for i in range(30)] + [{"id": "hi", "prompt": "Say hello", "expect": []}]


@pytest.fixture
def bench() -> Iterator[tb.Bench]:
    with tb.Bench() as b:  # in process: a step-1 row never reaches a server
        b.connect("geo", geo.create())
        b.connect("geo_precise", geo_precise.create())
        yield b


def make_model() -> Any:
    """A model defined in a function travels to the workers by value; it says where it ran."""
    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        import os as _os

        if "hello" in messages[-1]["content"]:
            return tb.Reply("hello", usage={"input": 1, "output": _os.getpid()})
        name = next(t["function"]["name"] for t in tools
                    if t["function"]["name"].endswith("-distance"))
        return tb.Reply({"tool": name, "arguments": {"from_city": "London", "to_city": "Paris"}},
                        usage={"input": 1, "output": _os.getpid()})

    return tb.ScriptedModel(reply, name="where")


def test_the_rows_match_one_machine_and_resume_asks_nothing(bench: tb.Bench, dask_client: Any,
                                                            tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    model = make_model()
    local = bench.evaluate(model, CASES)
    remote = bench.evaluate(model, CASES, cluster=dask_client, journal=path, concurrency=2)
    assert len(remote) == 62 and remote["passed"].all()
    same = ["case", "server", "repeat", "expected", "called", "tool_ok", "args_ok", "passed",
            "tokens_in", "error", "tokenizer"]
    assert remote[same].equals(local[same])
    workers = set(remote["tokens_out"])  # each row says which process asked
    assert os.getpid() not in workers and len(workers) == 2, workers
    assert set(local["tokens_out"]) == {os.getpid()}
    written = [json.loads(line)["row"] for line in path.read_text().splitlines()[1:]]
    assert sorted((r["case"], r["server"]) for r in written) == sorted(
        zip(remote["case"], remote["server"], strict=True))
    # resumed: a model that would fail every row is never asked
    refusing = tb.ScriptedModel(lambda m, t: 1 / 0, name="where")
    again = bench.evaluate(refusing, CASES, cluster=dask_client, journal=path, resume=True)
    assert again["error"].isna().all() and again[same].equals(remote[same])


def test_what_cannot_work_is_refused_before_anything_runs(bench: tb.Bench,
                                                          dask_client: Any) -> None:
    with pytest.raises(ValueError, match=r"runs steps=1 evals .* not steps=2"):
        bench.evaluate(make_model(), CASES, steps=2, cluster=dask_client)
    with pytest.raises(TypeError, match=r"cluster must be a dask\.distributed\.Client"):
        bench.evaluate(make_model(), CASES, cluster="tcp://127.0.0.1:8786")


class Unpicklable:
    """A model whose copy cannot be made."""

    name = "unpicklable"

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        return "hi"

    def __reduce__(self) -> Any:
        raise TypeError("this model stays home")


def test_a_model_that_cannot_travel_is_refused(bench: tb.Bench, dask_client: Any) -> None:
    with pytest.raises(ValueError, match=r"cannot be sent to the cluster.s workers.*stays home"):
        bench.evaluate(Unpicklable(), CASES[:3], servers="geo", cluster=dask_client)


def test_a_task_that_fails_gives_error_rows(bench: tb.Bench, dask_client: Any) -> None:
    """A failure outside the model's reply (here an exception ``ask`` does not catch, as a
    lost worker's ``KilledWorker`` would be): every row of the failed task says why, and
    nothing raises."""
    def breaks(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        class Broken(BaseException):
            pass

        raise Broken("the worker gave up")

    df = bench.evaluate(tb.ScriptedModel(breaks, name="breaks"), CASES[:3], servers="geo",
                        cluster=dask_client)
    assert len(df) == 3 and not df["passed"].any()
    assert all(e.startswith("the Dask task asking for this row failed: Broken: the worker "
                            "gave up") for e in df["error"]), list(df["error"])
