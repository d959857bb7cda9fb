"""``bench.evaluate`` (``toolbench/_bench/models/evaluate.py``) with ScriptedModel against the
real geo and geo_precise demo servers over stdio: their same-named ``distance`` tools are the
point (one case runs on both), ``bearing`` only geo_precise has. Plus the journal and resume
(a real child process killed mid-eval), the concurrency bound, and the loop kept free."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench import demo
from toolbench._bench.models.cases import CaseError
from toolbench.demo import geo, geo_precise

LONDON_PARIS = {"from_city": "London", "to_city": "Paris"}
CASES: list[dict[str, Any]] = [
    {"id": "lp", "prompt": "How far is London from Paris?",
     "expect": [{"tool": "distance", "arguments": LONDON_PARIS}]},
    {"id": "bearing", "prompt": "Which bearing from London to Paris?",
     "expect": [{"tool": "bearing", "arguments": LONDON_PARIS, "match": "exact"}]},
    {"id": "hello", "prompt": "Just say hello", "expect": [], "forbid": ["distance"]},
]


def offered(tools: list[dict[str, Any]], tool: str) -> str | None:
    """The provider-facing name of the first offered tool whose own name is ``tool``."""
    for spec in tools:
        name = spec["function"]["name"]
        if name.endswith(f"-{tool}"):
            return str(name)
    return None


def picker(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """Answers like a model would: a tool call on the first reply, then the answer. On geo
    (no bearing tool) it calls distance for the bearing question: a wrong choice."""
    if messages[-1]["role"] == "tool":
        return "done"
    prompt = messages[-1]["content"]
    if "hello" in prompt:
        return tb.Reply("hello", usage={"input": 11, "output": 2})
    tool = "bearing" if "bearing" in prompt and offered(tools, "bearing") else "distance"
    name = offered(tools, tool)
    return tb.Reply({"tool": name, "arguments": LONDON_PARIS}, usage={"input": 40, "output": 9})


@pytest.fixture(scope="module")
def bench() -> Iterator[tb.Bench]:
    config = demo.config()["mcpServers"]
    with tb.Bench() as b:
        for name in ("geo", "geo_precise"):
            entry = config[name]
            b.connect(name, [entry["command"], *entry["args"]], env=entry.get("env"))
        yield b


@pytest.mark.slow
def test_one_case_runs_on_every_server_with_the_tool(bench: tb.Bench) -> None:
    model = tb.ScriptedModel(picker, name="picker")
    df = bench.evaluate(model, CASES)
    assert list(df.columns) == [
        "case", "server", "repeat", "expected", "called", "tool_ok", "args_ok", "order_ok",
        "extra_calls", "forbidden", "passed", "steps", "tokens_in", "tokens_out", "model_ms",
        "tool_ms", "error", "run", "tokenizer"]
    rows = {(r["case"], r["server"]): r for r in df.to_dict("records")}
    # bearing: only geo_precise has it, so the case runs there only
    assert sorted(rows) == [("bearing", "geo_precise"), ("hello", "geo"),
                            ("hello", "geo_precise"), ("lp", "geo"), ("lp", "geo_precise")]
    assert rows[("lp", "geo")]["called"] == ["distance"] and rows[("lp", "geo")]["passed"]
    assert rows[("bearing", "geo_precise")]["passed"]
    assert rows[("hello", "geo")]["called"] == [] and rows[("hello", "geo")]["passed"]
    first = rows[("lp", "geo_precise")]
    assert (first["tokens_in"], first["tokens_out"], first["tokenizer"]) == (40, 9, "usage")
    assert first["steps"] == 1 and first["tool_ms"] == 0.0 and first["run"] is None
    assert len(bench.records) == 0  # steps=1 executes nothing
    scores = df.tb.scores()
    assert list(scores["pass_rate"]) == [1.0, 1.0]


@pytest.mark.slow
def test_a_wrong_choice_shows_in_scores_and_confusion(bench: tb.Bench) -> None:
    """On geo, where no bearing exists, a case expecting bearing cannot run; ask geo for a
    bearing by a distance-expecting case that forbids distance instead."""
    cases = [{"id": "x", "prompt": "Which bearing from London to Paris?",
              "expect": [], "forbid": ["distance"]},
             {"id": "lp", "prompt": "How far is London from Paris?",
              "expect": [{"tool": "distance", "arguments": {"from_city": "Paris"}}]}]
    df = bench.evaluate(tb.ScriptedModel(picker, name="picker"), cases, servers=["geo"],
                        repeats=2)
    assert list(df["repeat"]) == [0, 1, 0, 1] and set(df["server"]) == {"geo"}
    x = df[df["case"] == "x"].iloc[0]
    assert list(x["called"]) == ["distance"] and list(x["forbidden"]) == ["distance"]
    assert not x["passed"] and not x["tool_ok"] and x["extra_calls"] == 1
    lp = df[df["case"] == "lp"].iloc[0]
    assert lp["tool_ok"] and not lp["args_ok"] and not lp["passed"]  # London, not Paris
    scores = df.tb.scores().loc["geo"]
    assert scores["pass_rate"] == 0.0 and scores["precision"] == 0.5
    assert scores["recall"] == 1.0 and scores["args_accuracy"] == 0.0
    table = df.tb.confusion()
    assert table.loc["(none)", "distance"] == 2 and table.loc["distance", "distance"] == 2


@pytest.mark.slow
def test_steps_run_the_tools_through_the_bench(bench: tb.Bench) -> None:
    before = len(bench.records)
    df = bench.evaluate(tb.ScriptedModel(picker, name="picker"), CASES[:1], steps=3)
    assert len(df) == 2 and df["passed"].all()
    assert list(df["steps"]) == [2, 2]  # a tool call, then the answer
    assert (df["tool_ms"] > 0).all() and df["run"].notna().all()
    calls = bench.records.iloc[before:]
    assert len(calls) == 2 and calls["ok"].all()
    provenance = list(calls["provenance"])
    assert {p["case"] for p in provenance} == {"lp"} and {p["repeat"] for p in provenance} == {0}
    assert {p["run"] for p in provenance} == set(df["run"])
    assert len({p["eval"] for p in provenance}) == 1


@pytest.mark.slow
def test_case_and_argument_errors_name_the_case_and_the_key(bench: tb.Bench) -> None:
    model = tb.ScriptedModel(["hi"])
    with pytest.raises(CaseError, match=r"case 'd': key 'expect\[0\]': no server \(geo, "
                                        r"geo_precise\) has a tool named 'distnce'; did you "
                                        r"mean 'distance'"):
        bench.evaluate(model, [{"id": "d", "prompt": "p", "expect": ["distnce"]}])
    with pytest.raises(CaseError, match=r"case 'b': key 'expect\[0\]': no server \(geo\)"):
        bench.evaluate(model, [{"id": "b", "prompt": "p", "expect": ["bearing"]}],
                       servers="geo")
    with pytest.raises(CaseError, match=r"case 'f': key 'forbid\[0\]'"):
        bench.evaluate(model, [{"id": "f", "prompt": "p", "forbid": ["nope"]}])
    with pytest.raises(CaseError, match=r"case 'both': key 'expect': no server has all of"):
        bench.evaluate(model, [{"id": "both", "prompt": "p",
                                "expect": ["bearing", "world_map"]}])
    with pytest.raises(ValueError, match="unknown server 'gep'"):
        bench.evaluate(model, CASES, servers=["gep"])
    with pytest.raises(ValueError, match="invalid repeats 0"):
        bench.evaluate(model, CASES, repeats=0)
    with pytest.raises(ValueError, match="resume=True needs journal="):
        bench.evaluate(model, CASES, resume=True)
    with pytest.raises(TypeError, match="model is a function"):
        bench.evaluate("gpt-4o", CASES)


@pytest.mark.slow
def test_a_failing_model_is_a_row_not_an_exception(bench: tb.Bench) -> None:
    def flaky(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if "hello" in messages[-1]["content"]:
            raise RuntimeError("rate limited")
        if "bearing" in messages[-1]["content"]:
            return {"role": "assistant", "content": None}
        return picker(messages, tools)

    df = bench.evaluate(tb.ScriptedModel(flaky), CASES, servers="geo_precise")
    rows = {r["case"]: r for r in df.to_dict("records")}
    assert rows["hello"]["error"] == "the model raised RuntimeError: rate limited"
    assert "neither text nor tool calls" in rows["bearing"]["error"]
    assert not rows["hello"]["passed"] and rows["hello"]["steps"] == 0
    assert rows["lp"]["passed"] and rows["lp"]["error"] is None
    assert df.tb.scores().loc["geo_precise", "errors"] == 2


def _geo_bench() -> tb.Bench:
    bench = tb.Bench()
    bench.connect("geo", geo.create())
    bench.connect("geo_precise", geo_precise.create())
    return bench


class Counting:
    """A model that counts what it was asked, per (prompt, offered distance)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.name = "counting"

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        name = offered(tools, "distance")
        with self.lock:
            self.asked.append((messages[-1]["content"], str(name)))
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": name, "arguments": json.dumps(LONDON_PARIS)}}]}


def _many(count: int) -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "prompt": f"question {i}", "expect": ["distance"]}
            for i in range(count)]


def test_resume_asks_only_for_what_the_journal_lacks(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    with _geo_bench() as bench:
        first = Counting()
        df = bench.evaluate(first, _many(5), journal=path)
        assert len(first.asked) == 10 and df["passed"].all()
        again = Counting()
        resumed = bench.evaluate(again, _many(5), journal=path, resume=True)
        assert again.asked == []
        assert resumed.drop(columns=["model_ms"]).equals(df.drop(columns=["model_ms"]))
        # an edited case is asked again; so is a new repeat, and the rest are not
        edited = _many(5)
        edited[0]["prompt"] = "question zero, edited"
        bench.evaluate(again, edited, journal=path, resume=True, repeats=2)
        assert sorted(again.asked) == sorted(
            [("question zero, edited", "geo-distance"),
             ("question zero, edited", "geo_precise-distance")]
            + [(f"question {i}", s) for i in range(5)
               for s in ("geo-distance", "geo_precise-distance") if i][:10]
            + [("question zero, edited", s) for s in ("geo-distance", "geo_precise-distance")])
        # without resume=True nothing is read: everything is asked
        fresh = Counting()
        bench.evaluate(fresh, _many(5), journal=path)
        assert len(fresh.asked) == 10


def test_a_row_whose_model_failed_is_asked_again(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    with _geo_bench() as bench:
        failing = tb.ScriptedModel(lambda m, t: {"role": "assistant"}, name="counting")
        df = bench.evaluate(failing, _many(2), journal=path, servers="geo")
        assert df["error"].notna().all()
        again = Counting()
        bench.evaluate(again, _many(2), journal=path, servers="geo", resume=True)
        assert len(again.asked) == 2


def test_a_journal_that_is_not_one_is_refused_untouched(tmp_path: Path) -> None:
    with _geo_bench() as bench:
        journaled = tmp_path / "calls.sqlite"
        with tb.Bench(journal=journaled):
            pass
        before = journaled.read_bytes()
        with pytest.raises(ValueError, match=r"not a toolbench eval journal \(it is a SQLite "
                                             r"file: the bench's journal"):
            bench.evaluate(Counting(), _many(1), journal=journaled)
        assert journaled.read_bytes() == before
        cases = tmp_path / "cases.json"
        cases.write_text(json.dumps(_many(1)))
        with pytest.raises(ValueError, match="not a toolbench eval journal; it is left"):
            bench.evaluate(Counting(), cases, journal=cases)


def test_a_cut_line_is_skipped_with_a_warning_and_asked_again(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    with _geo_bench() as bench:
        bench.evaluate(Counting(), _many(3), journal=path, servers="geo", concurrency=1)
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-1]) + lines[-1][:25])  # a kill mid-write
        again = Counting()
        with pytest.warns(tb.JournalWarning, match="skipped 1 damaged line"):
            bench.evaluate(again, _many(3), journal=path, servers="geo", resume=True)
        assert again.asked == [("question 2", "geo-distance")]
        third = Counting()
        with pytest.warns(tb.JournalWarning, match="skipped 1 damaged line"):  # still there
            bench.evaluate(third, _many(3), journal=path, servers="geo", resume=True)
        assert third.asked == []  # the row after the cut line was read back whole


CHILD = textwrap.dedent("""
    import sys, time
    import toolbench as tb
    from toolbench.demo import geo, geo_precise

    def slow(messages, tools):
        time.sleep(0.02)
        name = next(t["function"]["name"] for t in tools
                    if t["function"]["name"].endswith("-distance"))
        return {"role": "assistant", "tool_calls": [{"id": "1", "function": {
            "name": name, "arguments": '{"from_city": "London", "to_city": "Paris"}'}}]}

    slow.name = "counting"
    cases = [{"id": f"c{i}", "prompt": f"question {i}", "expect": ["distance"]}
             for i in range(int(sys.argv[2]))]
    bench = tb.Bench()
    bench.connect("geo", geo.create())
    bench.connect("geo_precise", geo_precise.create())
    print("ready", flush=True)
    bench.evaluate(slow, cases, journal=sys.argv[1], concurrency=2, progress=False)
    print("finished", flush=True)
""")


def _finished_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text().splitlines()[1:]:
        with contextlib.suppress(ValueError):  # the line the kill cut
            rows.append(json.loads(line)["row"])
    return rows


@pytest.mark.slow
def test_a_killed_eval_resumes_without_asking_for_finished_rows(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    count = 100
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(count)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while len(_finished_rows(path)) < 20 if path.exists() else True:
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    finished = _finished_rows(path)
    assert 20 <= len(finished) < 2 * count  # killed mid-eval
    done = {(r["case"], r["server"]) for r in finished}
    model = Counting()
    with _geo_bench() as bench:
        df = bench.evaluate(model, _many(count), journal=path, resume=True)
    assert len(df) == 2 * count and df["passed"].all()
    asked = {(p.replace("question ", "c"), n.removesuffix("-distance")) for p, n in model.asked}
    assert len(model.asked) == 2 * count - len(done)  # each unfinished row asked once
    assert asked.isdisjoint(done)  # and no finished one asked again


def test_concurrency_bounds_the_asks_in_flight() -> None:
    in_flight = peak = 0

    async def tracked(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1
        return "no tool"

    with _geo_bench() as bench:
        df = bench.evaluate(tracked, [{"id": str(i), "prompt": "p"} for i in range(40)],
                            concurrency=3)
    assert len(df) == 80 and peak == 3


def test_the_loop_stays_free_for_a_neighbour_during_a_long_eval() -> None:
    """An async model that answers at once runs on the shared loop with no wait; the eval
    still yields after every row, so a neighbour on that same loop (a task that counts its
    turns, and real calls) runs between rows, not only before or after them."""
    from toolbench._loop import get_loop

    asked = 0
    reply = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "1", "type": "function",
         "function": {"name": "geo-distance", "arguments": json.dumps(LONDON_PARIS)}}]}

    async def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        nonlocal asked
        asked += 1
        return reply

    async def both(bench: tb.Bench) -> tuple[int, list[int], list[int]]:
        assert get_loop().in_loop_thread()  # the shared loop, where every call runs
        done = asyncio.Event()
        calls_at: list[int] = []  # rows asked when each neighbour call returned
        ticks_at: list[int] = []

        async def neighbour() -> None:
            while not done.is_set():
                await bench.acall("geo_precise-distance", LONDON_PARIS)
                calls_at.append(asked)

        async def ticker() -> None:
            while not done.is_set():
                ticks_at.append(asked)
                await asyncio.sleep(0)

        tasks = [asyncio.create_task(neighbour()), asyncio.create_task(ticker())]
        df = await bench.aevaluate(model, _many(500), servers="geo")
        done.set()
        await asyncio.gather(*tasks)
        return len(df), calls_at, ticks_at

    with _geo_bench() as bench:
        rows, calls_at, ticks_at = get_loop().run(both, bench)
    assert rows == 500 and asked == 500
    between = [n for n in ticks_at if 0 < n < 500]
    assert len(set(between)) >= 500 // 4 - 1  # a turn at least every `concurrency` rows
    assert any(0 < n < 500 for n in calls_at), calls_at  # calls completed mid-eval


@pytest.mark.slow
def test_an_eval_of_a_third_party_server_with_real_calls() -> None:
    """mcp-server-time (the test extra), over stdio: steps=2 runs the model's call for real,
    and a wrong timezone is a wrong argument, not a wrong tool."""
    time_server = Path(sys.executable).parent / "mcp-server-time"
    if not time_server.exists():
        pytest.skip("mcp-server-time is not installed in this environment")

    def clock(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if messages[-1]["role"] == "tool":
            return f"It is {json.loads(messages[-1]['content'].splitlines()[-1])['datetime']}"
        zone = "Asia/Tokyo" if "Tokyo" in messages[-1]["content"] else "Europe/Paris"
        return {"tool": offered(tools, "get_current_time"), "arguments": {"timezone": zone}}

    cases = [{"id": "tokyo", "prompt": "What time is it in Tokyo?",
              "expect": [{"tool": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}]},
             {"id": "lima", "prompt": "What time is it in Lima?",
              "expect": [{"tool": "get_current_time", "arguments": {"timezone": "America/Lima"}}],
              "forbid": ["convert_time"]}]
    with tb.Bench() as bench:
        bench.connect("time", [str(time_server), "--local-timezone", "UTC"])
        df = bench.evaluate(tb.ScriptedModel(clock, name="clock"), cases, steps=2)
        records = bench.records
    rows = {r["case"]: r for r in df.to_dict("records")}
    assert rows["tokyo"]["passed"] and rows["tokyo"]["steps"] == 2
    assert not rows["lima"]["passed"] and rows["lima"]["tool_ok"] and not rows["lima"]["args_ok"]
    assert list(records["ok"]) == [True, True] and set(records["server"]) == {"time"}
    assert {r["timezone"] for r in records["arguments"]} == {"Asia/Tokyo", "Europe/Paris"}


def test_a_journal_that_stops_taking_rows_costs_durability_not_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolbench._bench.models.eval_journal import EvalJournal

    path = tmp_path / "eval.jsonl"
    written = EvalJournal._append

    def full_disk(self: EvalJournal, line: str) -> None:
        if '"row"' in line and "c1" in line:
            raise OSError(28, "No space left on device")
        written(self, line)

    monkeypatch.setattr(EvalJournal, "_append", full_disk)
    with _geo_bench() as bench:
        with pytest.warns(tb.JournalWarning, match=r"1 of 3 rows could not be written "
                                                   r"\(OSError: \[Errno 28\] No space"):
            df = bench.evaluate(Counting(), _many(3), journal=path, servers="geo")
        assert len(df) == 3 and df["passed"].all()  # every row is in the result
        again = Counting()
        with pytest.warns(tb.JournalWarning, match="1 of 3 rows"):  # the disk is still full
            bench.evaluate(again, _many(3), journal=path, servers="geo", resume=True)
        assert again.asked == [("question 1", "geo-distance")]  # only the unwritten one
    with pytest.raises(ValueError, match=r"eval journal '/dev/full' cannot be used"):
        EvalJournal("/dev/full", load=False)


def test_a_tool_not_offered_and_arguments_that_are_not_json_score_as_such() -> None:
    """On geo_precise, a call named geo-distance (another server's tool) is not a call of
    geo_precise's distance; arguments that are not JSON never match."""
    def reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if "other" in messages[-1]["content"]:
            name, arguments = "geo-distance", json.dumps(LONDON_PARIS)
        else:
            name, arguments = "geo_precise-distance", "{from_city: London"
        return {"role": "assistant", "tool_calls": [
            {"id": "1", "function": {"name": name, "arguments": arguments}}]}

    cases = [{"id": "other", "prompt": "other server", "expect": ["distance"]},
             {"id": "broken", "prompt": "broken arguments",
              "expect": [{"tool": "distance", "arguments": {"from_city": "London"}}]}]
    with _geo_bench() as bench:
        df = bench.evaluate(reply, cases, servers="geo_precise")
    rows = {r["case"]: r for r in df.to_dict("records")}
    assert rows["other"]["called"] == ["geo-distance (not offered)"]
    assert not rows["other"]["tool_ok"] and rows["other"]["extra_calls"] == 1
    assert rows["broken"]["called"] == ["distance"] and rows["broken"]["tool_ok"]
    assert not rows["broken"]["args_ok"] and not rows["broken"]["passed"]
    assert rows["broken"]["error"] is None  # a bad argument is a wrong answer, not an error


@pytest.mark.slow
@pytest.mark.parametrize("steps", [1, 2])
def test_an_eval_never_offers_a_servers_secret(steps: int) -> None:
    """A server that names its tool after a secret: an eval offers the model the redacted
    name (as ``bench.run`` and ``tool_specs`` do), and the call still reaches the tool."""
    secret = "Zq7SecretToolName"
    server = [sys.executable, str(Path(__file__).parent / "servers" / "secret_named_server.py")]
    offered_names: list[str] = []

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        offered_names.append(json.dumps(tools))
        if messages[-1]["role"] == "tool":
            return "done"
        return {"tool_calls": [{"id": "a", "function": {
            "name": tools[0]["function"]["name"], "arguments": '{"i": 3}'}}]}

    with tb.Bench() as secretive:
        secretive.connect("s", server, env={"TOOLBENCH_TEST_SECRET": secret})
        df = secretive.evaluate(model, [{"id": "one", "prompt": "get 3",
                                         "expect": [f"get-{secret}"]}], steps=steps)
        records = secretive.records
    assert offered_names and not [text for text in offered_names if secret in text]
    assert df["passed"].tolist() == [True]
    if steps > 1:
        assert records["ok"].tolist() == [True]


def test_tokens_of_a_run_are_counted_off_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that reports no usage: a ``steps>1`` row's tokens are counted (its whole
    conversation, once per reply: megabytes for long results) in a worker thread, never on
    the shared loop, where a neighbour's call would wait for it."""
    from toolbench._bench.report import tokens

    threads: list[str] = []

    class Recording:
        name = "recording"

        def count(self, text: str) -> int:
            threads.append(threading.current_thread().name)
            return len(text)

    monkeypatch.setattr(tokens, "counter", lambda name=None: Recording())
    loop_thread: list[str] = []

    async def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        loop_thread.append(threading.current_thread().name)
        if messages[-1]["role"] == "tool":
            return "done"
        return {"tool_calls": [{"id": "a", "function": {
            "name": offered(tools, "distance"), "arguments": json.dumps(LONDON_PARIS)}}]}

    with tb.Bench() as bench:
        bench.connect("geo", geo.create())
        df = bench.evaluate(model, CASES[:1], steps=2)
    assert df["tokenizer"].tolist() == ["recording"] and df["tokens_in"].iloc[0] > 0
    assert threads and loop_thread[0] not in threads
