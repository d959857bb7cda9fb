"""``tb.models.sampler(model)``: a server's sampling requests answered by the model function.

The servers ask for real: tests/servers/sampling_tools_server.py (sampling with tools, the
SDK's ``Resolve(Sample(...))``) in process and over stdio, and the bundled ``beyond`` demo's
``ask_llm`` (no tools) over stdio.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import mcp.types as t
import pytest

import toolbench as tb
from tests.servers import sampling_tools_server
from toolbench._bench.models.sampler import Sampler, openai_messages

ROOT = Path(__file__).resolve().parents[1]
SAMPLING_TOOLS = [sys.executable, str(ROOT / "tests" / "servers" / "sampling_tools_server.py")]
BEYOND = [sys.executable, "-m", "toolbench.demo.beyond"]


class Recorder:
    """A model that remembers what it was asked and answers by a rule."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        self.asked.append((messages, tools))
        return self.answer(messages, tools) if callable(self.answer) else self.answer


def lookup(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """Call the tool the server named ``geo.lookup``, by the name the model was given."""
    if not tools or messages[-1]["role"] != "user":
        return "It is sunny, 24 C."
    name = next(x["function"]["name"] for x in tools if "lookup" in x["function"]["name"])
    return {"content": "Looking it up.", "tool_calls": [
        {"id": "call-7", "function": {"name": name, "arguments": '{"place": "Lima"}'}}]}


def bench_with(target: Any, model: Any) -> tb.Bench:
    bench = tb.Bench(timeout=30, sampling=tb.models.sampler(model))
    bench.connect("s", target)
    return bench


def check_tool_use(bench: tb.Bench, model: Recorder) -> None:
    reply = bench.call("s-pick", question="Where is Lima?").data
    assert reply["stopReason"] == "toolUse" and reply["role"] == "assistant"
    assert reply["content"] == [
        {"type": "text", "text": "Looking it up."},
        {"type": "tool_use", "id": "call-7", "name": "geo.lookup", "input": {"place": "Lima"}}]
    messages, tools = model.asked[-1]
    assert messages == [{"role": "system", "content": "Use a tool when one helps."},
                        {"role": "user", "content": "Where is Lima?"}]
    names = [x["function"]["name"] for x in tools]
    assert names[0] == "get_weather" and names[1].startswith("geo_lookup_")  # a legal name
    assert tools[0]["function"]["parameters"]["required"] == ["city"]


def test_sampling_with_tools_in_process() -> None:
    model = Recorder(lookup)
    with bench_with(sampling_tools_server.create(), model) as bench:
        check_tool_use(bench, model)

        reply = bench.call("s-finish", city="Lima").data
        assert reply == {"role": "assistant", "content": [
            {"type": "text", "text": "It is sunny, 24 C."}], "model": "Recorder",
            "stopReason": "endTurn"}
        messages, _ = model.asked[-1]
        assert messages == [
            {"role": "user", "content": "What is the weather in Lima?"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "use-1", "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Lima"}'}}]},
            {"role": "tool", "tool_call_id": "use-1", "content": '{"celsius": 24}\nSunny'}]

        plain = bench.call("s-plain", question="hi").data
        assert plain["content"] == {"type": "text", "text": "It is sunny, 24 C."}
        assert model.asked[-1][1] == []  # no tools offered


@pytest.mark.slow
def test_sampling_with_tools_over_stdio() -> None:
    model = Recorder(lookup)
    with bench_with(SAMPLING_TOOLS, model) as bench:
        check_tool_use(bench, model)


@pytest.mark.slow
def test_the_beyond_demo_asks_and_a_scripted_model_answers_over_stdio() -> None:
    model = tb.ScriptedModel(["Lima is warm in March."], name="travel-script")
    with bench_with(BEYOND, model) as bench:
        reply = bench.call("s-ask_llm", question="Where should I go?").data
    assert reply == {"text": "Lima is warm in March.", "model": "travel-script",
                     "role": "assistant", "stop_reason": "endTurn"}


@pytest.mark.parametrize(("answer", "error"), [
    (ValueError("quota"), "the model raised ValueError: quota"),
    ({"content": None}, "the reply has neither text nor tool calls"),
    ({"tool_calls": [{"id": "1", "function": {"name": "rm_rf", "arguments": "{}"}}]},
     "the model called 'rm_rf', which the request did not offer"),
    ({"tool_calls": [{"id": "1", "function": {"name": "get_weather", "arguments": "{x"}}]},
     "the model's arguments for 'get_weather' cannot be used: not JSON"),
])
def test_a_model_that_fails_gives_the_server_an_error_naming_why(answer: Any,
                                                                   error: str) -> None:
    def model(messages: Any, tools: Any) -> Any:
        if isinstance(answer, Exception):
            raise answer
        return answer

    with bench_with(sampling_tools_server.create(), model) as bench, \
            pytest.raises(tb.ToolError) as caught:
        bench.call("s-pick", question="q")
    assert error in str(caught.value)


def test_tool_calls_in_a_request_without_tools_are_an_error() -> None:
    model = {"tool_calls": [{"id": "1", "function": {"name": "x", "arguments": "{}"}}]}
    with bench_with(sampling_tools_server.create(), lambda m, t: model) as bench, \
            pytest.raises(tb.ToolError, match=r"the model called tools .* the request "
                                              r"offered none"):
        bench.call("s-plain", question="q")


def test_a_plain_handler_does_not_advertise_tools_in_sampling() -> None:
    with tb.Bench(timeout=30, sampling=lambda request: "x") as bench:
        bench.connect("s", sampling_tools_server.create())
        with pytest.raises(tb.ToolError, match=r"sampling\.tools"):
            bench.call("s-pick", question="q")
        assert bench.call("s-plain", question="q").data["content"]["text"] == "x"


# -- the conversion, in detail ------------------------------------------------------------------
def test_images_audio_and_tool_choice_none() -> None:
    params = t.CreateMessageRequestParams(max_tokens=10, messages=[
        t.SamplingMessage(role="user", content=[
            t.TextContent(type="text", text="look"),
            t.ImageContent(type="image", data="aGk=", mime_type="image/png"),
            t.AudioContent(type="audio", data="aGk=", mime_type="audio/wav"),
            t.AudioContent(type="audio", data="aGk=", mime_type="audio/ogg")]),
        t.SamplingMessage(role="assistant", content=t.ImageContent(
            type="image", data="aGk=", mime_type="image/png"))],
        tools=[sampling_tools_server.WEATHER], tool_choice=t.ToolChoice(mode="none"))
    assert openai_messages(params) == [
        {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            {"type": "input_audio", "input_audio": {"data": "aGk=", "format": "wav"}},
            {"type": "text", "text": "[audio: audio/ogg]"}]},
        {"role": "assistant", "content": "[image: image/png]"}]
    model = Recorder("fine")
    result = asyncio.run(Sampler(model)(params))
    assert model.asked[-1][1] == []  # "none": no tools offered
    assert isinstance(result, t.CreateMessageResultWithTools)


@pytest.mark.parametrize(("model", "options", "error"), [
    ("gpt-4o", {}, TypeError), (len, {"model_timeout": 0}, ValueError),
    (len, {"model_timeout": float("inf")}, ValueError)])
def test_a_bad_sampler_is_refused(model: Any, options: dict[str, Any],
                                  error: type[Exception]) -> None:
    with pytest.raises(error):
        tb.models.sampler(model, **options)
