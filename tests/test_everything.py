"""`@modelcontextprotocol/server-everything` (npm) through the MCP SDK's own ``mcp.Client``.

These pin down, against the real reference server over stdio and streamable HTTP, the facts
toolbench's resources/prompts/sampling/elicitation/logging/progress/tasks support builds on
(see tests/servers/everything-notes.md). They skip only when node or npm is missing; a missing
install (``.ci/run`` installs it; see ``servers.everything.install_command``) is a failure.
"""

from __future__ import annotations

import base64
import re
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import mcp.types as t
import pydantic
import pytest
from mcp import Client, stdio_client
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from servers import everything

T = TypeVar("T")

_why_not = everything.node_missing()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(_why_not is not None, reason=f"server-everything needs Node.js: {_why_not}"),
]

BASE_TOOLS = {
    "echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
    "get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource",
    "toggle-simulated-logging", "toggle-subscriber-updates", "trigger-long-running-operation",
    "simulate-research-query",
}
FOR_SAMPLING = {"trigger-sampling-request"}
FOR_ELICITATION = {"trigger-elicitation-request", "trigger-url-elicitation"}
FOR_ROOTS = {"get-roots-list"}
LEVELS = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
TRANSPORTS = ("stdio", "streamableHttp")


def run(body: Callable[[], Awaitable[T]], limit: float = 90.0) -> T:
    """Run one async test body with a hard bound, so a hung server cannot hang the suite."""

    async def bounded() -> T:
        with anyio.fail_after(limit):
            return await body()

    return anyio.run(bounded)


class Peer:
    """The client's side of sampling, elicitation, roots and logging, recording every request."""

    def __init__(self) -> None:
        self.sampled: list[t.CreateMessageRequestParams] = []
        self.elicited: list[t.ElicitRequestParams] = []
        self.logs: list[t.LoggingMessageNotificationParams] = []
        self.answer: dict[str, Any] | None = None

    async def sampling(
        self, context: ClientRequestContext, params: t.CreateMessageRequestParams
    ) -> t.CreateMessageResult:
        self.sampled.append(params)
        content = params.messages[-1].content
        text = content.text if isinstance(content, t.TextContent) else "?"
        return t.CreateMessageResult(role="assistant", model="upper-1",
                                     content=t.TextContent(type="text", text=text.upper()))

    async def elicitation(
        self, context: ClientRequestContext, params: t.ElicitRequestParams
    ) -> t.ElicitResult:
        self.elicited.append(params)
        if self.answer is None:
            return t.ElicitResult(action="decline")
        return t.ElicitResult(action="accept", content=self.answer)

    async def list_roots(self, context: ClientRequestContext) -> t.ListRootsResult:
        return t.ListRootsResult(roots=[t.Root(uri="file:///srv/project", name="project")])

    async def logging(self, params: t.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    def callbacks(self, *, sampling: bool = True, elicitation: bool = True,
                  roots: bool = False) -> dict[str, Any]:
        chosen: dict[str, Any] = {"logging_callback": self.logging}
        if sampling:
            chosen["sampling_callback"] = self.sampling
        if elicitation:
            chosen["elicitation_callback"] = self.elicitation
        if roots:
            chosen["list_roots_callback"] = self.list_roots
        return chosen


@asynccontextmanager
async def stdio(**options: Any) -> AsyncIterator[Client]:
    params = everything.stdio_params()
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=30,
                          **options) as client:
            yield client


@asynccontextmanager
async def connect(transport: str, url: str | None, **options: Any) -> AsyncIterator[Client]:
    if transport == "stdio":
        async with stdio(**options) as client:
            yield client
    else:
        assert url is not None
        async with Client(url, read_timeout_seconds=30, **options) as client:
            yield client


@pytest.fixture(scope="module")
def http_url() -> Any:
    """One streamableHttp server for the module (each Client gets its own session on it)."""
    with everything.streamable_http() as url:
        yield url


async def tool_names(client: Client, expected: set[str]) -> set[str]:
    """The listed tool names, re-listed (bounded) while they differ from ``expected``.

    The server registers its capability-dependent tools when the client's ``initialized``
    notification arrives and then says ``tools/list_changed``; over HTTP that notification is
    a separate POST, so the first listing may come a moment too early.
    """
    deadline = time.monotonic() + 5.0
    while True:
        names = {tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools}
        if names == expected or time.monotonic() > deadline:
            return names
        await anyio.sleep(0.1)


def text_of(result: t.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, t.TextContent))


def test_the_pinned_version_is_installed() -> None:
    entry = everything.locate()
    assert entry.name == "index.js" and entry.is_file()
    assert everything.install_command()[-1] == f"{everything.PACKAGE}@{everything.VERSION}"


@pytest.mark.parametrize(
    ("sampling", "elicitation", "roots", "extra"),
    [
        (False, False, False, set()),
        (True, False, False, FOR_SAMPLING),
        (False, True, False, FOR_ELICITATION),
        (True, True, False, FOR_SAMPLING | FOR_ELICITATION),
        (True, True, True, FOR_SAMPLING | FOR_ELICITATION | FOR_ROOTS),
    ],
)
def test_tools_depend_on_the_client_capabilities_over_stdio(
    sampling: bool, elicitation: bool, roots: bool, extra: set[str]
) -> None:
    peer = Peer()

    async def body() -> tuple[set[str], dict[str, Any], str]:
        options = peer.callbacks(sampling=sampling, elicitation=elicitation, roots=roots)
        async with stdio(**options) as client:
            expected = BASE_TOOLS | extra
            names = await tool_names(client, expected)
            tools = (await client.list_tools()).tools
            support = {tool.name: tool.execution.task_support if tool.execution else None
                       for tool in tools}
            return names, support, client.protocol_version

    names, support, version = run(body)
    assert names == BASE_TOOLS | extra
    assert len(names) == 13 + len(extra)  # 13 / 14 / 15 / 16 / 17
    assert version == "2025-11-25"
    assert support.pop("simulate-research-query") == "required"
    assert set(support.values()) == {"forbidden"}


def test_tools_depend_on_the_client_capabilities_over_http(http_url: str) -> None:
    async def body() -> tuple[set[str], set[str]]:
        async with Client(http_url, read_timeout_seconds=30) as bare:
            without = await tool_names(bare, BASE_TOOLS)
        peer = Peer()
        async with Client(http_url, read_timeout_seconds=30, **peer.callbacks()) as full:
            with_callbacks = await tool_names(full, BASE_TOOLS | FOR_SAMPLING | FOR_ELICITATION)
        return without, with_callbacks

    without, with_callbacks = run(body)
    assert (len(without), len(with_callbacks)) == (13, 16)
    assert with_callbacks - without == FOR_SAMPLING | FOR_ELICITATION


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resources_templates_links_and_prompts(transport: str, request: Any) -> None:
    url = request.getfixturevalue("http_url") if transport != "stdio" else None

    async def body() -> None:
        async with connect(transport, url) as client:
            resources = (await client.list_resources()).resources
            docs = {r.uri: r.mime_type for r in resources}
            assert "demo://resource/static/document/features.md" in docs
            assert set(docs.values()) == {"text/markdown"}
            templates = {r.uri_template: r.mime_type
                         for r in (await client.list_resource_templates()).resource_templates}
            assert templates == {"demo://resource/dynamic/text/{resourceId}": "text/plain",
                                 "demo://resource/dynamic/blob/{resourceId}":
                                     "application/octet-stream"}

            (doc,) = (await client.read_resource(
                "demo://resource/static/document/features.md")).contents
            assert isinstance(doc, t.TextResourceContents)
            assert doc.text.startswith("# Everything Server - Features")
            (text,) = (await client.read_resource("demo://resource/dynamic/text/7")).contents
            assert isinstance(text, t.TextResourceContents) and "Resource 7" in text.text
            (blob,) = (await client.read_resource("demo://resource/dynamic/blob/8")).contents
            assert isinstance(blob, t.BlobResourceContents)
            assert base64.b64decode(blob.blob).decode().startswith("Resource 8:")

            links = await client.call_tool("get-resource-links", {"count": 4})
            found = [b for b in links.content if isinstance(b, t.ResourceLink)]
            assert len(found) == 4 and all(b.uri.startswith("demo://resource/dynamic/")
                                           for b in found)
            (followed,) = (await client.read_resource(found[1].uri)).contents
            assert followed.uri == found[1].uri

            reference = await client.call_tool("get-resource-reference",
                                               {"resourceType": "Text", "resourceId": 5})
            (embedded,) = [b for b in reference.content if isinstance(b, t.EmbeddedResource)]
            assert embedded.resource.uri == "demo://resource/dynamic/text/5"

            prompts = {p.name: {a.name: a.required for a in p.arguments or []}
                       for p in (await client.list_prompts()).prompts}
            assert prompts["simple-prompt"] == {}
            assert prompts["args-prompt"] == {"city": True, "state": False}
            asked = await client.get_prompt("args-prompt", {"city": "Lima", "state": "LIM"})
            (message,) = asked.messages
            assert isinstance(message.content, t.TextContent)
            assert "Lima" in message.content.text and message.role == "user"
            with_resource = await client.get_prompt("resource-prompt",
                                                    {"resourceType": "Blob", "resourceId": "2"})
            kinds = [m.content.type for m in with_resource.messages]
            assert kinds == ["text", "resource"]

    run(body)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sampling_and_elicitation_reach_the_callbacks(transport: str, request: Any) -> None:
    url = request.getfixturevalue("http_url") if transport != "stdio" else None
    peer = Peer()

    async def body() -> tuple[str, str, str]:
        async with connect(transport, url, **peer.callbacks()) as client:
            await tool_names(client, BASE_TOOLS | FOR_SAMPLING | FOR_ELICITATION)
            sampled = await client.call_tool("trigger-sampling-request",
                                             {"prompt": "tide tables", "maxTokens": 33})
            peer.answer = None
            declined = await client.call_tool("trigger-elicitation-request", {})
            peer.answer = {"name": "Ada Lovelace", "check": True, "integer": 7}
            accepted = await client.call_tool("trigger-elicitation-request", {})
            return text_of(sampled), text_of(declined), text_of(accepted)

    sampled, declined, accepted = run(body)
    (request_params,) = peer.sampled
    assert request_params.max_tokens == 33
    question = request_params.messages[0].content
    assert isinstance(question, t.TextContent) and "tide tables" in question.text
    assert "TIDE TABLES" in sampled and "upper-1" in sampled
    assert "declined" in declined
    assert "Ada Lovelace" in accepted and "Favorite Integer: 7" in accepted
    form = peer.elicited[0]
    assert isinstance(form, t.ElicitRequestFormParams)
    schema = form.requested_schema
    assert schema["required"] == ["name"]
    types = {prop.get("type") for prop in schema["properties"].values()}
    assert types == {"string", "boolean", "integer", "number", "array"}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_log_and_progress_notifications_arrive(transport: str, request: Any) -> None:
    url = request.getfixturevalue("http_url") if transport != "stdio" else None
    peer = Peer()
    progress: list[tuple[float, float | None, str | None, float]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message, time.monotonic()))

    async def body() -> tuple[str, float]:
        async with connect(transport, url, **peer.callbacks()) as client:
            with warnings.catch_warnings():  # deprecated in 2026-07-28, still the 2025 way
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.set_logging_level("debug")
            started = await client.call_tool("toggle-simulated-logging", {})
            try:
                with anyio.fail_after(15):  # one message at once, then one every 5 s
                    while not peer.logs:
                        await anyio.sleep(0.02)
            finally:
                await client.call_tool("toggle-simulated-logging", {})
            began = time.monotonic()
            done = await client.call_tool("trigger-long-running-operation",
                                          {"duration": 1, "steps": 4},
                                          progress_callback=on_progress)
            assert "completed" in text_of(done)
            return text_of(started), began

    started, began = run(body)
    assert "Started simulated" in started
    first = peer.logs[0]
    assert first.level in LEVELS
    assert re.fullmatch(r"\w+[- ]level[- ]message.*", str(first.data), re.IGNORECASE)
    assert [(p[0], p[1]) for p in progress] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert all(message is None for _, _, message, _ in progress)  # it sends no message text
    assert progress[-1][3] - began >= 0.9  # four steps spread over the one-second duration


def test_a_tool_that_requires_a_task_fails_when_called_plainly() -> None:
    """The issue's symptom, as the SDK's own client sees it: call_tool cannot send ``task``."""

    async def body() -> t.CallToolResult:
        async with stdio() as client:
            return await client.call_tool("simulate-research-query", {"topic": "tides"})

    result = run(body)
    assert result.is_error
    assert "requires task augmentation" in text_of(result)


def test_task_lifecycle_needs_the_raw_dispatcher() -> None:
    """tools/call with ``task`` answers a CreateTaskResult, which ClientSession.send_request
    rejects (it validates any tools/call reply as CallToolResult); tasks/get and tasks/result
    pass through it. Sending the call needs the session's private dispatcher: this test pins
    that down so the notes stay true, and breaks loudly if the SDK grows real task support."""

    async def body() -> tuple[t.CreateTaskResult, list[str], t.CallToolResult]:
        async with stdio() as client:
            await client.list_tools()
            params = t.CallToolRequestParams(name="simulate-research-query",
                                             arguments={"topic": "tides"},
                                             task=t.TaskMetadata(ttl=60_000))
            wire = params.model_dump(by_alias=True, mode="json", exclude_none=True)
            with pytest.raises(pydantic.ValidationError, match="content"):
                await client.session.send_request(
                    t.CallToolRequest(params=params), t.CreateTaskResult)
            raw = await client.session._dispatcher.send_raw_request(
                "tools/call", wire, {"timeout": 30})
            created = t.CreateTaskResult.model_validate(raw, by_name=False)
            statuses = []
            task_id = created.task.task_id
            while True:
                state = await client.session.send_request(
                    t.GetTaskRequest(params=t.GetTaskRequestParams(task_id=task_id)),
                    t.GetTaskResult)
                statuses.append(state.status)
                if state.status in ("completed", "failed", "cancelled"):
                    break
                await anyio.sleep((state.poll_interval or 500) / 1000)
            final = await client.session.send_request(
                t.GetTaskPayloadRequest(params=t.GetTaskPayloadRequestParams(task_id=task_id)),
                t.CallToolResult)
            return created, statuses, final

    created, statuses, final = run(body, limit=60)
    assert created.task.status == "working" and created.task.poll_interval
    assert statuses[-1] == "completed" and "working" in statuses
    assert not final.is_error and "Research Report: tides" in text_of(final)
    assert (final.meta or {}).get("io.modelcontextprotocol/related-task") == {
        "taskId": created.task.task_id}
