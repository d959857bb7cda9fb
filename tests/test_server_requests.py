"""Requests from servers (sampling, elicitation, roots) answered by functions, end to end.

In process the SDK connects in its 2026-07-28 mode (the requests ride ``InputRequiredResult``
retries inside the call); over stdio the bench's default handshake is 2025-11-25, where they
are real server-to-client JSON-RPC requests. Both paths must give the same answers and the
same clear failures. The widgets (``"ask"``) are in tests/test_ask.py.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import anyio
import mcp.types as t
import pytest
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
from pydantic import BaseModel, Field

import toolbench as tb
from toolbench._core.schema import preload as _preload
from toolbench._loop import get_loop
from toolbench._transports import server_requests as sr
from toolbench._transports.mcp.client import McpClient
from toolbench.demo import beyond

ROOT = Path(__file__).resolve().parents[1]
BEYOND = [sys.executable, "-m", "toolbench.demo.beyond"]
TRIP = {"destination": "Lima", "nights": 4, "budget": 1234.5, "travel_class": "business",
        "insurance": True}


def in_process() -> Any:
    return beyond.create()


TARGETS = [pytest.param(in_process, id="in-process"),
           pytest.param(lambda: BEYOND, id="stdio", marks=pytest.mark.slow)]


@pytest.fixture
def made() -> Iterator[list[tb.Bench]]:
    benches: list[tb.Bench] = []
    yield benches
    for bench in benches:
        bench.close()


def bench_with(made: list[tb.Bench], target: Any, **options: Any) -> tb.Bench:
    bench = tb.Bench(timeout=30, **options)
    made.append(bench)
    bench.connect("beyond", target())
    return bench


# -- functions answer, on both protocol paths -----------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_function_handlers_answer_sampling_elicitation_and_roots(
    made: list[tb.Bench], target: Any, tmp_path: Path
) -> None:
    asked: list[t.CreateMessageRequestParams] = []
    elicited: list[t.ElicitRequestParams] = []

    def sample(request: t.CreateMessageRequestParams) -> str:  # sync: runs in a thread
        asked.append(request)
        assert threading.current_thread().name != "toolbench-loop"
        content = request.messages[-1].content
        assert isinstance(content, t.TextContent)
        return content.text[::-1]

    async def elicit(request: t.ElicitRequestParams) -> dict[str, Any]:
        elicited.append(request)
        return {"action": "accept", "content": dict(TRIP)}

    bench = bench_with(made, target, sampling=sample, elicitation=elicit,
                       roots=[tmp_path, "file:///srv/data"])
    reply = bench.call("beyond-ask_llm", question="Which city is hottest?", max_tokens=77)
    assert reply.data == {"text": "?tsettoh si ytic hcihW", "model": "toolbench-function",
                          "role": "assistant", "stop_reason": "endTurn"}
    assert asked[-1].max_tokens == 77 and asked[-1].system_prompt

    answer = bench.call("beyond-ask_user", destination_hint="Lima")
    assert answer.data == {"action": "accept", "content": TRIP}
    assert isinstance(elicited[-1], t.ElicitRequestFormParams) and "Lima" in elicited[-1].message

    roots = bench.call("beyond-client_roots").data["result"]
    assert roots == [{"uri": tmp_path.resolve().as_uri(), "name": tmp_path.name},
                     {"uri": "file:///srv/data", "name": "data"}]
    assert bench.roots == [tmp_path.resolve().as_uri(), "file:///srv/data"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_reach_the_server_without_content(
    made: list[tb.Bench], target: Any, action: str
) -> None:
    # content given with a non-accept action is dropped, as the protocol says
    bench = bench_with(made, target,
                       elicitation=lambda r: t.ElicitResult(action=action, content={"x": "y"}))
    assert bench.call("beyond-ask_user").data == {"action": action, "content": None}


def test_sdk_result_types_pass_through(made: list[tb.Bench]) -> None:
    async def sample(request: t.CreateMessageRequestParams) -> t.CreateMessageResult:
        return t.CreateMessageResult(role="assistant", model="my-model", stop_reason="maxTokens",
                                     content=t.TextContent(type="text", text="short"))

    bench = bench_with(made, in_process, sampling=sample)
    assert bench.call("beyond-ask_llm", question="q").data == {
        "text": "short", "model": "my-model", "role": "assistant", "stop_reason": "maxTokens"}


def test_without_a_handler_the_capability_is_not_advertised(made: list[tb.Bench]) -> None:
    bench = bench_with(made, in_process, sampling=lambda r: "x")
    with pytest.raises(tb.ToolError, match="elicitation") as caught:
        bench.call("beyond-ask_user")
    assert "capability" in str(caught.value)
    with pytest.raises(tb.ToolError, match="roots"):
        bench.call("beyond-client_roots")
    assert bench.call("beyond-ask_llm", question="q").data["text"] == "x"


@pytest.mark.parametrize("target", TARGETS)
def test_changing_roots_notifies_connected_servers(
    made: list[tb.Bench], target: Any, tmp_path: Path
) -> None:
    bench = bench_with(made, target, roots=[])
    assert bench.call("beyond-client_roots").data == {"result": []}
    bench.roots = [tmp_path / "a", "file:///b"]
    assert bench.call("beyond-client_roots").data == {"result": [
        {"uri": (tmp_path / "a").resolve().as_uri(), "name": "a"},
        {"uri": "file:///b", "name": "b"}]}


ROOT_WATCH = """
import mcp.types as t
from mcp.server.mcpserver import MCPServer

server = MCPServer("rootwatch")
count = [0]


async def changed(context, params):
    count[0] += 1


server._lowlevel_server.add_notification_handler(
    "notifications/roots/list_changed", t.NotificationParams, changed)


@server.tool()
def heard() -> int:
    return count[0]


server.run("stdio")
"""


@pytest.mark.slow
def test_roots_list_changed_arrives_at_a_2025_server(made: list[tb.Bench], tmp_path: Path) -> None:
    """On 2025-11-25 the server hears ``notifications/roots/list_changed``. (On 2026-07-28
    roots are deprecated and the SDK's server does not take the notification; it asks for
    the roots with each request, so the first test above sees new roots anyway.)"""
    script = tmp_path / "rootwatch.py"
    script.write_text(ROOT_WATCH, encoding="utf-8")
    bench = tb.Bench(timeout=30, roots=["/tmp"])
    made.append(bench)
    bench.connect("watch", [sys.executable, str(script)])
    assert bench.servers.set_index("name").loc["watch", "protocol"] == "2025-11-25"
    assert bench.call("watch-heard").data == {"result": 0}
    for expected, roots in ((1, ["/srv"]), (2, [])):
        bench.roots = roots
        deadline = time.monotonic() + 10
        while bench.call("watch-heard").data["result"] < expected:
            assert time.monotonic() < deadline, "the server never heard of the change"
            time.sleep(0.05)
        assert bench.call("watch-heard").data == {"result": expected}


@pytest.mark.parametrize("bad", ["http://example.com/x", "", 42, "ftp://h/p"])
def test_a_root_that_is_not_a_path_or_file_uri_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="root"):
        tb.Bench(roots=[bad])


@pytest.mark.parametrize("bad", [42, "always", ["ask"]])
def test_a_handler_that_is_not_a_function_or_ask_is_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match="sampling handler"):
        tb.Bench(sampling=bad)
    with pytest.raises(TypeError, match="elicitation handler"):
        tb.Bench(elicitation=bad)


# -- a handler that fails gives the server an error reply, and the call says so --------------
def _boom(request: Any) -> str:
    raise ValueError("no <b>LLM</b> here")


async def _garbage(request: Any) -> Any:
    return 42


FAILURES = [
    ("sampling", _boom, "ask_llm", {"question": "q"}, r"handler _boom\(\) raised ValueError"),
    ("sampling", _garbage, "ask_llm", {"question": "q"}, r"returned int, not a str"),
    ("sampling", lambda r: {"role": "assistant"}, "ask_llm", {"question": "q"},
     r"mapping that is not a CreateMessageResult"),
    ("elicitation", _garbage, "ask_user", {}, r"returned int"),
    ("elicitation", lambda r: {"action": "maybe"}, "ask_user", {}, r"'maybe', not one of"),
    ("elicitation", lambda r: {"action": "accept", "content": {**TRIP, "nights": 99}},
     "ask_user", {}, r"does not match the requested schema: nights"),
    ("elicitation", lambda r: {"action": "accept", "content": ["Lima"]}, "ask_user", {},
     r"content is list, not a mapping"),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("kind", "handler", "tool", "args", "why"), FAILURES,
                         ids=[f"{f[0]}-{i}" for i, f in enumerate(FAILURES)])
def test_a_failing_handler_fails_the_call_clearly(
    made: list[tb.Bench], target: Any, kind: str, handler: Any, tool: str,
    args: dict[str, Any], why: str
) -> None:
    bench = bench_with(made, target, **{kind: handler})
    with pytest.raises(tb.ToolError, match=why) as caught:
        bench.call(f"beyond-{tool}", args)
    assert caught.value.disposition == tb.Disposition.IN_DOUBT
    assert kind in caught.value.detail
    # the connection stays up, and the failure is a record like any other
    assert bench.servers.set_index("name").loc["beyond", "status"] == "connected"
    records = bench.records
    assert not records.iloc[-1]["ok"]
    assert records.iloc[-1]["disposition"] == "in_doubt"
    assert kind in records.iloc[-1]["error"]
    assert bench.call("beyond-countdown", steps=1, delay_ms=0).text == "counted 1 steps"


def test_a_hanging_function_is_cut_off_by_its_bound() -> None:
    def hang(request: Any) -> str:
        time.sleep(5)
        return "late"

    requests = sr.ServerRequests(sampling=hang, function_timeout=0.5)

    async def body() -> tuple[float, str]:
        async with McpClient(beyond.create(), name="beyond", server_requests=requests) as client:
            started = time.monotonic()
            with pytest.raises(tb.ToolError) as caught:
                await client.call(tb.ToolId("beyond", "ask_llm"), {"question": "q"})
            return time.monotonic() - started, caught.value.detail

    elapsed, detail = anyio.run(body)
    assert 0.4 < elapsed < 4.5  # the handler's bound, not its 5 s sleep
    assert "did not answer within 0.5 s" in detail


def test_a_slow_sync_handler_does_not_stall_other_calls(made: list[tb.Bench]) -> None:
    """A sync function runs in a worker thread: the shared loop keeps serving others."""
    release = threading.Event()

    def slow(request: Any) -> str:
        release.wait(10)
        return "done"

    bench = bench_with(made, in_process, sampling=slow)
    other = tb.Bench(timeout=30)
    made.append(other)
    other.connect("beyond", beyond.create())
    future = get_loop().submit(lambda: bench.acall("beyond-ask_llm", question="q"))
    time.sleep(0.2)
    started = time.monotonic()
    assert other.call("beyond-countdown", steps=1, delay_ms=0).text == "counted 1 steps"
    assert time.monotonic() - started < 2.0
    assert not future.done()
    release.set()
    assert future.result(timeout=20).data["text"] == "done"


def test_ask_outside_a_notebook_fails_the_call_with_the_reason(made: list[tb.Bench]) -> None:
    with pytest.warns(UserWarning, match="nobody can answer here"):
        bench = bench_with(made, in_process, elicitation="ask")
    with pytest.raises(tb.ToolError, match="needs a person at a Jupyter notebook") as caught:
        bench.call("beyond-ask_user")
    assert "give the bench a function instead" in caught.value.detail


def test_ask_outside_a_notebook_is_said_once_at_the_bench_on_the_callers_line(
    made: list[tb.Bench]
) -> None:
    # This process is no kernel: "ask" has nobody to ask. One warning, at Bench(...).
    with pytest.warns(UserWarning) as caught:
        bench = tb.Bench(sampling="ask", elicitation="ask")
    made.append(bench)
    assert len(caught) == 1
    warning = caught[0]
    assert warning.filename == __file__  # the user's own line, not toolbench's
    text = str(warning.message)
    assert "sampling='ask' and elicitation='ask' need a person at a Jupyter notebook" in text
    assert "this process is not a Jupyter kernel" in text and "Give the bench a function" in text
    with pytest.warns(UserWarning, match=r"^elicitation='ask' needs a person"):
        made.append(tb.Bench(elicitation="ask", sampling=lambda request: "ok"))


def test_ask_with_a_person_to_ask_or_a_function_says_nothing(
    made: list[tb.Bench], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Present:
        prepared = 0

        def available(self) -> str | None:
            return None

        def prepare(self) -> None:
            self.prepared += 1

    present = Present()
    monkeypatch.setattr(sr, "_asker", present)
    made.append(tb.Bench(sampling="ask", elicitation="ask"))  # warnings are errors here
    made.append(tb.Bench(sampling=lambda request: "ok", elicitation=None))
    assert present.prepared == 1
    monkeypatch.setattr(sr, "_asker", None)
    with pytest.warns(UserWarning, match="notebook layer is not loaded"):
        made.append(tb.Bench(sampling="ask"))


# -- hostile requests ----------------------------------------------------------------------
def _many() -> Sample:
    messages = [t.SamplingMessage(role="user" if i % 2 == 0 else "assistant",
                                  content=t.TextContent(type="text", text=f"m{i} <b>x</b>"))
                for i in range(10_000)]
    return Sample(messages, max_tokens=10)


class Evil(BaseModel):
    """A form with a pathological pattern and markup in its texts."""

    code: str = Field(description="<script>alert(1)</script>", pattern=r"^(a+)+$")


class Remote(BaseModel):
    """A form with a remote ``$ref`` (the whole schema is then not checked locally)."""

    code: str = Field(description="a code")
    ref: str = Field(default="", json_schema_extra={"$ref": "http://127.0.0.1:9/x.json"})


def _evil_form() -> Elicit[Evil]:
    return Elicit("<img src=x onerror=alert(1)>", Evil)


def _remote_form() -> Elicit[Remote]:
    return Elicit("fill in", Remote)


async def _flood(reply: Annotated[t.CreateMessageResult, Resolve(_many)]) -> str:
    content = reply.content
    return content.text if isinstance(content, t.TextContent) else "?"


async def _evil(answer: Annotated[ElicitationResult[Evil], Resolve(_evil_form)]) -> str:
    return answer.action


async def _remote(answer: Annotated[ElicitationResult[Remote], Resolve(_remote_form)]) -> str:
    return answer.action


def hostile_server() -> MCPServer:
    server = MCPServer("hostile")
    server.tool(name="flood")(_flood)
    server.tool(name="evil")(_evil)
    server.tool(name="remote")(_remote)
    return server


def test_ten_thousand_sampling_messages_reach_a_function_whole(made: list[tb.Bench]) -> None:
    seen: list[int] = []

    def count(request: t.CreateMessageRequestParams) -> str:
        seen.append(len(request.messages))
        return f"{len(request.messages)} messages"

    bench = tb.Bench(timeout=60, sampling=count)
    made.append(bench)
    bench.connect("hostile", hostile_server())
    _preload.start().result(timeout=120)  # jsonschema's first import is not timed
    started = time.monotonic()
    assert bench.call("hostile-flood").text == "10000 messages"
    assert seen == [10_000] and time.monotonic() - started < 30


def test_pathological_pattern_is_checked_in_linear_time(made: list[tb.Bench]) -> None:
    """``^(a+)+$`` against 40 a's and a b would take Python's re hours; re2 refuses it fast."""
    bench = tb.Bench(timeout=30, elicitation=lambda r: {
        "action": "accept", "content": {"code": "a" * 40 + "b"}})
    made.append(bench)
    bench.connect("hostile", hostile_server())
    _preload.start().result(timeout=120)  # jsonschema's first import is not timed
    started = time.monotonic()
    with pytest.raises(tb.ToolError, match=r"does not match the requested schema: code"):
        bench.call("hostile-evil")
    assert time.monotonic() - started < 10
    good = tb.Bench(timeout=30, elicitation=lambda r: {
        "action": "accept", "content": {"code": "aaaa"}})
    made.append(good)
    good.connect("hostile", hostile_server())
    assert good.call("hostile-evil").text == "accept"


def test_a_remote_ref_is_never_fetched(made: list[tb.Bench]) -> None:
    """The schema's remote ``$ref`` is not resolved (port 9 would refuse anyway; a fetch
    attempt would surface as a handler failure): the answer goes to the server unchecked
    for that field, and the notes say so."""
    captured: list[dict[str, Any]] = []

    def answer(request: t.ElicitRequestFormParams) -> dict[str, Any]:
        captured.append(request.requested_schema)
        return {"action": "accept", "content": {"code": "aa", "ref": "anything"}}

    bench = tb.Bench(timeout=30, elicitation=answer)
    made.append(bench)
    bench.connect("hostile", hostile_server())
    assert bench.call("hostile-remote").text == "accept"
    notes = sr.schema_notes(captured[0])
    assert any("http://127.0.0.1:9/x.json" in note for note in notes), notes


# -- units: the adapters -------------------------------------------------------------------
def test_sampling_result_conversions() -> None:
    made = sr.sampling_result("hi", "function")
    assert isinstance(made, t.CreateMessageResult) and made.content.text == "hi"  # type: ignore[union-attr]
    assert made.model == "toolbench-function"
    given = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "x"}}
    assert sr.sampling_result(given, "function").model == "m"  # type: ignore[union-attr]
    with pytest.raises(sr.HandlerError, match="NoneType"):
        sr.sampling_result(None, "function")


def test_failures_are_remembered_per_server_and_capped() -> None:
    requests = sr.ServerRequests(sampling=_boom)
    params = t.CreateMessageRequestParams(messages=[], max_tokens=1)
    started = time.perf_counter()
    for _ in range(sr.MAX_FAILURES + 10):
        reply = asyncio.run(requests.answer_sampling("one", params))
        assert isinstance(reply, t.ErrorData) and reply.data == {sr.MARK: "sampling"}
        assert reply.code == t.INTERNAL_ERROR and "ValueError" in reply.message
    assert len(requests.failures_since("one", started)) == sr.MAX_FAILURES
    assert requests.failures_since("two", started) == []
