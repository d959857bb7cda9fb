"""Toolset: dispatch and refusals, caps and lanes, locks, the grace warning, three transports."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from toolbench._core.client import Result, ToolClient
from toolbench._core.errors import Malformed, Refused, ToolFailed, Unreachable
from toolbench._core.ids import Destination, Provenance, ToolId
from toolbench._core.schema import preload as _preload
from toolbench._routing.router import ToolRouter
from toolbench._transports.toolset.toolset import ToolContext, Toolset

pytestmark = pytest.mark.anyio

APP = Path(__file__).parent / "servers" / "toolset_app.py"
BOUND = 30.0  # seconds: the ceiling for any wait in these tests


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _load_app() -> ModuleType:
    spec = importlib.util.spec_from_file_location("toolset_app", APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


app = _load_app()


class Gauge:
    """Counts how many blocks run at once, and the most ever seen."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.total = 0

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self.now += 1
        self.total += 1
        self.peak = max(self.peak, self.now)
        try:
            yield
        finally:
            self.now -= 1


# -- help and registration -------------------------------------------------------------------
async def test_help_lists_every_tool_but_itself() -> None:
    ts = app.build()
    manifest = await ts.deliver({"tool": "help"})
    assert manifest["name"] == "notes-app"
    assert manifest["description"] == "Notes <b>and</b> sums."
    names = [t["name"] for t in manifest["tools"]]
    assert names == ["add", "echo", "greet", "put", "boom", "route"]
    add = manifest["tools"][0]
    assert add == {"name": "add", "description": "Add two integers.",
                   "inputSchema": app.ADD_SCHEMA}
    # none given: MCP requires one, so the manifest shows the schema the tool list shows
    assert manifest["tools"][1]["inputSchema"] == {"type": "object"}
    specs = {spec.name: spec for spec in ts.specs()}
    assert manifest["tools"][1]["inputSchema"] == specs["echo"].input_schema
    specs = await ts.list_tools("notes")
    assert [s.name for s in specs] == ["help", *names]
    assert specs[2].input_schema == {"type": "object"}  # MCP still needs one on the wire


async def test_help_name_defaults_to_address() -> None:
    ts = Toolset("plain")
    assert await ts.deliver({"tool": "help", "ignored": 1}) == {
        "name": "plain", "description": "", "tools": []}


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8"])
def test_max_concurrent_must_be_positive_int_or_none(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"max_concurrent must be a positive int or None"):
        Toolset("x", max_concurrent=bad)
    ts = Toolset("x", max_concurrent=None)
    with pytest.raises(ValueError, match=r"lane 'a' max_concurrent"):
        ts.lane("a", max_concurrent=bad)


def test_registration_mistakes_raise_at_once() -> None:
    with pytest.raises(ValueError, match="invalid server name"):
        Toolset("bad name")
    with pytest.raises(ValueError, match="connect_grace"):
        Toolset("x", connect_grace=-1)
    ts = Toolset("x")
    ts.lane("a", max_concurrent=1)
    with pytest.raises(ValueError, match="already declared"):
        ts.lane("a", max_concurrent=2)
    with pytest.raises(ValueError, match="'help' is reserved"):
        ts.tool("help")
    with pytest.raises(ValueError, match="invalid tool name"):
        ts.tool("has space")
    with pytest.raises(ValueError, match="lane 'b' is not declared"):
        ts.tool("t", lane="b")
    with pytest.raises(ValueError, match=r"type.*object"):
        ts.tool("t", input_schema={"type": "array"})
    with pytest.raises(ValueError, match="invalid input_schema"):
        ts.tool("t", input_schema={"type": "object", "properties": {"a": {"type": 5}}})

    @ts.tool("t")
    def t(data: dict[str, Any]) -> int:
        return 1

    with pytest.raises(ValueError, match="'t' is already registered"):
        ts.tool("t")
    with pytest.raises(TypeError, match=r"takes \(data\) or \(data, ctx\)"):
        ts.tool("none")(lambda: 1)
    with pytest.raises(TypeError, match=r"takes \(data\) or \(data, ctx\)"):
        ts.tool("three")(lambda a, b, c: 1)
    assert ts.names() == ["help", "t"]


@pytest.mark.parametrize(("schema", "words"), [
    ({"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/a.json"}}},
     r"refers outside itself \(\$ref 'http://127.0.0.1:9/a.json'\)"),
    ({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"}}},
     "refers outside itself"),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)"}}},
     "re2 cannot compile it"),
    ({"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"}, "draft 3"),
    ({"type": "object", "default": float("nan"), "x": {1, 2}}, "not JSON"),
])
def test_a_schema_the_toolset_cannot_check_in_full_is_refused_at_registration(
    schema: dict[str, Any], words: str
) -> None:
    ts = Toolset("x")
    with pytest.raises(ValueError, match=words) as info:
        ts.tool("t", input_schema=schema)
    assert "tool 't'" in str(info.value)
    assert ts.names() == ["help"]


async def test_requests_are_checked_with_re2_and_within_the_budget() -> None:
    ts = Toolset("guard")
    ran: list[str] = []
    defs: dict[str, Any] = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"},
                                                {"$ref": f"#/$defs/d{i + 1}"}]}
                            for i in range(30)}
    defs["d30"] = {"type": "string"}

    @ts.tool("evil", input_schema={"type": "object", "properties": {
        "s": {"type": "string", "pattern": "(a+)+$"}}})
    def evil(data: dict[str, Any]) -> str:
        ran.append("evil")
        return "ran"

    # Unique content: equal schemas share one verdict, and test_validate drives this shape.
    @ts.tool("blowup", input_schema={"type": "object", "$defs": defs,
                                     "description": f"blowup {time.monotonic_ns()}",
                                     "properties": {"a": {"$ref": "#/$defs/d0"}}})
    def blowup(data: dict[str, Any]) -> str:
        ran.append("blowup")
        return "ran"

    _preload.start().result(timeout=120)  # jsonschema's first import is not timed
    started = time.monotonic()
    with pytest.raises(Refused, match=r"field 's'.*rule: pattern"):
        await ts.deliver({"tool": "evil", "s": "a" * 30 + "b"})
    assert time.monotonic() - started < 1.0
    assert await ts.deliver({"tool": "evil", "s": "aaa"}) == "ran"
    for _ in range(2):  # the server refuses what it cannot check, every time
        started = time.monotonic()
        with pytest.raises(Refused, match=r"could not be checked.*nothing ran"):
            await ts.deliver({"tool": "blowup", "a": 1})
        assert time.monotonic() - started < 3.0
    assert await ts.deliver({"tool": "blowup", "a": "x"}) == "ran"  # the first branch holds
    assert ran == ["evil", "blowup"]


# -- dispatch and every refusal --------------------------------------------------------------
def _counted() -> tuple[Toolset, list[str]]:
    ran: list[str] = []
    ts = Toolset("box", max_concurrent=2)
    ts.lane("one", max_concurrent=1)

    @ts.tool("add", input_schema=app.ADD_SCHEMA)
    async def add(data: dict[str, Any]) -> int:
        ran.append("add")
        return int(data["a"] + data["b"])

    @ts.tool("stray", lane=lambda d: d.get("lane"))
    async def stray(data: dict[str, Any], ctx: ToolContext) -> str | None:
        ran.append("stray")
        return ctx.lane

    @ts.tool("crash")
    def crash(data: dict[str, Any]) -> None:
        ran.append("crash")
        raise KeyError("gone")

    return ts, ran


REFUSALS: list[tuple[object, str]] = [
    ({}, r'no "tool" field.*\{"tool": "help"\}'),
    ({"tool": ""}, r'no "tool" field.*\{"tool": "help"\}'),
    ({"tool": None, "a": 1}, r'no "tool" field'),
    ({"tool": "nope"}, r"unknown tool 'nope' on 'box'; known tools: add, crash, help, stray$"),
    ([{"tool": "add"}], r"poison payload.*got list"),
    ("add", r"poison payload.*got str"),
    (None, r"poison payload.*got NoneType"),
    ({"tool": 7}, r'poison payload.*"tool" must be a string, not int 7'),
    ({"tool": ["add"]}, r'poison payload.*"tool" must be a string'),
    ({"tool": "stray", "lane": "ghost"}, r"chose 'ghost', which is not a declared lane"),
    ({"tool": "stray", "lane": 3}, r"chose 3, which is not a declared lane"),
    ({"tool": "add", "a": 1},
     r"the arguments: 'b' is a required property \(rule: required=\[\"a\", \"b\"\]\)"),
    ({"tool": "add", "a": "1", "b": 2},
     r"field 'a': '1' is not of type 'integer' \(rule: type=\"integer\"\)"),
    ({"tool": "add", "a": 1, "b": 2, "c": 3}, r"rule: additionalProperties"),
    ({"tool": "add", 5: 1}, r"argument names must be strings"),
]


@pytest.mark.parametrize(("payload", "message"), REFUSALS)
async def test_refused_runs_nothing_and_dispatcher_keeps_serving(
    payload: object, message: str
) -> None:
    ts, ran = _counted()
    with pytest.raises(Refused, match=message) as caught:
        await ts.deliver(payload)
    assert caught.value.disposition == "did_not_happen"
    assert ran == []
    assert not ts.busy
    assert await ts.deliver({"tool": "add", "a": 2, "b": 3}) == 5
    assert ran == ["add"]


async def test_handler_exception_is_tool_failed_and_dispatcher_keeps_serving() -> None:
    ts, ran = _counted()
    with pytest.raises(ToolFailed, match=r"KeyError: 'gone'") as caught:
        await ts.deliver({"tool": "crash"})
    assert caught.value.tool == ToolId("box", "crash")
    assert caught.value.disposition == "landed"
    assert ran == ["crash"]
    assert await ts.deliver({"tool": "stray", "lane": "one"}) == "one"
    assert await ts.deliver({"tool": "stray"}) is None


async def test_lane_function_that_raises_is_refused() -> None:
    ts = Toolset("x")

    @ts.tool("t", lane=lambda d: d["missing"])
    async def t(data: dict[str, Any]) -> int:
        raise AssertionError("must not run")

    with pytest.raises(Refused, match="lane function of 't' raised KeyError"):
        await ts.deliver({"tool": "t"})


async def test_data_is_the_payload_minus_tool_and_a_copy() -> None:
    ts = Toolset("x")
    seen: list[tuple[dict[str, Any], str, str | None]] = []

    @ts.tool("look")
    def look(data: dict[str, Any], ctx: ToolContext) -> str:
        seen.append((data, ctx.tool, ctx.lane))
        data["mutated"] = True
        return "ok"

    payload = {"tool": "look", "q": [1, 2]}
    assert await ts.deliver(payload) == "ok"
    assert seen == [({"q": [1, 2], "mutated": True}, "look", None)]
    assert payload == {"tool": "look", "q": [1, 2]}


# -- concurrency -----------------------------------------------------------------------------
async def test_overall_cap_is_never_exceeded() -> None:
    ts = Toolset("cap", max_concurrent=3)
    gauge = Gauge()
    ts.lane("wide", max_concurrent=10)

    @ts.tool("work", lane=lambda d: "wide" if d["i"] % 2 else None)
    async def work(data: dict[str, Any]) -> int:
        async with gauge.running():
            await anyio.sleep(0.002 * (data["i"] % 4))
        return int(data["i"])

    results: list[int] = []

    async def one(i: int) -> None:
        results.append(await ts.deliver({"tool": "work", "i": i}))

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            for i in range(120):
                tg.start_soon(one, i)
    assert sorted(results) == list(range(120))
    assert gauge.total == 120
    assert gauge.peak == 3  # reached, never passed
    assert not ts.busy


async def test_no_cap_means_no_cap() -> None:
    ts = Toolset("open", max_concurrent=None)
    gauge = Gauge()
    release = anyio.Event()

    @ts.tool("hold")
    async def hold(data: dict[str, Any]) -> None:
        async with gauge.running():
            await release.wait()

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            for _ in range(50):
                tg.start_soon(ts.deliver, {"tool": "hold"})
            while gauge.now < 50:
                await anyio.sleep(0.005)
            release.set()
    assert gauge.peak == 50


async def test_each_lane_cap_is_never_exceeded() -> None:
    ts = Toolset("lanes", max_concurrent=8)
    caps = {"a": 1, "b": 2, "c": 3}
    gauges = {lane: Gauge() for lane in caps}
    overall = Gauge()
    for lane, cap in caps.items():
        ts.lane(lane, max_concurrent=cap)

    @ts.tool("work", lane=lambda d: d["lane"])
    async def work(data: dict[str, Any], ctx: ToolContext) -> None:
        assert ctx.lane == data["lane"]
        async with overall.running(), gauges[data["lane"]].running():
            await anyio.sleep(0.001)

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            for i in range(90):
                tg.start_soon(ts.deliver, {"tool": "work", "lane": "abc"[i % 3]})
    assert {lane: g.peak for lane, g in gauges.items()} == caps
    assert {lane: g.total for lane, g in gauges.items()} == {"a": 30, "b": 30, "c": 30}
    assert overall.peak <= 6


async def test_a_busy_lane_blocks_no_other_lane() -> None:
    # Two toolset slots. If queued lane-A requests took slots before their lane, A's queue
    # would hold both slots and B would wait behind it.
    ts = Toolset("hol", max_concurrent=2)
    ts.lane("A", max_concurrent=1)
    ts.lane("B", max_concurrent=1)
    release = anyio.Event()
    a_started = anyio.Event()
    a_done: list[int] = []

    @ts.tool("slow", lane="A")
    async def slow(data: dict[str, Any]) -> None:
        a_started.set()
        await release.wait()
        a_done.append(data["i"])

    @ts.tool("fast", lane="B")
    async def fast(data: dict[str, Any]) -> str:
        return "b done"

    async with anyio.create_task_group() as tg:
        with anyio.fail_after(BOUND):
            for i in range(21):
                tg.start_soon(ts.deliver, {"tool": "slow", "i": i})
            await a_started.wait()
            await anyio.sleep(0.05)  # let all 21 queue up
            assert ts.in_flight == 21
            with anyio.fail_after(5):
                assert await ts.deliver({"tool": "fast"}) == "b done"
            assert a_done == []  # A's queue is still waiting: B did not wait for it
            assert ts.in_flight == 21
            release.set()
    assert sorted(a_done) == list(range(21))


async def test_exclusive_serialises_per_key_not_across_keys() -> None:
    ts = Toolset("locks", max_concurrent=None)
    gauges = {"k1": Gauge(), "k2": Gauge()}
    both = Gauge()

    @ts.tool("touch")
    async def touch(data: dict[str, Any], ctx: ToolContext) -> None:
        key = data["key"]
        await anyio.sleep(0)  # the rest of the handler is concurrent
        async with ctx.exclusive(key), gauges[key].running(), both.running():
            await anyio.sleep(0.005)

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(ts.deliver, {"tool": "touch", "key": f"k{i % 2 + 1}"})
    assert gauges["k1"].peak == 1 and gauges["k2"].peak == 1
    assert gauges["k1"].total == 10 and gauges["k2"].total == 10
    assert both.peak == 2  # two keys did overlap
    # Unused locks are dropped: tests/test_lanes.py checks it on the lanes, which keep them.


async def test_toolset_exclusive_from_outside_a_handler() -> None:
    ts = Toolset("locks")
    order: list[str] = []

    @ts.tool("write")
    async def write(data: dict[str, Any], ctx: ToolContext) -> None:
        async with ctx.exclusive("db"):
            order.append("handler")

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg, ts.exclusive("db"):
            tg.start_soon(ts.deliver, {"tool": "write"})
            await anyio.sleep(0.05)
            assert ts.busy and order == []
            order.append("outside")
    assert order == ["outside", "handler"]
    with pytest.raises(TypeError, match="hashable"):
        async with ts.exclusive(["not", "hashable"]):  # type: ignore[arg-type]
            pass


async def test_busy_flips_with_waiting_and_running_requests() -> None:
    ts = Toolset("busy", max_concurrent=1)
    gate = anyio.Event()
    entered = anyio.Event()

    @ts.tool("hold")
    async def hold(data: dict[str, Any]) -> None:
        entered.set()
        await gate.wait()

    assert not ts.busy
    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ts.deliver, {"tool": "hold"})
            tg.start_soon(ts.deliver, {"tool": "hold"})  # waits for the one slot
            await entered.wait()
            assert ts.busy and ts.in_flight == 2
            gate.set()
    assert not ts.busy and ts.in_flight == 0


async def test_cancelled_request_gives_back_its_slot() -> None:
    ts = Toolset("cancel", max_concurrent=1)
    entered = anyio.Event()

    @ts.tool("hang")
    async def hang(data: dict[str, Any]) -> None:
        entered.set()
        await anyio.sleep_forever()

    @ts.tool("quick")
    async def quick(data: dict[str, Any]) -> str:
        return "ok"

    with anyio.fail_after(BOUND):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ts.deliver, {"tool": "hang"})
            await entered.wait()
            tg.cancel_scope.cancel()
        assert not ts.busy
        assert await ts.deliver({"tool": "quick"}) == "ok"


def test_an_idle_toolset_moves_between_event_loops() -> None:
    ts = app.build()
    assert anyio.run(ts.deliver, {"tool": "add", "a": 1, "b": 1}) == 2
    assert anyio.run(ts.deliver, {"tool": "put", "key": "k", "text": "t"}) == {
        "stored": "k", "count": 1}


# -- the ToolClient face ---------------------------------------------------------------------
async def test_call_converts_values_like_every_other_transport() -> None:
    ts = app.build()
    assert isinstance(ts, ToolClient)
    assert ts.servers() == ["notes"]
    assert ts.destination(ToolId("notes", "add")) == Destination.LOCAL
    add = await ts.call(ToolId("notes", "add"), {"a": 2, "b": 40})
    assert add.structured == {"result": 42} and add.text == "42"
    echo = await ts.call(ToolId("notes", "echo"), {"x": [1, "é"]})
    assert echo.structured == {"x": [1, "é"]} and echo.data == {"x": [1, "é"]}
    greet = await ts.call(ToolId("notes", "greet"), {"who": "ann"})
    assert greet.structured is None and greet.text == "hello ann from greet (lane None)"
    with pytest.raises(ToolFailed) as failed:
        await ts.call(ToolId("notes", "boom"), {"why": "test"})
    assert isinstance(failed.value.result, Result) and failed.value.result.is_error
    assert failed.value.result.text == "RuntimeError: boom: test"
    with pytest.raises(Refused, match='argument named "tool"'):
        await ts.call(ToolId("notes", "echo"), {"tool": "x"})
    with pytest.raises(Refused, match="unknown tool 'ghost'") as refused:
        await ts.call(ToolId("notes", "ghost"), {})
    assert refused.value.tool == ToolId("notes", "ghost")
    with pytest.raises(Unreachable, match="answers for 'notes' only"):
        await ts.call(ToolId("other", "add"), {})
    with pytest.raises(Unreachable):
        await ts.list_tools("other")


async def test_a_non_json_value_is_malformed() -> None:
    ts = Toolset("x")

    @ts.tool("odd")
    def odd(data: dict[str, Any]) -> object:
        return {1, 2}

    assert await ts.deliver({"tool": "odd"}) == {1, 2}  # deliver hands back the value as is
    with pytest.raises(Malformed, match="not JSON"):
        await ts.call(ToolId("x", "odd"), {})


async def test_through_a_router() -> None:
    router = ToolRouter()
    ts = app.build()
    router.server("notes", ts)
    assert router.servers() == ["notes"]
    assert [s.name for s in await router.list_tools("notes")][:2] == ["help", "add"]
    result = await router.call(ToolId("notes", "add"), {"a": 20, "b": 22})
    assert result.structured == {"result": 42}
    assert result.tool == ToolId("notes", "add")
    helped = await router.call(ToolId("notes", "help"), {})
    assert helped.structured is not None and helped.structured["name"] == "notes-app"
    with pytest.raises(Refused, match="required property"):
        await router.call(ToolId("notes", "add"), {"a": 1})
    with pytest.raises(Unreachable, match="no route for server 'elsewhere'"):
        await router.call(ToolId("elsewhere", "add"), {})


# -- one toolset, three transports -----------------------------------------------------------
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("help", {}),
    ("add", {"a": 2, "b": 3}),
    ("echo", {"x": [1, "two", {"3": None}]}),
    ("greet", {"who": "<b>ann</b>", "remote": True}),
    ("put", {"key": "k", "text": "first"}),
    ("put", {"key": "j", "text": "second"}),
    ("boom", {"why": "expected"}),
    ("add", {"a": "x", "b": 1}),
    ("ghost", {}),
    ("route", {}),
]
Outcome = tuple[Any, ...]


async def _in_process() -> tuple[list[dict[str, Any]], list[Outcome]]:
    ts = app.build()
    specs = [{"name": s.name, "description": s.description, "inputSchema": s.input_schema}
             for s in await ts.list_tools("notes")]
    outcomes: list[Outcome] = []
    for name, args in CALLS:
        try:
            r = await ts.call(ToolId("notes", name), args)
            outcomes.append(("ok", r.structured, r.text))
        except ToolFailed as exc:
            outcomes.append(("failed", exc.detail))
        except Refused as exc:
            outcomes.append(("refused", exc.detail))
    return specs, outcomes


async def _over_mcp(client: Client) -> tuple[list[dict[str, Any]], list[Outcome]]:
    listed = await client.list_tools()
    specs = [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
             for t in listed.tools]
    outcomes: list[Outcome] = []
    for name, args in CALLS:
        try:
            r = await client.call_tool(name, args)
        except MCPError as exc:
            assert exc.code == types.INVALID_PARAMS, exc
            outcomes.append(("refused", exc.message))
            continue
        text = "\n".join(b.text for b in r.content if isinstance(b, types.TextContent))
        outcomes.append(("failed", text) if r.is_error else ("ok", r.structured_content, text))
    return specs, outcomes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    port = _free_port()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, str(APP), "streamable-http", "--port", str(port)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )
        try:
            deadline = time.monotonic() + BOUND
            while True:
                assert proc.poll() is None, f"server exited: {err.seek(0) or err.read()}"
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "HTTP toolset never answered"
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


async def _with_client(target: Any, use: Callable[[Client], Awaitable[Any]]) -> Any:
    client = target if isinstance(target, Client) else Client(target)
    with anyio.fail_after(BOUND):
        async with client:
            return await use(client)


@pytest.mark.slow
async def test_same_answers_in_process_over_stdio_and_http(http_server: str) -> None:
    local = await _in_process()
    with tempfile.TemporaryFile("w+") as err:
        params = StdioServerParameters(command=sys.executable, args=[str(APP), "stdio"],
                                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
        stdio = await _with_client(stdio_client(params, errlog=err), _over_mcp)
    http = await _with_client(http_server, _over_mcp)

    specs, outcomes = local
    assert [s["name"] for s in specs] == ["help", "add", "echo", "greet", "put", "boom", "route"]
    assert stdio[0] == specs and http[0] == specs
    assert stdio[1] == outcomes and http[1] == outcomes
    # and the outcomes are the ones the toolset means, not merely equal
    help_manifest = outcomes[0][1]
    assert help_manifest == app.build().manifest()
    assert outcomes[1] == ("ok", {"result": 5}, "5")
    assert outcomes[3] == ("ok", None, "hello <b>ann</b> from greet (lane net)")
    assert outcomes[5] == ("ok", {"stored": "j", "count": 2}, '{"stored": "j", "count": 2}')
    assert outcomes[6] == ("failed", "RuntimeError: boom: expected")
    assert outcomes[7][0] == "refused" and "rule: type" in outcomes[7][1]
    assert outcomes[8][0] == "refused" and "known tools: add, boom, echo" in outcomes[8][1]
    assert outcomes[9][0] == "refused" and "not a declared lane" in outcomes[9][1]


async def test_same_answers_over_in_memory_json_rpc() -> None:
    local = await _in_process()
    wire = await _with_client(Client(app.build().mcp_server(), mode="legacy"), _over_mcp)
    assert wire == local


async def test_provenance_and_lane_reach_the_handler_on_every_face() -> None:
    ts = Toolset("prov")
    ts.lane("label", max_concurrent=None)  # a lane as a label only: no cap of its own
    seen: list[tuple[dict[str, Any] | None, str | None]] = []

    @ts.tool("who", lane="label")
    async def who(data: dict[str, Any], ctx: ToolContext) -> str:
        seen.append((ctx.provenance.as_dict() if ctx.provenance else None, ctx.lane))
        return "ok"

    await ts.deliver({"tool": "who"})
    await ts.call(ToolId("prov", "who"), {}, Provenance(run="r1", agent="a"))
    meta: Any = {Provenance.META_KEY: {"run": "r2", "case": 3}}
    garbage: Any = {Provenance.META_KEY: "garbage"}
    async with Client(ts.mcp_server(), mode="legacy") as client:
        with anyio.fail_after(BOUND):
            await client.call_tool("who", {}, meta=meta)
            await client.call_tool("who", {}, meta=garbage)
    assert seen == [(None, "label"), ({"run": "r1", "agent": "a"}, "label"),
                    ({"run": "r2", "case": 3}, "label"), (None, "label")]


async def test_serve_rejects_unknown_transport_and_bad_port() -> None:
    ts = Toolset("never-served", connect_grace=60)
    with pytest.raises(ValueError, match="unknown transport 'carrier-pigeon'"):
        await ts.serve("carrier-pigeon")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="port must be"):
        await ts.serve("streamable-http", port=70000)
    assert _grace_timers(ts) == []  # refused before the watch began: no stray timer thread


async def test_serve_that_fails_stops_its_watch(capsys: pytest.CaptureFixture[str]) -> None:
    ts = Toolset("port-taken", connect_grace=60)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with anyio.fail_after(BOUND), pytest.raises(OSError, match=f"could not serve on .*{port}"):
            await ts.serve("streamable-http", port=port)
    _wait_for(lambda: _grace_timers(ts) == [])  # the watch's timer was cancelled: it ends
    assert "was started" not in capsys.readouterr().err


# -- connect_grace ---------------------------------------------------------------------------
def _wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def _grace_timers(ts: Toolset) -> list[threading.Thread]:
    """The live timer threads of ``ts``'s connect_grace watch (it names them after the
    address), seen from outside: a watch that is pending has exactly one."""
    name = f"toolbench-toolset-grace-{ts.address}"
    return [thread for thread in threading.enumerate() if thread.name == name]


def test_started_but_never_reached_warns_once(capsys: pytest.CaptureFixture[str]) -> None:
    ts = Toolset("lonely-box", connect_grace=0.1)
    threads = [threading.Thread(target=ts.start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    err = ""

    def warned() -> bool:
        nonlocal err
        err += capsys.readouterr().err
        return "was started" in err

    _wait_for(warned)
    time.sleep(0.3)  # a second warning would have had time to appear
    ts.start()
    time.sleep(0.2)
    err += capsys.readouterr().err
    assert err.count("toolbench: toolset 'lonely-box' was started") == 1
    assert "no caller has reached it" in err


def test_reached_in_time_does_not_warn(capsys: pytest.CaptureFixture[str]) -> None:
    ts = app.build(grace=2.0)
    ts.start()
    timers = _grace_timers(ts)
    assert len(timers) == 1 and timers[0].is_alive()
    assert anyio.run(ts.deliver, {"tool": "help"})["name"] == "notes-app"
    timers[0].join(5)  # reaching cancels the timer: its thread ends now, not in 2 s
    assert not timers[0].is_alive()
    assert _grace_timers(ts) == []
    assert "was started" not in capsys.readouterr().err


def test_no_grace_means_no_watch(capsys: pytest.CaptureFixture[str]) -> None:
    ts = Toolset("quiet", connect_grace=None)
    ts.start()
    assert _grace_timers(ts) == [] and ts.connect_grace is None
    with pytest.raises(ValueError, match=r"connect_grace must be .* or None"):
        Toolset("x", connect_grace=float("nan"))


def test_not_started_does_not_warn(capsys: pytest.CaptureFixture[str]) -> None:
    Toolset("never", connect_grace=0.05)
    time.sleep(0.2)
    assert "never" not in capsys.readouterr().err


@pytest.mark.slow
def test_grace_warning_from_a_real_process() -> None:
    done = subprocess.run(
        [sys.executable, str(APP), "start-only", "--grace", "0.2", "--linger", "0.5"],
        capture_output=True, text=True, timeout=BOUND, check=True,
    )
    assert done.stdout == ""
    assert done.stderr.count("toolset 'notes' was started 0.2 s ago") == 1


def test_a_call_still_queued_when_its_timeout_ends_did_not_happen() -> None:
    """Through a real Bench: the bench's timeout reaches the Toolset, which knows whether the
    call was still waiting for its lane (nothing ran: did_not_happen) or running (in doubt)."""
    import toolbench as tb

    ts = Toolset("queue", max_concurrent=None)
    ts.lane("one", max_concurrent=1)
    started: list[int] = []

    @ts.tool("hold", "Hold the only slot of lane 'one' for a while.", lane="one")
    async def hold(data: dict[str, Any], ctx: ToolContext) -> str:
        started.append(1)
        await anyio.sleep(float(data.get("seconds", 1.0)))
        return "held"

    with tb.Bench() as bench:
        bench.connect("queue", ts)

        async def both() -> list[BaseException | tb.Result]:
            outcomes: list[BaseException | tb.Result] = []

            async def one(delay: float, seconds: float, timeout: float) -> None:
                await anyio.sleep(delay)
                try:
                    outcomes.append(
                        await bench.acall("queue-hold", seconds=seconds, timeout=timeout))
                except tb.ToolError as exc:
                    outcomes.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, 0.0, 1.5, 0.6)  # runs past its timeout: in doubt
                tg.start_soon(one, 0.1, 1.0, 0.3)  # still queued when its timeout ends
            return outcomes

        from toolbench._loop import get_loop

        queued, running = get_loop().run(both)  # in the order they finish
        assert isinstance(running, tb.TimedOut), running
        assert running.disposition is tb.Disposition.IN_DOUBT
        assert isinstance(queued, tb.Unreachable), queued
        assert queued.disposition is tb.Disposition.DID_NOT_HAPPEN
        assert "lane 'one'" in str(queued) and "nothing ran" in str(queued)
        assert len(started) == 1  # the queued handler never ran
        records = bench.records
        assert sorted(records["disposition"]) == ["did_not_happen", "in_doubt"]
