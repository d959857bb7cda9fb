"""``bench.run``: a model uses real servers' tools over stdio, every call through the bench.

The servers are the bundled geo demos, the test echo server, and ``mcp-server-time`` (a
third-party server from PyPI, installed by the test extra). The models are ScriptedModels and
small functions: deterministic, offline. Every bad input of issue 44 that concerns a run is
here: a model that raises, hangs, loops, answers nothing; a tool not offered or of another
server; arguments not JSON, failing the schema, or 50 MB.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

import toolbench as tb
from toolbench._bench.models.run import STEP_COLUMNS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
ECHO = [sys.executable, str(ROOT / "tests" / "servers" / "echo_server.py")]
LONDON_PARIS = {"from_city": "London", "to_city": "Paris"}


def _time_server() -> str:
    found = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent)) or \
        shutil.which("mcp-server-time")
    assert found, "mcp-server-time is not installed: pip install -e '.[test]'"
    return found


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tb.Bench]:
    journal = tmp_path_factory.mktemp("run") / "calls.sqlite"
    with tb.Bench(journal=journal, timeout=30) as made:
        made.connect("geo", [sys.executable, "-m", "toolbench.demo.geo"])
        made.connect("geo_precise", [sys.executable, "-m", "toolbench.demo.geo_precise"])
        made.connect("echo", ECHO)
        made.connect("time", [_time_server(), "--local-timezone", "UTC"])
        yield made


def of_run(bench: tb.Bench, run: tb.Run) -> list[dict[str, Any]]:
    """This run's records as the bench keeps them."""
    records = bench.records
    mine = records[records["provenance"].map(lambda p: (p or {}).get("run") == run.id)]
    return list(mine.to_dict("records"))


# -- a run that goes well -----------------------------------------------------------------
def test_a_run_calls_through_the_bench_and_hands_results_back(bench: tb.Bench) -> None:
    model = tb.ScriptedModel([
        tb.Reply({"tool": "geo-distance", "arguments": LONDON_PARIS},
                 usage={"input": 100, "output": 10}),
        tb.Reply("About 344 km.", usage={"input": 150, "output": 5})], name="script")
    before = len(bench.records)
    run = bench.run(model, "How far is Paris from London?", servers="geo",
                    system="Use the tools.", provenance={"case": "c1"})
    assert (run.stopped, run.error, run.text) == ("answered", None, "About 344 km.")
    assert run.model == "script" and run.usage == {"input": 250, "output": 15}
    assert [m["role"] for m in run.messages] == ["system", "user", "assistant", "tool",
                                                 "assistant"]
    told = run.messages[3]
    assert told["tool_call_id"] == run.messages[2]["tool_calls"][0]["id"]
    assert json.loads(told["content"]) == {"result": 343.557}

    steps = run.steps
    assert list(steps.columns) == list(STEP_COLUMNS)
    assert list(steps["kind"]) == ["model", "tool", "answer"]
    assert list(steps["step"]) == [1, 1, 2]
    assert list(steps["tokens"].fillna(-1)) == [110, -1, 155]
    assert steps.iloc[1]["tool"] == "geo-distance" and bool(steps.iloc[1]["ok"])

    assert len(bench.records) == before + 1
    (record,) = of_run(bench, run)
    assert record["name"] == "geo-distance" and record["ok"]
    assert record["provenance"]["step"] == 1 and record["provenance"]["model"] == "script"
    assert record["provenance"]["case"] == "c1"
    assert record["provenance"]["max_result_chars"] == 20_000
    assert list(run.calls["call_id"]) == [record["call_id"]]
    assert "About 344 km." in repr(run) and "geo-distance" in repr(run)


def test_an_async_model_and_await_arun(bench: tb.Bench) -> None:
    async def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if messages[-1]["role"] == "user":
            names = sorted(t["function"]["name"] for t in tools)
            assert names == ["geo-city", "geo_precise-city"]  # tools= narrows by own name
            return {"content": None, "tool_calls": [{"id": "a", "function": {
                "name": "geo_precise-city", "arguments": json.dumps({"name": "Lima"})}}]}
        return {"content": "found it"}

    run = asyncio.run(bench.arun(model, "Where is Lima?", tools=["city"]))
    assert run.stopped == "answered" and run.text == "found it"
    assert run.model.endswith("model") and run.rows[1].ok
    assert "Lima" in run.messages[-2]["content"]


def test_a_third_party_server_mcp_server_time(bench: tb.Bench) -> None:
    model = tb.ScriptedModel([{"tool": "time-get_current_time",
                               "arguments": {"timezone": "UTC"}}, "It is now."])
    run = bench.run(model, "What time is it in UTC?", servers=["time"])
    assert run.stopped == "answered" and run.rows[1].ok
    assert json.loads(run.messages[2]["content"])["timezone"] == "UTC"
    assert of_run(bench, run)[0]["server"] == "time"


def test_results_are_capped_and_images_described(bench: tb.Bench) -> None:
    model = tb.ScriptedModel([[{"tool": "geo-cities"}, {"tool": "geo-world_map"}], "ok"])
    run = bench.run(model, "cities and a map", servers="geo", max_result_chars=100)
    cities, world_map = run.messages[2]["content"], run.messages[3]["content"]
    shown, note = cities.split("\n[cut at 100 characters (max_result_chars)")
    assert len(shown) == 100 and note == "; the bench's record keeps the whole result]"
    assert "[image: image/png" in world_map and "not shown to the model" in world_map
    assert "base64" not in world_map and len(world_map) < 200
    full = next(r for r in of_run(bench, run) if r["name"] == "geo-cities")
    assert json.dumps(full["structured"], ensure_ascii=False).startswith(shown)  # kept whole
    assert full["provenance"]["max_result_chars"] == 100


# -- bad input: the model ---------------------------------------------------------------------
def test_a_model_that_raises_ends_the_run_and_keeps_what_was_recorded(bench: tb.Bench) -> None:
    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if messages[-1]["role"] == "user":
            return {"tool_calls": [{"id": "1", "function": {
                "name": "geo-distance", "arguments": json.dumps(LONDON_PARIS)}}]}
        raise ConnectionError("provider down")

    run = bench.run(model, "go")
    assert run.stopped == "error"
    assert run.error == "the model raised ConnectionError: provider down"
    assert list(run.steps["kind"]) == ["model", "tool", "error"]
    assert [r["ok"] for r in of_run(bench, run)] == [True]


def test_a_model_that_hangs_past_model_timeout_ends_the_run(bench: tb.Bench) -> None:
    release = threading.Event()

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        release.wait(60)
        return "too late"

    try:
        run = bench.run(model, "go", model_timeout=0.5)
    finally:
        release.set()
    assert (run.stopped, run.error) == ("error", "no reply within 0.5 s (model_timeout)")
    assert run.rows[-1].kind == "error" and run.text is None
    assert (run.rows[-1].ms or 0) >= 400  # about the time the model was given


def test_a_slow_model_does_not_hold_up_the_shared_loop(bench: tb.Bench) -> None:
    """While a sync model thinks (in a worker thread), another call goes through."""
    thinking, release = threading.Event(), threading.Event()

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        thinking.set()
        release.wait(60)
        return "done"

    outcome: list[tb.Run] = []
    worker = threading.Thread(target=lambda: outcome.append(bench.run(model, "think")))
    worker.start()
    try:
        assert thinking.wait(30)
        assert bench.call("echo-echo", text="meanwhile").text == "meanwhile"
        assert worker.is_alive()  # the run is still waiting for its model
    finally:
        release.set()
        worker.join(60)
    assert outcome[0].text == "done"


def test_a_model_that_loops_stops_at_max_steps(bench: tb.Bench) -> None:
    model = tb.ScriptedModel(lambda messages, tools: {"tool": "echo-echo",
                                                      "arguments": {"text": "again"}})
    run = bench.run(model, "loop", servers="echo", max_steps=3)
    assert (run.stopped, run.error, run.text) == ("max_steps", None, None)
    assert list(run.steps["kind"]) == ["model", "tool"] * 3
    assert len(of_run(bench, run)) == 3 and run.tool_calls == 3


def test_a_reply_with_neither_text_nor_tool_calls_ends_the_run(bench: tb.Bench) -> None:
    run = bench.run(tb.ScriptedModel([{"role": "assistant", "content": None}]), "go")
    assert run.stopped == "error"
    assert run.error is not None and run.error.startswith(
        "the reply has neither text nor tool calls: {'role': 'assistant', 'content': None}")


def test_a_script_that_runs_out_ends_the_run_with_its_reason(bench: tb.Bench) -> None:
    run = bench.run(tb.ScriptedModel([{"tool": "echo-echo", "arguments": {"text": "a"}}],
                                     name="short"), "go", servers="echo")
    assert run.stopped == "error" and "'short' has no reply left" in (run.error or "")
    assert len(of_run(bench, run)) == 1


def test_a_failed_run_leaves_every_record_in_the_journal(tmp_path: Path) -> None:
    journal = tmp_path / "calls.sqlite"

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if messages[-1]["role"] == "user":
            return {"tool_calls": [
                {"id": "1", "function": {"name": "geo-distance",
                                         "arguments": json.dumps(LONDON_PARIS)}},
                {"id": "2", "function": {"name": "geo-teleport", "arguments": "{}"}},
                {"id": "3", "function": {"arguments": "{}"}},
                {"id": "4", "function": {"name": "x" * 5000, "arguments": "{}"}}]}
        raise RuntimeError("the provider hung up")

    with tb.Bench(journal=journal) as first:
        first.connect("geo", [sys.executable, "-m", "toolbench.demo.geo"])
        run = first.run(model, "go")
    assert run.stopped == "error" and "RuntimeError" in (run.error or "")
    with tb.Bench(journal=journal) as reopened:
        kept = reopened.records
    mine = kept[kept["provenance"].map(lambda p: (p or {}).get("run") == run.id)]
    assert list(mine["name"])[:3] == ["geo-distance", "geo-teleport", "(no name)"]
    assert len(list(mine["name"])[3]) < 300
    assert list(mine["ok"]) == [True, False, False, False]
    assert set(list(mine["error_type"])[1:]) == {"Refused"}


# -- bad input: the tool calls ----------------------------------------------------------------
def refused_run(bench: tb.Bench, reply: Any, **options: Any) -> tuple[tb.Run, dict[str, Any]]:
    """A run whose first reply is refused; the model then answers (the run goes on)."""
    run = bench.run(tb.ScriptedModel([reply, "I could not."]), "go", **options)
    assert run.stopped == "answered" and run.text == "I could not."
    (record,) = of_run(bench, run)
    assert record["ok"] is False and record["error_type"] == "Refused"
    assert record["disposition"] == "did_not_happen"
    assert run.rows[1].kind == "refused" and not run.rows[1].ok
    assert run.messages[2]["role"] == "tool"
    assert run.messages[2]["content"].startswith("Error (Refused, not sent): ")
    return run, record


def test_a_made_up_tool_is_refused_recorded_and_told(bench: tb.Bench) -> None:
    run, record = refused_run(bench, {"tool": "geo-teleport", "arguments": {"to": "Mars"}},
                              servers="geo")
    assert record["server"] == "(none)" and record["name"] == "geo-teleport"
    assert record["arguments"] == {"to": "Mars"}
    told = run.messages[2]["content"]
    assert "tool 'geo-teleport' was not offered to the model; offered: geo-cities" in told
    assert record["error"] == "tool 'geo-teleport' was not offered to the model"


def test_another_servers_tool_is_refused_and_never_sent(bench: tb.Bench) -> None:
    run, record = refused_run(bench, {"tool": "geo_precise-distance",
                                      "arguments": LONDON_PARIS}, servers="geo")
    assert record["server"] == "geo_precise" and math.isnan(record["latency_ms"])
    assert "a tool of server 'geo_precise', which this run does not offer" in \
        run.messages[2]["content"]


def test_arguments_that_are_not_json_are_refused(bench: tb.Bench) -> None:
    reply = {"content": None, "tool_calls": [{"id": "x", "function": {
        "name": "geo-distance", "arguments": "{from_city: London"}}]}
    run, record = refused_run(bench, reply, servers="geo")
    assert record["server"] == "geo" and record["arguments"] == {
        "_invalid": "{from_city: London"}
    assert "cannot be used: not JSON" in run.messages[2]["content"]


def test_arguments_that_fail_the_schema_are_refused_by_the_bench(bench: tb.Bench) -> None:
    run, record = refused_run(bench, {"tool": "geo-distance", "arguments": {"from_city": 7}},
                              servers="geo")
    assert "'to_city' is a required property" in record["error"]
    assert "'to_city' is a required property" in run.messages[2]["content"]


def test_a_50_mb_argument_is_refused_and_not_kept_whole(bench: tb.Bench) -> None:
    huge = json.dumps({"text": "x" * 50_000_000})
    reply = {"content": None, "tool_calls": [{"id": "big", "function": {
        "name": "echo-echo", "arguments": huge}}]}
    run, record = refused_run(bench, reply, servers="echo")
    assert "over 1,000,000 bytes (50,000,012 bytes)" in record["error"]
    assert len(record["arguments"]["_invalid"]) < 2_000
    assert len(json.dumps(run.messages)) < 2_000_000


def test_a_changed_pinned_tool_is_refused_to_the_model_as_to_a_call(tmp_path: Path) -> None:
    """Pins apply to a run's calls: a tool changed under its pin is refused, never sent."""
    import time
    import warnings

    from servers import rugpull_server

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tb.PinWarning)  # the change is caused on purpose
        with tb.Bench(pins=tmp_path / "pins.json", timeout=10) as pinned:
            pinned.connect("s", rugpull_server.create(tmp_path / "state.json"))
            pinned.call("s-flip", version=2)
            deadline = time.monotonic() + 10
            while pinned.catalog().set_index("tool").loc["echo", "pin"] != "changed":
                assert time.monotonic() < deadline, "the changed tool was never re-listed"
                time.sleep(0.05)
            run = pinned.run(tb.ScriptedModel([{"tool": "s-echo", "arguments": {"text": "x"}},
                                               "blocked"]), "echo x", servers="s")
    assert run.stopped == "answered" and run.rows[1].kind == "refused"
    (record,) = of_run(pinned, run)
    assert record["error_type"] == "Refused" and record["disposition"] == "did_not_happen"
    assert run.messages[2]["content"].startswith("Error (Refused, not sent): ")
    assert "v2" not in run.messages[2]["content"]


def test_a_run_never_shows_a_servers_secret(tmp_path: Path) -> None:
    """A server that names its tool after a secret: the model is offered a redacted name
    that still reaches the tool, and neither the transcript, the steps, the records nor the
    HTML show the secret, even when the model writes the real name itself."""
    secret = "Zq7SecretToolName"
    server = [sys.executable, str(ROOT / "tests" / "servers" / "secret_named_server.py")]
    offered: list[str] = []

    def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        if messages[-1]["role"] != "user":
            return "done"
        offered.append(json.dumps(tools))
        name = tools[0]["function"]["name"]
        return {"tool_calls": [
            {"id": "a", "function": {"name": name, "arguments": '{"i": 7}'}},
            {"id": "b", "function": {"name": f"s-get-{secret}", "arguments": '{"i": 8}'}}]}

    with tb.Bench(journal=tmp_path / "calls.sqlite") as secretive:
        secretive.connect("s", server, env={"TOOLBENCH_TEST_SECRET": secret})
        run = secretive.run(model, "get 7")
        records = of_run(secretive, run)
    assert run.stopped == "answered" and secret not in offered[0]
    assert [r["ok"] for r in records] == [True, False]
    assert json.loads(run.messages[2]["content"]) == {"i": 7}
    assert "was not offered" in run.messages[3]["content"]
    shown = [json.dumps(run.messages[2:]), run.steps.to_json(), json.dumps(records, default=str),
             run._repr_html_(), repr(run)]
    assert not [text for text in shown if secret in text]


# -- bad input: the caller's own arguments raise ---------------------------------------------------
@pytest.mark.parametrize(("options", "error", "match"), [
    ({"max_steps": 0}, ValueError, "max_steps is a whole number from 1 to 1,000"),
    ({"max_steps": True}, ValueError, "max_steps"),
    ({"model_timeout": -1}, ValueError, "model_timeout is a positive"),
    ({"max_result_chars": 0}, ValueError, "max_result_chars"),
    ({"servers": ["nowhere"]}, ValueError, "'nowhere' is not on the bench"),
    ({"tools": ["teleport"]}, ValueError, "no offered server has a tool 'teleport'"),
    ({"system": 3}, TypeError, "system is a str"),
    ({"provenance": {1: 2}}, TypeError, "provenance keys"),
])
def test_bad_options_raise_naming_the_value(bench: tb.Bench, options: dict[str, Any],
                                            error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        bench.run(tb.ScriptedModel(["x"]), "go", **options)


@pytest.mark.parametrize("prompt", ["", "  ", [], [{"content": "no role"}], 42])
def test_a_bad_prompt_raises(bench: tb.Bench, prompt: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="prompt"):
        bench.run(tb.ScriptedModel(["x"]), prompt)


def test_a_model_that_is_not_callable_raises(bench: tb.Bench) -> None:
    with pytest.raises(TypeError, match=r"model is a function\(messages, tools\)"):
        bench.run("gpt-4o", "go")  # type: ignore[arg-type]


# -- display ----------------------------------------------------------------------------------
def test_the_runs_html_escapes_what_the_model_and_the_server_wrote(bench: tb.Bench) -> None:
    hostile = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    model = tb.ScriptedModel([[{"tool": "echo-echo", "arguments": {"text": hostile}},
                               {"tool": f"<b>{hostile}</b>"}], f"answer {hostile}"])
    run = bench.run(model, f"prompt {hostile}", servers="echo")
    page = run._repr_html_()
    assert "<script>" not in page and "<img src=x" not in page and "<b><img" not in page
    assert page.count("&lt;script&gt;alert(2)&lt;/script&gt;") >= 4  # prompt, card, result, answer
    assert "toolbench-run" in page and "refused, not sent" in page
    bundle = run._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"} and "answered" in bundle["text/plain"]
    assert run._ipython_display_ is None  # no MCP Apps view: the mimebundle shows it


# -- in a real kernel ---------------------------------------------------------------------------
def test_a_run_in_a_jupyter_kernel_shows_its_transcript_records_the_cell_and_stops() -> None:
    from test_bench_kernel import run_notebook, text_of

    geo = [sys.executable, "-m", "toolbench.demo.geo"]
    cells = [
        f"import toolbench as tb\nbench = tb.Bench()\nbench.connect('geo', {geo!r})\n"
        "model = tb.ScriptedModel([{'tool': 'geo-distance', 'arguments': "
        f"{LONDON_PARIS!r}}}, 'About <b>344</b> km.'])",
        "run = bench.run(model, 'How far is Paris from London?')\nrun",
        "again = await bench.arun(model, 'And again?')\n"
        "last = bench.records.iloc[-1]['provenance']\n"
        "print('async', again.stopped, last['run'] == again.id, last['cell'], last['step'])",
        "import time\ndef slow(messages, tools):\n    time.sleep(6)\n    return 'late'\n"
        "bench.run(slow, 'think hard')",  # interrupted after 2 s
        "print('alive', bench.run(model, 'once more').stopped)",
        "bench.close()\nprint('closed')",
    ]
    nb = run_notebook(cells, interrupt_cell=3)
    errors = {i: o for i, c in enumerate(nb) for o in c.outputs
              if o.get("output_type") == "error"}
    assert set(errors) == {3} and errors[3]["ename"] == "KeyboardInterrupt", errors
    (shown,) = [o for o in nb[1].outputs if o.get("output_type") == "execute_result"]
    page = shown["data"]["text/html"]
    assert "toolbench-run" in page and "geo-distance" in page and "343.557" in page
    assert "About &lt;b&gt;344&lt;/b&gt; km." in page and "<b>344</b>" not in page
    assert "answered" in shown["data"]["text/plain"]
    assert text_of(nb[2]).split() == ["async", "answered", "True", "3", "1"]
    assert text_of(nb[4]).split() == ["alive", "answered"]  # the model's thread was left
    assert "closed" in text_of(nb[5])


def test_a_runs_mcp_apps_view_is_shown_in_the_kernel_above_its_card(tmp_path: Path) -> None:
    from test_bench_kernel import run_notebook

    view = [sys.executable, str(ROOT / "tests" / "servers" / "view_server.py"),
            str(tmp_path / "state.json")]
    cells = [
        f"import toolbench as tb\nbench = tb.Bench()\nbench.connect('flip', {view!r})\n"
        "model = tb.ScriptedModel([[{'tool': 'flip-plain'}, {'tool': 'flip-show', "
        "'arguments': {'text': '<u>hi</u>'}}], 'Shown.'])",
        "run = bench.run(model, 'show it')\nrun",
        "bench.close()",
    ]
    nb = run_notebook(cells)
    errors = [o for c in nb for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    kinds = ["view" if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
             else "html" if "text/html" in o.get("data", {}) else o.get("output_type")
             for o in nb[1].outputs]
    assert kinds == ["html", "view", "html"], kinds
    before, after = (nb[1].outputs[i]["data"]["text/html"] for i in (0, 2))
    assert "flip-plain" in before and "flip-show" in after
    assert "&lt;u&gt;hi&lt;/u&gt;" in after and "<u>hi</u>" not in before + after


def test_a_result_nested_past_the_parsers_limit_is_handed_back_not_raised() -> None:
    """A server's text of 5,000 nested brackets beside structured content: the run hands it
    back (cut to the cap) instead of raising the JSON parser's RecursionError."""
    server = MCPServer("deep")
    nested = "[" * 5000 + "]" * 5000

    @server.tool()
    def deep() -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=nested)],
                              structuredContent={"a": 1})

    with tb.Bench() as bench:
        bench.connect("d", server)
        run = bench.run(tb.ScriptedModel([{"tool": "d-deep"}, "ok"]), "go")
    assert run.stopped == "answered" and run.rows[1].ok
    assert run.messages[2]["content"].startswith('{"a": 1}\n[[[')
