"""The model function: asking it (sync, async, bounded), reading its reply, ScriptedModel.

Unit tests of ``toolbench._bench.models.model``: no server, no process. Runs against real
servers are in tests/test_models_run.py.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from typing import Any

import pytest

import toolbench as tb
from toolbench._bench.models.model import (
    MAX_ARGUMENT_BYTES,
    ModelFailed,
    ask,
    model_name,
    normalize,
    parse_arguments,
)


def call(name: str, arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


# -- reading a reply -----------------------------------------------------------------------
def test_a_dict_reply_with_tool_calls_is_parsed_and_kept_as_openai_json() -> None:
    turn = normalize({"role": "assistant", "content": "let me see",
                      "tool_calls": [call("geo-distance", '{"from_city": "Lima"}'),
                                     call("geo-city", {"name": "Oslo"}, "c2")]})
    assert turn.text == "let me see"
    assert [(c.id, c.name, c.arguments, c.problem) for c in turn.tool_calls] == [
        ("c1", "geo-distance", {"from_city": "Lima"}, None),
        ("c2", "geo-city", {"name": "Oslo"}, None)]
    assert turn.message == {"role": "assistant", "content": "let me see", "tool_calls": [
        call("geo-distance", '{"from_city": "Lima"}'), call("geo-city", '{"name": "Oslo"}', "c2")]}
    json.dumps(turn.message)  # the transcript is plain JSON


def test_the_openai_clients_message_object_is_read() -> None:
    chat = pytest.importorskip("openai.types.chat")
    message = chat.ChatCompletionMessage.model_validate({
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_9", "type": "function",
                        "function": {"name": "geo-distance", "arguments": '{"a": 1}'}}]})
    turn = normalize(message)
    assert turn.text is None
    assert turn.tool_calls[0].id == "call_9" and turn.tool_calls[0].arguments == {"a": 1}


def test_text_parts_refusals_and_plain_strings_are_text() -> None:
    assert normalize("Paris.").text == "Paris."
    assert normalize({"content": [{"type": "text", "text": "a"},
                                  {"type": "text", "text": "b"}]}).text == "ab"
    assert normalize({"content": None, "refusal": "I can't."}).text == "I can't."


def test_usage_comes_from_reply_under_any_providers_keys() -> None:
    assert normalize(tb.Reply("x", usage={"input": 3, "output": 4})).usage == {
        "input": 3, "output": 4}
    assert normalize(tb.Reply("x", usage={"prompt_tokens": 5, "completion_tokens": 6})
                     ).usage == {"input": 5, "output": 6}
    assert normalize(tb.Reply("x", usage={})).usage is None
    with pytest.raises(ModelFailed, match="usage is not a mapping"):
        normalize(tb.Reply("x", usage=7))  # type: ignore[arg-type]


@pytest.mark.parametrize("reply", [{"content": None}, {"content": ""}, {},
                                   {"content": None, "tool_calls": []}, 42, None])
def test_a_reply_with_neither_text_nor_tool_calls_fails_and_says_what_came(reply: Any) -> None:
    with pytest.raises(ModelFailed, match="neither text nor tool calls") as caught:
        normalize(reply)
    assert repr(reply)[:20] in caught.value.reason


def test_tool_calls_that_are_not_a_list_fail() -> None:
    with pytest.raises(ModelFailed, match="tool_calls is not a list"):
        normalize({"content": None, "tool_calls": "geo-distance"})


@pytest.mark.parametrize(("arguments", "problem"), [
    ("{not json", "not JSON"),
    ("[1, 2]", "not an object: list"),
    ('"text"', "not an object: str"),
    (7, "not an object: int"),
    ({"x": float("nan")}, "not JSON"),
])
def test_arguments_that_cannot_be_used_say_why(arguments: Any, problem: str) -> None:
    parsed, raw, found = parse_arguments(arguments)
    assert parsed is None and found is not None and found.startswith(problem)
    assert isinstance(raw, str)


def test_a_50_mb_argument_is_refused_unparsed_and_its_text_cut() -> None:
    huge = json.dumps({"text": "x" * 50_000_000})
    parsed, raw, problem = parse_arguments(huge)
    assert parsed is None and problem is not None
    assert problem.startswith(f"over {MAX_ARGUMENT_BYTES:,} bytes")
    assert len(raw) == MAX_ARGUMENT_BYTES
    parsed, raw, problem = parse_arguments({"text": "x" * (MAX_ARGUMENT_BYTES + 1)})
    assert parsed is None and problem is not None and "over" in problem


def test_no_arguments_are_an_empty_object() -> None:
    assert parse_arguments("") == ({}, "{}", None)
    assert parse_arguments(None) == ({}, "{}", None)


def test_a_tool_call_without_a_name_has_a_problem() -> None:
    turn = normalize({"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]})
    assert turn.tool_calls[0].problem == "the tool call has no name"


# -- asking -----------------------------------------------------------------------------------
def test_a_sync_model_runs_off_the_calling_loop_and_gets_copies() -> None:
    seen: list[str] = []
    messages = [{"role": "user", "content": "hi"}]

    def model(msgs: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        seen.append(threading.current_thread().name)
        msgs.append({"role": "user", "content": "injected"})  # the caller's list is safe
        return "hello"

    turn = asyncio.run(ask(model, messages, [], timeout=10))
    assert turn.text == "hello" and turn.model_ms >= 0
    assert seen[0] != threading.current_thread().name
    assert messages == [{"role": "user", "content": "hi"}]


def test_an_async_model_and_a_sync_one_returning_a_coroutine_are_awaited() -> None:
    async def model(msgs: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        return {"content": f"{len(tools)} tools"}

    class Adapter:
        async def __call__(self, msgs: Any, tools: Any) -> str:
            return "adapter"

    def lazy(msgs: Any, tools: Any) -> Any:
        return model(msgs, tools)

    tools = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    assert asyncio.run(ask(model, [], tools, timeout=10)).text == "1 tools"
    assert asyncio.run(ask(Adapter(), [], tools, timeout=10)).text == "adapter"
    assert asyncio.run(ask(lazy, [], tools, timeout=10)).text == "1 tools"


def test_a_model_that_raises_is_named_with_its_error() -> None:
    def model(msgs: Any, tools: Any) -> str:
        raise ValueError("quota exceeded")

    with pytest.raises(ModelFailed) as caught:
        asyncio.run(ask(model, [], [], timeout=10))
    assert caught.value.reason == "the model raised ValueError: quota exceeded"
    assert isinstance(caught.value.__cause__, ValueError)


def test_a_models_own_timeout_error_is_not_taken_for_model_timeout() -> None:
    def model(msgs: Any, tools: Any) -> str:
        raise TimeoutError("the provider took too long")

    with pytest.raises(ModelFailed) as caught:
        asyncio.run(ask(model, [], [], timeout=30))
    assert caught.value.reason == "the model raised TimeoutError: the provider took too long"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_model_that_hangs_is_left_behind_after_model_timeout(kind: str) -> None:
    release = threading.Event()

    def sync_model(msgs: Any, tools: Any) -> str:
        release.wait(30)
        return "late"

    async def async_model(msgs: Any, tools: Any) -> str:
        await asyncio.sleep(30)
        return "late"

    model = sync_model if kind == "sync" else async_model
    try:
        with pytest.raises(ModelFailed, match=r"no reply within 0\.2 s \(model_timeout\)"):
            asyncio.run(ask(model, [], [], timeout=0.2))
    finally:
        release.set()


def test_model_names_for_provenance() -> None:
    def my_model(msgs: Any, tools: Any) -> str:
        return "x"

    assert model_name(tb.ScriptedModel(["x"], name="script-1")) == "script-1"
    assert model_name(my_model).endswith("my_model")
    assert model_name(functools.partial(my_model)).endswith("my_model")

    class Named:
        name = "openai:gpt-4o"

        def __call__(self, msgs: Any, tools: Any) -> str:
            return "x"

    assert model_name(Named()) == "openai:gpt-4o"


# -- ScriptedModel ----------------------------------------------------------------------------
def test_a_script_answers_by_the_conversations_length_so_it_serves_many_runs() -> None:
    model = tb.ScriptedModel([{"tool": "geo-distance", "arguments": {"a": 1}},
                              [{"tool": "x"}, {"tool": "y", "arguments": {"b": 2}}],
                              tb.Reply("done", usage={"input": 1, "output": 2})])
    first = normalize(model([{"role": "user", "content": "q"}], []))
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_1_1", "geo-distance", {"a": 1})]
    second = normalize(model([{"role": "assistant"}], []))
    assert [c.name for c in second.tool_calls] == ["x", "y"]
    third = normalize(model([{"role": "assistant"}] * 2, []))
    assert third.text == "done" and third.usage == {"input": 1, "output": 2}
    again = normalize(model([{"role": "user", "content": "another run"}], []))
    assert again.tool_calls[0].name == "geo-distance"  # a new conversation starts over
    with pytest.raises(ModelFailed, match="has no reply left: it holds 3 and was asked for "
                                          "reply 4"):
        model([{"role": "assistant"}] * 3, [])


def test_a_scripted_function_sees_the_conversation_and_tools() -> None:
    model = tb.ScriptedModel(lambda msgs, tools: {"tool": tools[0]["function"]["name"]},
                             name="first-tool")
    tools = [{"type": "function", "function": {"name": "geo-city", "parameters": {}}}]
    turn = asyncio.run(ask(model, [{"role": "user", "content": "q"}], tools, timeout=10))
    assert turn.tool_calls[0].name == "geo-city" and turn.tool_calls[0].arguments == {}
    assert repr(model) == "ScriptedModel('first-tool', function)"


@pytest.mark.parametrize(("script", "name", "error"), [
    ("just text", "s", TypeError), (42, "s", TypeError), (["x"], "", ValueError)])
def test_a_bad_script_is_refused_with_the_rule(script: Any, name: str,
                                               error: type[Exception]) -> None:
    with pytest.raises(error, match="ScriptedModel"):
        tb.ScriptedModel(script, name=name)


# -- what a tool hands back ------------------------------------------------------------------
def test_a_huge_result_is_read_only_as_far_as_the_cap() -> None:
    from toolbench._bench.models.run import handed_back
    from toolbench._core.client import Result

    data = {"rows": [{"id": i, "name": "x" * 20} for i in range(100_000)]}
    result = Result(content=[{"type": "text", "text": json.dumps(data)}], structured=data)
    told = handed_back(result, None, 1_000)
    head, note = told.split("\n[cut at 1,000 characters (max_result_chars)")
    assert head == json.dumps(data)[:1_000]
    assert note == "; the bench's record keeps the whole result]"
    text_only = Result(content=[{"type": "text", "text": "y" * 5_000_000}])
    assert handed_back(text_only, None, 10).startswith("y" * 10 + "\n[cut at 10 characters")


def test_text_that_repeats_the_json_is_not_handed_back_twice() -> None:
    from toolbench._bench.models.run import handed_back
    from toolbench._core.client import Result

    def told(text: str, structured: Any) -> str:
        return handed_back(Result(content=[{"type": "text", "text": text}],
                                  structured=structured), None, 20_000)

    assert told('{"result": 343.557}', {"result": 343.557}) == '{"result": 343.557}'
    assert told("343.557", {"result": 343.557}) == '{"result": 343.557}'
    assert told("hello", {"a": 1}) == '{"a": 1}\nhello'
    blocks = [{"type": "image", "data": "aGk=", "mimeType": "image/png"}] * 60
    many = handed_back(Result(content=blocks), None, 20_000)
    assert many.count("[image: image/png, 3 bytes, not shown to the model]") == 50
    assert many.endswith("[10 more content blocks]")


def test_arguments_nested_past_the_parsers_limit_are_refused_not_raised() -> None:
    """A model's arguments of 5,000 nested arrays (JSON text, or an object): a problem the
    run refuses with, never the parser's RecursionError."""
    nested = '{"a": ' + "[" * 5000 + "]" * 5000 + "}"
    parsed, raw, problem = parse_arguments(nested)
    assert parsed is None and raw == nested and problem is not None
    assert problem.startswith("not JSON: nested too deeply")
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"a": deep}
    parsed, raw, problem = parse_arguments(deep)
    assert parsed is None and problem is not None and problem.startswith("not JSON: ")
    turn = normalize({"tool_calls": [{"id": "c", "function": {"name": "t",
                                                                "arguments": nested}}]})
    (call,) = turn.tool_calls
    assert call.arguments is None and call.problem == "not JSON: nested too deeply to read"
