"""The provider adapters (``toolbench._bench.models.adapters``): the real ``openai`` and
``anthropic`` client packages against a recorded provider on 127.0.0.1 (tests/provider_stub.py),
never a network; and a full ``bench.run`` through each against the real geo demo over stdio."""

from __future__ import annotations

import asyncio
import inspect
import json
import platform
import sys
from typing import Any

import anthropic
import openai
import pytest
from provider_stub import (
    ANTHROPIC_429,
    OPENAI_429,
    Answer,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_call,
    provider,
)

import toolbench as tb
from toolbench._bench.models.adapters import (
    from_anthropic_content,
    to_anthropic_messages,
    to_anthropic_tool,
)


@pytest.fixture(scope="module", autouse=True)
def platform_known() -> None:
    """The clients describe the platform in a header, and Python asks ``uname -p`` for it once
    per process: asked here, before the tests, so only a test that starts a server counts as
    starting a process."""
    platform.uname().processor  # noqa: B018 - the lookup is the point


TOOL = {"type": "function", "function": {
    "name": "geo-distance", "description": "Great-circle distance.",
    "parameters": {"type": "object", "properties": {"from_city": {"type": "string"}},
                   "required": ["from_city"]}}}
ASK = [{"role": "user", "content": "How far is Paris from London?"}]


def _openai(url: str, *, aio: bool = False) -> Any:
    cls = openai.AsyncOpenAI if aio else openai.OpenAI
    return cls(api_key="sk-test-not-a-key", base_url=f"{url}/v1", max_retries=0, timeout=30)


def _anthropic(url: str, *, aio: bool = False) -> Any:
    cls = anthropic.AsyncAnthropic if aio else anthropic.Anthropic
    return cls(api_key="sk-ant-test", base_url=url, max_retries=0, timeout=30)


# -- openai -------------------------------------------------------------------------------------
def test_openai_sends_the_conversation_and_tools_and_returns_the_message_with_usage() -> None:
    with provider(openai_tool_call("geo-distance", {"from_city": "London"}),
                  openai_text("About 344 km.")) as stub:
        model = tb.models.openai(_openai(stub.url), model="gpt-4o-mini", temperature=0)
        assert model.name == "openai:gpt-4o-mini" and not inspect.iscoroutinefunction(
            type(model).__call__)
        reply = model(ASK, [TOOL])
        (call,) = reply.message.tool_calls
        assert call.function.name == "geo-distance"
        assert json.loads(call.function.arguments) == {"from_city": "London"}
        assert reply.usage == {"input": 82, "output": 24}
        assert model(ASK, []).message.content == "About 344 km."
    first, second = stub.requests
    assert stub.paths == ["/v1/chat/completions"] * 2
    assert first == {"model": "gpt-4o-mini", "messages": ASK, "tools": [TOOL], "temperature": 0}
    assert "tools" not in second  # an empty tools list is left out, not sent as []


def test_openai_over_an_async_client_is_an_async_model() -> None:
    with provider(openai_text("Hello.")) as stub:
        model = tb.models.openai(_openai(stub.url, aio=True))
        assert inspect.iscoroutinefunction(type(model).__call__)
        reply = asyncio.run(model(ASK, [TOOL]))
    assert reply.message.content == "Hello." and reply.usage == {"input": 140, "output": 12}
    assert stub.requests[0]["model"] == "gpt-4o"


def test_openai_failures_raise_a_provider_error_that_says_what_happened() -> None:
    with provider(OPENAI_429, Answer(b"{not json"), Answer({"object": "chat.completion"}),
                  Answer({"error": {"message": "Invalid schema for function 'x'."}}, 400)
                  ) as stub:
        model = tb.models.openai(_openai(stub.url))
        with pytest.raises(tb.models.ProviderError) as limited:
            model(ASK, [TOOL])
        assert limited.value.status == 429 and limited.value.model == "openai:gpt-4o"
        assert "HTTP 429, rate limited" in str(limited.value)
        assert "Rate limit reached for gpt-4o" in str(limited.value)
        with pytest.raises(tb.models.ProviderError, match="the reply is not JSON"):
            model(ASK, [TOOL])
        with pytest.raises(tb.models.ProviderError, match="no choices"):
            model(ASK, [TOOL])
        with pytest.raises(tb.models.ProviderError, match=r"HTTP 400.*Invalid schema"):
            model(ASK, [TOOL])
    assert len(stub.requests) == 4  # max_retries=0: one request each


def test_a_provider_error_never_shows_the_api_key() -> None:
    key = "sk-proj-Zq7NotARealKey0123456789"
    refused = Answer({"error": {"message": f"Incorrect API key provided: {key}. You can find "
                                          "your API key at https://platform.openai.com.",
                                "type": "invalid_request_error", "code": "invalid_api_key"}},
                     401)
    with provider(refused) as stub:
        client = openai.OpenAI(api_key=key, base_url=f"{stub.url}/v1", max_retries=0)
        with pytest.raises(tb.models.ProviderError) as caught:
            tb.models.openai(client)(ASK, [TOOL])
    assert caught.value.status == 401 and "HTTP 401: Incorrect API key provided" in str(
        caught.value)
    assert key not in str(caught.value) and "[redacted]" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_bad_adapter_arguments_are_refused_naming_the_value() -> None:
    client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(TypeError, match="model is the provider's model name"):
        tb.models.openai(client, model="")
    with pytest.raises(TypeError, match="messages is set by the run"):
        tb.models.openai(client, messages=[])
    with pytest.raises(TypeError, match=r"an openai client \(with .chat.completions.create\)"):
        tb.models.openai(object())
    aclient = anthropic.Anthropic(api_key="sk-test", base_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="max_tokens is a positive int, not 0"):
        tb.models.anthropic(aclient, model="claude-x", max_tokens=0)
    with pytest.raises(TypeError, match="system is set by the run"):
        tb.models.anthropic(aclient, model="claude-x", system="hi")


# -- anthropic: the conversion both ways --------------------------------------------------------
def test_an_openai_conversation_becomes_anthropic_messages() -> None:
    conversation = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Two distances, please."},
                                     {"type": "image_url", "image_url": {
                                         "url": "data:image/png;base64,iVBORw0KGgo="}}]},
        {"role": "assistant", "content": "Checking both.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {
                "name": "geo-distance", "arguments": '{"from_city": "London"}'}},
            {"id": "c2", "type": "function", "function": {
                "name": "geo-distance", "arguments": "not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "344 km"},
        {"role": "tool", "tool_call_id": "c2", "content": "error: arguments are not JSON"},
        {"role": "user", "content": "And in miles?"},
        {"role": "developer", "content": "Answer in one line."},
    ]
    system, messages = to_anthropic_messages(conversation)
    assert system == "Be brief.\n\nAnswer in one line."
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"] == [
        {"type": "text", "text": "Two distances, please."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBORw0KGgo="}}]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "c1", "name": "geo-distance",
         "input": {"from_city": "London"}},
        {"type": "tool_use", "id": "c2", "name": "geo-distance", "input": {}}]
    assert messages[2]["content"] == [  # both results in one user turn, before the text
        {"type": "tool_result", "tool_use_id": "c1", "content": "344 km"},
        {"type": "tool_result", "tool_use_id": "c2", "content": "error: arguments are not JSON"},
        {"type": "text", "text": "And in miles?"}]
    assert to_anthropic_tool(TOOL) == {"name": "geo-distance",
                                       "description": "Great-circle distance.",
                                       "input_schema": TOOL["function"]["parameters"]}
    assert to_anthropic_tool({"type": "function", "function": {"name": "t"}}) == {
        "name": "t", "input_schema": {"type": "object"}}


def test_an_anthropic_reply_becomes_an_openai_assistant_message() -> None:
    message = from_anthropic_content([
        {"type": "thinking", "thinking": "hmm", "signature": "x"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "geo-distance",
         "input": {"from_city": "Zürich"}}])
    assert message == {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"id": "toolu_1", "type": "function", "function": {
            "name": "geo-distance", "arguments": '{"from_city": "Zürich"}'}}]}
    assert from_anthropic_content([{"type": "text", "text": "Done."}]) == {
        "role": "assistant", "content": "Done."}


def test_anthropic_sends_messages_api_requests_and_reads_the_reply() -> None:
    cached = anthropic_text("About 213 miles.")
    cached["usage"].update(cache_read_input_tokens=1000, cache_creation_input_tokens=20)
    with provider(anthropic_tool_use("geo-distance", {"from_city": "London"},
                                     text="Let me check."), cached) as stub:
        model = tb.models.anthropic(_anthropic(stub.url), model="claude-sonnet-4-5",
                                    max_tokens=300, stop_sequences=["END"])
        assert model.name == "anthropic:claude-sonnet-4-5"
        first = model([{"role": "system", "content": "Be brief."}, *ASK], [TOOL])
        second = model(ASK, [])
    assert first.message["content"] == "Let me check."
    assert first.message["tool_calls"][0]["function"] == {
        "name": "geo-distance", "arguments": '{"from_city": "London"}'}
    assert first.usage == {"input": 412, "output": 61}
    assert second.message == {"role": "assistant", "content": "About 213 miles."}
    assert second.usage == {"input": 530 + 1000 + 20, "output": 18}
    sent, plain = stub.requests
    assert stub.paths == ["/v1/messages"] * 2
    assert sent == {"model": "claude-sonnet-4-5", "max_tokens": 300, "stop_sequences": ["END"],
                    "system": "Be brief.", "messages": [
                        {"role": "user", "content": [{"type": "text", "text": ASK[0]["content"]}]}],
                    "tools": [to_anthropic_tool(TOOL)]}
    assert "tools" not in plain and "system" not in plain


def test_anthropic_over_an_async_client_and_its_failures() -> None:
    with provider(anthropic_text("Hi."), ANTHROPIC_429, Answer({"type": "message"}),
                  anthropic_text("", stop_reason="max_tokens")) as stub:
        model = tb.models.anthropic(_anthropic(stub.url, aio=True), model="claude-haiku-4-5")
        assert inspect.iscoroutinefunction(type(model).__call__)
        assert asyncio.run(model(ASK, [TOOL])).message["content"] == "Hi."
        with pytest.raises(tb.models.ProviderError) as limited:
            asyncio.run(model(ASK, [TOOL]))
        assert limited.value.status == 429
        assert "rate limited" in str(limited.value) and "50,000 input tokens" in str(
            limited.value)
        with pytest.raises(tb.models.ProviderError, match="no content blocks"):
            asyncio.run(model(ASK, [TOOL]))
        with pytest.raises(tb.models.ProviderError, match="cut at max_tokens=1024"):
            asyncio.run(model(ASK, [TOOL]))


# -- a full run through each adapter, against the real geo demo over stdio ----------------------
GEO = [sys.executable, "-m", "toolbench.demo.geo"]
GEO_TOOLS = {f"geo-{t}" for t in ("distance", "city", "cities", "nearest", "world_map")}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_run_through_the_adapter_uses_the_real_geo_server(kind: str) -> None:
    arguments = {"from_city": "London", "to_city": "Paris"}
    if kind == "openai":
        answers = [openai_tool_call("geo-distance", arguments, call_id="call_9"),
                   openai_text("About 344 km.")]
    else:
        answers = [anthropic_tool_use("geo-distance", arguments, use_id="toolu_9"),
                   anthropic_text("About 344 km.")]
    with provider(*answers) as stub, tb.Bench() as bench:
        bench.connect("geo", GEO)
        model = (tb.models.openai(_openai(stub.url)) if kind == "openai"
                 else tb.models.anthropic(_anthropic(stub.url), model="claude-sonnet-4-5"))
        run = bench.run(model, "How far is Paris from London?", servers="geo")
        records = bench.records
    assert run.stopped == "answered" and run.error is None, run.error
    assert run.text == "About 344 km." and run.model == model.name
    assert run.usage is not None and run.usage["input"] > 0 and run.usage["output"] > 0
    (record,) = run.records
    assert record.ok and (record.server, record.tool) == ("geo", "distance")
    assert record.arguments == arguments
    assert record.provenance is not None and record.provenance["model"] == model.name
    assert abs(float(record.text or "nan") - 343.5) < 2  # the real haversine, from the server
    assert len(records) == 1 and list(run.calls["call_id"]) == [record.call_id]
    offered, answered = stub.requests
    if kind == "openai":
        assert {t["function"]["name"] for t in offered["tools"]} == GEO_TOOLS
        result = answered["messages"][-1]
        assert result["role"] == "tool" and result["tool_call_id"] == "call_9"
        shown = result["content"]
    else:
        assert {t["name"] for t in offered["tools"]} == GEO_TOOLS
        assert all(t["input_schema"]["type"] == "object" for t in offered["tools"])
        (block,) = answered["messages"][-1]["content"]
        assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_9"
        shown = block["content"]
    assert "343" in json.dumps(shown)


@pytest.mark.slow
def test_a_provider_that_fails_ends_the_run_with_a_clear_error() -> None:
    with provider(openai_tool_call("geo-distance", {"from_city": "London", "to_city": "Berlin"}),
                  OPENAI_429) as stub, tb.Bench() as bench:
        bench.connect("geo", GEO)
        run = bench.run(tb.models.openai(_openai(stub.url)), "London to Berlin?")
    assert run.stopped == "error"
    assert "HTTP 429, rate limited" in (run.error or "") and "openai:gpt-4o" in (run.error or "")
    (kept,) = run.records  # the call made before the failure stays recorded
    assert kept.ok and kept.arguments == {"from_city": "London", "to_city": "Berlin"}


def test_a_servers_sampling_request_with_tools_answered_through_the_anthropic_adapter() -> None:
    from tests.servers import sampling_tools_server

    with provider(anthropic_tool_use("get_weather", {"city": "Lima"}, text="Checking.",
                                     use_id="toolu_w"),
                  anthropic_text("It is sunny in Lima.")) as stub:
        model = tb.models.anthropic(_anthropic(stub.url), model="claude-haiku-4-5")
        with tb.Bench(timeout=30, sampling=tb.models.sampler(model)) as bench:
            bench.connect("s", sampling_tools_server.create())
            picked = bench.call("s-pick", question="Weather in Lima?").data
            finished = bench.call("s-finish", city="Lima").data
    assert picked["stopReason"] == "toolUse" and picked["model"] == "anthropic:claude-haiku-4-5"
    assert picked["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {"city": "Lima"}}]
    assert finished["content"] == [{"type": "text", "text": "It is sunny in Lima."}]
    asked, followed = stub.requests
    assert asked["system"] == "Use a tool when one helps." and asked["max_tokens"] == 1024
    names = [t["name"] for t in asked["tools"]]
    assert names[0] == "get_weather" and names[1].startswith("geo_lookup_")  # legal for Claude
    assert all(t["input_schema"]["type"] == "object" for t in asked["tools"])
    assert followed["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is the weather in Lima?"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "use-1",
                                           "name": "get_weather", "input": {"city": "Lima"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "use-1",
                                      "content": '{"celsius": 24}\nSunny'}]}]


def test_a_refused_call_nested_past_the_parsers_limit_converts_for_anthropic() -> None:
    """The transcript keeps a tool call whose arguments were refused as nested too deeply;
    the next turn's conversion for Anthropic sends it with no input, instead of raising."""
    from toolbench._bench.models.adapters import to_anthropic_messages

    nested = "[" * 5000 + "]" * 5000
    _system, turns = to_anthropic_messages([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "t", "arguments": nested}}]},
        {"role": "tool", "tool_call_id": "c", "content": "Error (Refused, not sent): ..."}])
    assert turns[1]["content"] == [{"type": "tool_use", "id": "c", "name": "t", "input": {}}]
