"""The ``beyond`` demo server end to end through the MCP SDK's own ``mcp.Client`` (no toolbench).

Every check runs in process on both protocol paths the SDK has: ``mode="auto"`` (2026-07-28,
where sampling, elicitation and roots travel inside ``InputRequiredResult`` retries and logs are
a per-request opt-in) and ``mode="legacy"`` (2025-11-25 JSON-RPC over memory streams, where they
are server-to-client requests and logs are always sent). The slow tests run the same checks
against a real ``python -m toolbench.demo.beyond`` child over stdio.
"""

from __future__ import annotations

import ast
import base64
import json
import struct
import sys
import tempfile
import time
import warnings
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import mcp.types as t
import pytest
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning

from toolbench.demo import beyond

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
MODES = ("auto", "legacy")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TRIP = {"destination": "Lima", "nights": 4, "budget": 1234.5, "travel_class": "business",
        "insurance": True}


def run(body: Callable[[], Awaitable[T]], limit: float = 60.0) -> T:
    """Run one async test body with a hard bound, so a hung server cannot hang the suite."""

    async def bounded() -> T:
        with anyio.fail_after(limit):
            return await body()

    return anyio.run(bounded)


@dataclass
class Peer:
    """The client side of every server-to-client exchange, recording what the server sent."""

    elicit_action: Literal["accept", "decline", "cancel"] = "accept"
    extra: dict[str, Any] = field(default_factory=dict)  # added to an accepted answer
    roots: list[t.Root] = field(default_factory=list)
    sampled: list[t.CreateMessageRequestParams] = field(default_factory=list)
    elicited: list[t.ElicitRequestFormParams] = field(default_factory=list)
    logs: list[t.LoggingMessageNotificationParams] = field(default_factory=list)

    async def sampling(
        self, context: ClientRequestContext, params: t.CreateMessageRequestParams
    ) -> t.CreateMessageResult:
        self.sampled.append(params)
        content = params.messages[-1].content
        assert isinstance(content, t.TextContent)
        # An answer computed from the question, so a server that ignored it would be caught.
        return t.CreateMessageResult(
            role="assistant", model=f"mirror-{len(self.sampled)}", stop_reason="endTurn",
            content=t.TextContent(type="text", text=content.text[::-1]),
        )

    async def elicitation(
        self, context: ClientRequestContext, params: t.ElicitRequestParams
    ) -> t.ElicitResult:
        assert isinstance(params, t.ElicitRequestFormParams)
        self.elicited.append(params)
        if self.elicit_action == "accept":
            return t.ElicitResult(action="accept", content={**TRIP, **self.extra})
        return t.ElicitResult(action=self.elicit_action)

    async def list_roots(self, context: ClientRequestContext) -> t.ListRootsResult:
        return t.ListRootsResult(roots=self.roots)

    async def logging(self, params: t.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    def callbacks(self) -> dict[str, Any]:
        return {"sampling_callback": self.sampling, "elicitation_callback": self.elicitation,
                "list_roots_callback": self.list_roots, "logging_callback": self.logging}


@asynccontextmanager
async def in_process(mode: str, **options: Any) -> AsyncIterator[Client]:
    async with Client(beyond.create(), mode=mode, read_timeout_seconds=30, **options) as client:
        yield client


@asynccontextmanager
async def over_stdio(mode: str, **options: Any) -> AsyncIterator[Client]:
    """A real child ``python -m toolbench.demo.beyond``; its stderr goes to a temporary file."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolbench.demo.beyond"],
        env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT),
    )
    with tempfile.TemporaryFile("w+") as errlog:
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, mode=mode, read_timeout_seconds=30, **options) as client:
            yield client


def text_of(result: t.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, t.TextContent))


def png_size(data: bytes) -> tuple[int, int, int]:
    """Width, height and decoded pixel-row bytes of an 8-bit RGB PNG (checks it really is one)."""
    assert data.startswith(PNG_SIGNATURE)
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert (depth, colour) == (8, 2)
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, kind
        if kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, len(zlib.decompress(idat))


# ---------------------------------------------------------------------------------------------
# Checks shared by the in-process and the stdio tests


async def check_resources(client: Client) -> None:
    listed = {r.uri: r for r in (await client.list_resources()).resources}
    assert set(listed) == {"beyond://readme", "beyond://cities.json", "beyond://swatch.png",
                           "beyond://bytes.bin", "beyond://note"}
    assert listed["beyond://swatch.png"].mime_type == "image/png"
    assert listed["beyond://cities.json"].mime_type == "application/json"
    assert all(r.name and r.title and r.description for r in listed.values())

    readme = (await client.read_resource("beyond://readme")).contents
    assert len(readme) == 1 and isinstance(readme[0], t.TextResourceContents)
    assert readme[0].mime_type == "text/plain" and "city://" in readme[0].text

    cities = (await client.read_resource("beyond://cities.json")).contents[0]
    assert isinstance(cities, t.TextResourceContents)
    names = [c["name"] for c in json.loads(cities.text)]
    assert len(names) == len(beyond.CITIES) and "Tokyo" in names

    swatch = (await client.read_resource("beyond://swatch.png")).contents[0]
    assert isinstance(swatch, t.BlobResourceContents) and swatch.mime_type == "image/png"
    assert png_size(base64.b64decode(swatch.blob)) == (16, 16, 16 * (1 + 3 * 16))

    blob = (await client.read_resource("beyond://bytes.bin")).contents[0]
    assert isinstance(blob, t.BlobResourceContents)
    assert blob.mime_type == "application/octet-stream"
    assert base64.b64decode(blob.blob) == bytes(range(256))

    (template,) = (await client.list_resource_templates()).resource_templates
    assert (template.uri_template, template.mime_type) == ("city://{name}", "application/json")
    for name in ("Tokyo", "nairobi"):
        (one,) = (await client.read_resource(f"city://{name}")).contents
        assert isinstance(one, t.TextResourceContents) and one.uri == f"city://{name}"
        assert json.loads(one.text)["name"].lower() == name.lower()
    with pytest.raises(MCPError, match=r"unknown city 'atlantis'.*paris"):
        await client.read_resource("city://atlantis")


async def check_prompts(client: Client) -> None:
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    assert set(prompts) == {"welcome", "plan_trip"}
    assert prompts["welcome"].arguments == []
    arguments = {a.name: a.required for a in prompts["plan_trip"].arguments or []}
    assert arguments == {"from_city": True, "to_city": True, "days": False}

    welcome = (await client.get_prompt("welcome")).messages
    assert [m.role for m in welcome] == ["user", "assistant", "user", "assistant"]
    link = welcome[-1].content
    assert isinstance(link, t.ResourceLink) and link.uri == "city://paris"

    trip = await client.get_prompt("plan_trip", {"from_city": "Paris", "to_city": "Sydney",
                                                 "days": "5"})
    roles = [m.role for m in trip.messages]
    assert roles == ["user", "user", "assistant", "user"]
    first, embedded = trip.messages[0].content, trip.messages[1].content
    assert isinstance(first, t.TextContent)
    assert "5-day" in first.text and "Paris" in first.text and "Sydney" in first.text
    assert isinstance(embedded, t.EmbeddedResource)
    assert isinstance(embedded.resource, t.TextResourceContents)
    assert json.loads(embedded.resource.text)["country"] == "Australia"

    with pytest.raises(MCPError, match="Atlantis") as caught:
        await client.get_prompt("plan_trip", {"from_city": "Paris", "to_city": "Atlantis"})
    assert caught.value.code == t.INVALID_PARAMS


async def check_links(client: Client) -> None:
    result = await client.call_tool("city_link", {"name": "Tokyo"})
    assert not result.is_error
    (link,) = [b for b in result.content if isinstance(b, t.ResourceLink)]
    assert (link.uri, link.name, link.mime_type) == ("city://tokyo", "Tokyo", "application/json")
    (followed,) = (await client.read_resource(link.uri)).contents
    assert isinstance(followed, t.TextResourceContents)
    assert json.loads(followed.text)["country"] == "Japan"

    result = await client.call_tool("city_embedded", {"name": "Lima"})
    assert not result.is_error
    text, image = result.content
    assert isinstance(text, t.EmbeddedResource) and isinstance(image, t.EmbeddedResource)
    assert isinstance(text.resource, t.TextResourceContents)
    (read,) = (await client.read_resource(text.resource.uri)).contents
    assert isinstance(read, t.TextResourceContents) and read.text == text.resource.text
    assert isinstance(image.resource, t.BlobResourceContents)
    assert image.resource.mime_type == "image/png"
    (swatch,) = (await client.read_resource(image.resource.uri)).contents
    assert isinstance(swatch, t.BlobResourceContents) and swatch.blob == image.resource.blob

    bad = await client.call_tool("city_link", {"name": "Atlantis"})
    assert bad.is_error and "Atlantis" in text_of(bad) and "sydney" in text_of(bad)


async def check_sampling(client: Client, peer: Peer) -> None:
    before = len(peer.sampled)
    result = await client.call_tool("ask_llm", {"question": "Which city is hottest?",
                                                "max_tokens": 77})
    assert not result.is_error, text_of(result)
    assert result.structured_content == {
        "text": "?tsettoh si ytic hcihW", "model": f"mirror-{len(peer.sampled)}",
        "role": "assistant", "stop_reason": "endTurn",
    }
    (request,) = peer.sampled[before:]
    assert request.max_tokens == 77 and request.system_prompt
    assert [m.role for m in request.messages] == ["user"]


async def check_elicitation(client: Client, peer: Peer) -> None:
    peer.elicit_action = "accept"
    result = await client.call_tool("ask_user", {"destination_hint": "Lima"})
    assert not result.is_error, text_of(result)
    assert result.structured_content == {"action": "accept", "content": TRIP}
    request = peer.elicited[-1]
    assert "Lima" in request.message
    schema = request.requested_schema
    kinds = {name: prop.get("type") for name, prop in schema["properties"].items()}
    assert kinds == {"destination": "string", "nights": "integer", "budget": "number",
                     "travel_class": "string", "insurance": "boolean", "activities": "array"}
    assert schema["properties"]["travel_class"]["enum"] == ["economy", "business", "first"]
    # MCP's titled multi-select: the titles shown, the values sent, 1 to 3 of them.
    activities = schema["properties"]["activities"]
    assert [(o["const"], o["title"]) for o in activities["items"]["anyOf"]] == list(
        beyond.ACTIVITIES.items())
    assert (activities["minItems"], activities["maxItems"]) == (1, 3)
    assert set(schema["required"]) == {"destination", "nights", "budget"}
    # Several chosen reach the tool; more than three is the server's refusal, not an answer.
    peer.extra = {"activities": ["food", "hiking"]}
    result = await client.call_tool("ask_user", {})
    assert result.structured_content == {"action": "accept", "content": {
        **TRIP, "activities": ["food", "hiking"]}}
    peer.extra = {"activities": ["food", "hiking", "beaches", "museums"]}
    result = await client.call_tool("ask_user", {})
    assert result.is_error and "does not match the requested schema" in text_of(result)
    peer.extra = {}

    for action in ("decline", "cancel"):
        peer.elicit_action = action
        result = await client.call_tool("ask_user", {})
        assert not result.is_error
        assert result.structured_content == {"action": action, "content": None}
    peer.elicit_action = "accept"


async def check_roots(client: Client, peer: Peer) -> None:
    peer.roots = [t.Root(uri="file:///srv/data", name="data"), t.Root(uri="file:///tmp/x")]
    result = await client.call_tool("client_roots", {})
    assert not result.is_error, text_of(result)
    assert result.structured_content == {"result": [
        {"uri": "file:///srv/data", "name": "data"}, {"uri": "file:///tmp/x", "name": None}]}


async def check_logging(client: Client, peer: Peer, expected: list[str]) -> None:
    """``chatty`` logs six messages; ``expected`` are the levels this connection should see."""
    peer.logs.clear()
    result = await client.call_tool("chatty", {})
    assert not result.is_error and "logged 6 messages" in text_of(result)
    with anyio.fail_after(10):  # notifications may trail the result on a real pipe
        while len(peer.logs) < len(expected):
            await anyio.sleep(0.01)
    await anyio.sleep(0.05)
    assert [log.level for log in peer.logs] == expected
    assert all(log.logger == "beyond.chatty" for log in peer.logs)
    if "info" in expected:
        assert {"event": "structured", "cities": len(beyond.CITIES)} in [
            log.data for log in peer.logs]
    if "debug" in expected:
        assert peer.logs[0].data == "debug message from chatty"


async def check_progress(client: Client) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    started = time.monotonic()
    result = await client.call_tool("countdown", {"steps": 4, "delay_ms": 20},
                                    progress_callback=progress)
    elapsed = time.monotonic() - started
    assert not result.is_error and text_of(result) == "counted 4 steps"
    assert seen == [(i, 4, f"step {i} of 4") for i in range(1, 5)]
    assert elapsed >= 0.08  # four 20 ms sleeps really happened

    for too_much in ({"steps": beyond.MAX_STEPS + 1}, {"delay_ms": beyond.MAX_DELAY_MS + 1}):
        bad = await client.call_tool("countdown", too_much)
        assert bad.is_error and next(iter(too_much)) in text_of(bad)


async def check_missing_capabilities(client: Client) -> None:
    """A client without the callbacks gets a clear error naming the capability."""
    for tool, args, capability in (("ask_llm", {"question": "hi"}, "sampling"),
                                   ("ask_user", {}, "elicitation"),
                                   ("client_roots", {}, "roots")):
        with pytest.raises(MCPError, match=f"did not declare the .*{capability} capability"):
            await client.call_tool(tool, args)


# ---------------------------------------------------------------------------------------------
# In process (fast)


@pytest.mark.parametrize("mode", MODES)
def test_resources_and_template(mode: str) -> None:
    async def body() -> None:
        async with in_process(mode) as client:
            await check_resources(client)

    run(body)


@pytest.mark.parametrize("mode", MODES)
def test_prompts_are_multi_message_transcripts(mode: str) -> None:
    async def body() -> None:
        async with in_process(mode) as client:
            await check_prompts(client)

    run(body)


@pytest.mark.parametrize("mode", MODES)
def test_resource_link_can_be_followed_and_embedded_resource_matches_read(mode: str) -> None:
    async def body() -> None:
        async with in_process(mode) as client:
            await check_links(client)

    run(body)


@pytest.mark.parametrize("mode", MODES)
def test_sampling_elicitation_and_roots_reach_the_client_callbacks(mode: str) -> None:
    peer = Peer()

    async def body() -> None:
        async with in_process(mode, **peer.callbacks()) as client:
            await check_sampling(client, peer)
            await check_elicitation(client, peer)
            await check_roots(client, peer)

    run(body)
    assert len(peer.sampled) == 1 and len(peer.elicited) == 5  # 3 accepts, decline, cancel


@pytest.mark.parametrize("mode", MODES)
def test_without_callbacks_the_server_names_the_missing_capability(mode: str) -> None:
    async def body() -> None:
        async with in_process(mode) as client:
            await check_missing_capabilities(client)

    run(body)


@pytest.mark.parametrize(
    ("mode", "log_level", "expected"),
    [
        ("auto", None, []),  # 2026-07-28: no opt-in, no logs
        ("auto", "warning", ["warning", "error"]),
        ("auto", "debug", ["debug", "info", "notice", "warning", "error", "info"]),
        ("legacy", None, ["debug", "info", "notice", "warning", "error", "info"]),
    ],
)
def test_log_messages_arrive_at_the_logging_callback(
    mode: str, log_level: str | None, expected: list[str]
) -> None:
    peer = Peer()

    async def body() -> None:
        async with in_process(mode, log_level=log_level, **peer.callbacks()) as client:
            await check_logging(client, peer, expected)

    run(body)


def test_legacy_set_logging_level_is_not_served_by_mcpserver() -> None:
    """MCPServer answers logging/setLevel with Method not found (and still sends every level):
    a client must treat a failed setLevel as "filter locally", not as a broken server."""
    peer = Peer()

    async def body() -> None:
        async with in_process("legacy", **peer.callbacks()) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                with pytest.raises(MCPError, match="Method not found"):
                    await client.set_logging_level("error")
            await check_logging(client, peer, ["debug", "info", "notice", "warning", "error",
                                               "info"])

    run(body)


@pytest.mark.parametrize("mode", MODES)
def test_progress_reports_every_step_with_total_and_message(mode: str) -> None:
    async def body() -> None:
        async with in_process(mode) as client:
            await check_progress(client)

    run(body)


def test_the_server_is_deterministic_and_has_no_tasks() -> None:
    first, second = beyond.create(), beyond.create()

    async def body() -> tuple[list[str], Any]:
        reads = []
        for server in (first, second):
            async with Client(server) as client:
                for uri in ("beyond://cities.json", "beyond://swatch.png", "city://lima"):
                    reads.append((await client.read_resource(uri)).contents[0].model_dump_json())
                tools = (await client.list_tools()).tools
                capabilities = client.server_capabilities
        assert reads[:3] == reads[3:]
        return sorted(tool.name for tool in tools), capabilities

    names, capabilities = run(body)
    assert names == sorted(["city_link", "city_embedded", "ask_llm", "ask_user", "client_roots",
                            "chatty", "countdown", "set_note"])
    assert capabilities.tasks is None  # mcp 2.3 has no server-side tasks; see the module doc


def test_module_imports_nothing_from_toolbench() -> None:
    """The demo server must survive toolbench's internal moves: it may import only the SDK."""
    tree = ast.parse(Path(beyond.__file__).read_text(encoding="utf-8"))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert imported and not [name for name in imported if name.startswith("toolbench")]


def test_help_exits_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        beyond.main(["--help"])
    assert caught.value.code == 0
    assert "python -m toolbench.demo.beyond" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# A real stdio child (slow)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_everything_over_stdio(mode: str) -> None:
    peer = Peer()
    expected_logs = ["debug", "info", "notice", "warning", "error", "info"]

    async def body() -> str:
        async with over_stdio(mode, log_level="debug", **peer.callbacks()) as client:
            await check_resources(client)
            await check_prompts(client)
            await check_links(client)
            await check_sampling(client, peer)
            await check_elicitation(client, peer)
            await check_roots(client, peer)
            await check_logging(client, peer, expected_logs)
            await check_progress(client)
            return client.protocol_version

    version = run(body, limit=90)
    assert version == ("2026-07-28" if mode == "auto" else "2025-11-25")


@pytest.mark.slow
def test_missing_capabilities_over_stdio() -> None:
    async def body() -> None:
        async with over_stdio("auto") as client:
            await check_missing_capabilities(client)

    run(body, limit=90)
