"""Prompts on the bench: the table, prefixed names, transcripts, one history, compare and map.

In-process ``MCPServer``s for each behaviour, the bundled ``beyond`` demo over real stdio and
server-everything (npm) over stdio; the process tests are ``slow``.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path
from typing import Any

import mcp_types as t
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.shared.exceptions import MCPError
from servers import everything

import toolbench as tb

HOSTILE = "<script>alert('x')</script><b onmouseover=alert(1)>bold</b>"


def prompt_server(label: str, fetched: list[str] | None = None, *,
                  tools: bool = True) -> MCPServer:
    srv = MCPServer(f"prompts-{label}")

    @srv.prompt(name="greet", title="Greet", description=f"Greets someone {HOSTILE}")
    def greet(name: str, mood: str = "happy") -> list[Message]:
        if fetched is not None:
            fetched.append(name)
        return [UserMessage(f"Say hello to {name} ({mood}) from {label}"),
                AssistantMessage(f"Hello {name}! {HOSTILE}")]

    @srv.prompt(name="long_chat")
    def long_chat(turns: str) -> list[Message]:
        return [UserMessage(f"turn {i} " + "w" * 1000) for i in range(int(turns))]

    @srv.prompt(name="strict")
    def strict(code: str) -> str:
        if code != "ok":
            raise MCPError(t.INVALID_PARAMS, f"code {code!r} is not accepted")
        return "accepted"

    if tools:
        @srv.tool()
        def noop() -> str:
            return "ok"

    return srv


@pytest.fixture
def bench() -> Any:
    with tb.Bench(timeout=10) as b:
        b.connect("p1", prompt_server("p1"))
        b.connect("p2", prompt_server("p2"))
        yield b


def test_prompts_is_a_frame_with_prefixed_names(bench: Any) -> None:
    df = bench.prompts()
    assert list(df.columns) == ["name", "server", "prompt", "title", "description",
                                "arguments"]
    assert set(df["name"]) == {"p1-greet", "p1-long_chat", "p1-strict", "p2-greet",
                               "p2-long_chat", "p2-strict"}
    greet = df[df["name"] == "p2-greet"].iloc[0]
    assert (greet["server"], greet["prompt"], greet["title"]) == ("p2", "greet", "Greet")
    assert [(a["name"], a.get("required")) for a in greet["arguments"]] == [
        ("name", True), ("mood", False)]
    assert list(bench.prompts("p1", search="GREET")["name"]) == ["p1-greet"]


def test_a_prompt_is_a_transcript_with_every_string_escaped(bench: Any) -> None:
    result = bench.prompt("p1-greet", name="Ada")
    assert isinstance(result, tb.PromptResult)
    assert (result.name, result.prompt, result.server) == ("p1-greet", "greet", "p1")
    assert [m["role"] for m in result.messages] == ["user", "assistant"]
    assert result.messages[1]["content"]["text"] == f"Hello Ada! {HOSTILE}"  # kept as sent
    assert result.text.startswith("user: Say hello to Ada (happy) from p1")
    page = result._repr_html_()
    assert "<script>" not in page and "<b onmouseover" not in page
    assert "&lt;script&gt;" in page and "&lt;b onmouseover=alert(1)&gt;" in page
    assert page.count("class='toolbench-message'") == 2
    assert ">user</b>" in page and ">assistant</b>" in page
    with_mapping = bench.prompt("p2-greet", {"name": "Bo", "mood": "calm"})
    assert "(calm) from p2" in with_mapping.text


def test_a_long_transcript_is_capped(bench: Any) -> None:
    result = bench.prompt("p1-long_chat", turns="300")
    assert len(result.messages) == 300
    page = result._repr_html_()
    assert "more messages]" in page and len(page) < 50_000
    assert page.count("class='toolbench-message'") < 60  # the budget, not 200 messages


def test_prompt_arguments_are_strings_and_a_bad_one_is_never_sent() -> None:
    fetched: list[str] = []
    with tb.Bench(timeout=10) as bench:
        bench.connect("p", prompt_server("p", fetched))
        with pytest.raises(tb.Refused, match="arguments are strings") as info:
            bench.prompt("p-greet", name=3)  # type: ignore[arg-type]
        assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
        assert fetched == []
        row = bench.records.iloc[-1]
        assert (row["kind"], row["name"], row["tool"], row["disposition"]) == (
            "prompt", "p-greet", "greet", "did_not_happen")
        assert row["arguments"] == {"name": 3}
        with pytest.raises(TypeError, match="not both"):
            bench.prompt("p-greet", {"name": "a"}, name="b")


def test_unknown_and_ambiguous_names(bench: Any) -> None:
    with pytest.raises(tb.Unreachable, match="did you mean 'p1-greet'"):
        bench.prompt("p1-gret", name="x")
    with tb.Bench(timeout=10) as plain:
        plain.connect("a", prompt_server("a"), namespace=None)
        plain.connect("b", prompt_server("b"), namespace="bee")
        assert "greet" in set(plain.prompts()["name"])
        assert plain.prompt("greet", name="z").server == "a"
        assert plain.prompt("bee-greet", name="z").server == "b"
        plain.connect("c", prompt_server("c", tools=False), namespace=None)
        with pytest.raises(ValueError, match=r"offered by \['a', 'c'\]"):
            plain.prompt("greet", name="z")


def test_a_server_error_reply_is_refused_and_recorded(bench: Any) -> None:
    with pytest.raises(tb.Refused, match="code 'no' is not accepted") as info:
        bench.prompt("p1-strict", code="no")
    assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
    assert bench.prompt("p1-strict", code="ok").text == "user: accepted"
    rows = bench.records
    assert list(rows["kind"]) == ["prompt", "prompt"] and list(rows["ok"]) == [False, True]


def test_compare_and_map_work_on_prompts_in_one_history(bench: Any) -> None:
    bench.call("p1-noop")
    compared = bench.compare_prompt("greet", [{"name": "A"}, {"name": "B", "mood": "sad"}])
    assert list(compared["case"]) == [0, 0, 1, 1]
    assert list(compared["server"]) == ["p1", "p2", "p1", "p2"]
    assert list(compared["name"]) == ["p1-greet", "p2-greet", "p1-greet", "p2-greet"]
    assert "(sad) from p2" in compared.iloc[3]["text"]
    assert compared["ok"].all()
    only = bench.compare_prompt("p2-greet", name="C", servers=["p2"])
    assert list(only["server"]) == ["p2"]
    mapped = bench.map_prompt("p1-strict", [{"code": "ok"}, {"code": "no"}, {}],
                              progress=False)
    assert list(mapped["kind"]) == ["prompt"] * 3
    assert list(mapped["ok"]) == [True, False, False]
    assert mapped.iloc[1]["error_type"] == "Refused"
    assert len(set(mapped["batch"])) == 1
    records = bench.records
    assert records.iloc[0]["kind"] == "tool"
    assert list(records["kind"]).count("prompt") == 4 + 1 + 3
    assert set(mapped["call_id"]) <= set(records["call_id"])
    with pytest.raises(tb.Unreachable, match="no connected server offers a prompt"):
        bench.compare_prompt("nothing_like_it")


def test_prompt_records_survive_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.connect("p", prompt_server("p"))
        bench.prompt("p-greet", name="Kay")
    with tb.Bench(journal=path) as again:
        row = again.records.iloc[0]
        assert (row["kind"], row["name"]) == ("prompt", "p-greet")
        assert row["content"][1]["content"]["text"].startswith("Hello Kay!")


def test_every_operation_has_a_blocking_and_an_awaitable_face() -> None:
    for op in ("prompts", "prompt", "compare_prompt", "map_prompt"):
        sync, awaitable = getattr(tb.Bench, op), getattr(tb.Bench, "a" + op)
        assert not inspect.iscoroutinefunction(sync) and inspect.iscoroutinefunction(awaitable)
        assert (list(inspect.signature(sync).parameters)
                == list(inspect.signature(awaitable).parameters)), op


def test_the_awaitable_faces_work_from_another_loop() -> None:
    async def main() -> tuple[str, int]:
        async with tb.Bench(timeout=10) as bench:
            await bench.aconnect("p", prompt_server("p"))
            listed = await bench.aprompts()
            got = await bench.aprompt("p-greet", name="Async")
            return got.server, len(listed)

    assert asyncio.run(main()) == ("p", 3)


@pytest.mark.slow
def test_the_beyond_demo_prompts_over_stdio() -> None:
    with tb.Bench(timeout=30, connect_timeout=60) as bench:
        bench.connect("beyond", [sys.executable, "-m", "toolbench.demo.beyond"])
        assert set(bench.prompts()["name"]) == {"beyond-welcome", "beyond-plan_trip"}
        trip = bench.prompt("beyond-plan_trip", from_city="paris", to_city="lima", days="2")
        assert [m["role"] for m in trip.messages] == ["user", "user", "assistant", "user"]
        assert trip.messages[1]["content"]["type"] == "resource"
        page = trip._repr_html_()
        assert "[embedded resource]" in page and "city://lima" in page
        welcome = bench.prompt("beyond-welcome")
        assert "[resource link]" in welcome._repr_html_()
        assert list(bench.records["kind"]) == ["prompt", "prompt"]


_why_not = everything.node_missing()


@pytest.mark.slow
@pytest.mark.skipif(_why_not is not None, reason=f"server-everything needs Node.js: {_why_not}")
def test_server_everything_prompts_over_stdio() -> None:
    with tb.Bench(timeout=30, connect_timeout=60) as bench:
        bench.connect("everything", everything.stdio_command())
        df = bench.prompts("everything")
        assert set(df["prompt"]) >= {"simple-prompt", "args-prompt", "completable-prompt",
                                     "resource-prompt"}
        args = df[df["prompt"] == "args-prompt"].iloc[0]["arguments"]
        assert {a["name"]: bool(a.get("required")) for a in args} == {"city": True,
                                                                      "state": False}
        simple = bench.prompt("everything-simple-prompt")
        assert simple.messages and simple.messages[0]["role"] == "user"
        city = bench.prompt("everything-args-prompt", city="Lima")
        assert "Lima" in city.text
        with_resource = bench.prompt("everything-resource-prompt", resourceType="Text",
                                     resourceId="2")
        assert [m["content"]["type"] for m in with_resource.messages] == ["text", "resource"]
        assert "[embedded resource]" in with_resource._repr_html_()
        assert list(bench.records["kind"]) == ["prompt"] * 3
