"""The client's side of tasks (issue 37, item 15): advertised only where the bench serves it.

A real server sees the capability (an in-process MCPServer, in both protocol eras); the real
server-everything lists its task-only ``*-async`` tools to such a client, and a call to one
runs to completion through the bench (the server polls the client's ``tasks/get`` and fetches
``tasks/result``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.server.mcpserver import Context, MCPServer
from servers import everything

import toolbench as tb
from toolbench._transports.mcp.methods import receiver

ASYNC_TOOLS = {"trigger-sampling-request-async", "trigger-elicitation-request-async"}


def caps_server() -> MCPServer:
    server = MCPServer("caps")

    @server.tool()
    def caps(ctx: Context) -> str:
        """What the client advertised, as the server sees it."""
        found = ctx.session.client_capabilities
        return json.dumps(found.model_dump(by_alias=True, mode="json", exclude_none=True)
                          if found is not None else None)

    return server


def _sample(request: Any) -> str:
    return f"sampled {len(request.messages)} message(s)"


def _elicit(request: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada", "check": True}}


def _seen(mode: str, **handlers: Any) -> dict[str, Any]:
    with tb.Bench(timeout=20, **handlers) as bench:
        bench.connect("caps", caps_server(), protocol_mode=mode)
        seen: dict[str, Any] = json.loads(bench.call("caps-caps").text)
        return seen


def test_the_handshake_era_advertises_exactly_the_requests_the_bench_answers() -> None:
    both = _seen("legacy", sampling=_sample, elicitation=_elicit)
    assert both["tasks"] == {"list": {}, "cancel": {}, "requests": {
        "sampling": {"createMessage": {}}, "elicitation": {"create": {}}}}
    only_sampling = _seen("legacy", sampling=_sample)
    assert only_sampling["tasks"]["requests"] == {"sampling": {"createMessage": {}}}
    assert "tasks" not in _seen("legacy")  # no handler: nothing a server could run as a task


def test_the_2026_era_advertises_no_client_tasks() -> None:
    seen = _seen("auto", sampling=_sample, elicitation=_elicit)
    assert "sampling" in seen and "elicitation" in seen  # the era carries capabilities at all
    assert "tasks" not in seen  # tasks are an extension there, which the bench does not serve


def test_the_capability_by_version() -> None:
    caps = types.ClientCapabilities(sampling=types.SamplingCapability())
    legacy = receiver.tasks_capability(caps, "2025-11-25")
    assert legacy is not None and legacy.requests is not None
    assert legacy.requests.sampling is not None and legacy.requests.elicitation is None
    assert receiver.tasks_capability(caps, "2026-07-28") is None
    assert receiver.tasks_capability(types.ClientCapabilities(), "2025-11-25") is None


def test_the_sdk_still_has_the_private_methods_the_receiver_wraps() -> None:
    # If a later SDK renames them, install() quietly does nothing; this says so loudly.
    assert callable(getattr(ClientSession, "_build_capabilities", None))
    assert callable(getattr(ClientSession, "_on_request", None))


class _Session:
    """What the receiver reads of an SDK session: its era, capabilities and task group."""

    def __init__(self, group: Any) -> None:
        self._negotiated_version = "2025-11-25"
        self._task_group = group

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        caps = types.ClientCapabilities(sampling=types.SamplingCapability())
        return caps.model_copy(update={"tasks": receiver.tasks_capability(caps, version)})


def test_tasks_are_bounded_cancellable_and_unknown_ids_are_errors() -> None:
    import anyio
    from mcp.shared.exceptions import MCPError

    released = anyio.Event()

    async def answer(dctx: Any, method: str, params: Any) -> dict[str, Any]:
        assert "task" not in (params or {})  # the handler sees a plain request
        await released.wait()
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    async def body() -> None:
        async with anyio.create_task_group() as group:
            tasks = receiver.TaskReceiver(_Session(group), answer)
            ask = {"messages": [], "maxTokens": 1, "task": {"ttl": 10**9}}
            made = [(await tasks(None, "sampling/createMessage", ask))["task"]
                    for _ in range(receiver.MAX_TASKS)]
            assert made[0]["status"] == "working" and made[0]["ttl"] == receiver.MAX_TTL_MS
            with pytest.raises(MCPError, match="already holds"):
                await tasks(None, "sampling/createMessage", ask)
            first = {"taskId": made[0]["taskId"]}
            assert (await tasks(None, "tasks/cancel", first))["status"] == "cancelled"
            with pytest.raises(MCPError, match="cancelled"):
                await tasks(None, "tasks/result", first)
            with pytest.raises(MCPError, match="no task"):
                await tasks(None, "tasks/get", {"taskId": "nope"})
            released.set()
            second = {"taskId": made[1]["taskId"]}
            with anyio.fail_after(5):
                done = await tasks(None, "tasks/result", second)
            assert done["content"]["text"] == "ok"
            assert done["_meta"][receiver.RELATED_TASK] == second
            with anyio.fail_after(5):
                for task in made[2:]:
                    await tasks(None, "tasks/result", {"taskId": task["taskId"]})
            listed = (await tasks(None, "tasks/list", {}))["tasks"]
            assert len(listed) == receiver.MAX_TASKS
            assert {task["status"] for task in listed} == {"completed", "cancelled"}

    anyio.run(body)


def _wait_for(condition: Callable[[], bool], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.slow
def test_server_everything_lists_its_async_tools_and_one_runs_to_completion() -> None:
    why_not = everything.node_missing()
    if why_not is not None:
        pytest.skip(f"server-everything needs Node.js: {why_not}")
    with tb.Bench(timeout=60, connect_timeout=60, sampling=_sample,
                  elicitation=_elicit) as bench:
        bench.connect("everything", everything.stdio_command())

        def tools() -> set[str]:
            return set(bench.catalog(server="everything")["tool"])

        assert _wait_for(lambda: tools() >= ASYNC_TOOLS), sorted(tools())
        sampled = bench.call("everything-trigger-sampling-request-async", prompt="hi",
                             maxTokens=5)
        assert "[COMPLETED]" in sampled.text and "sampled 1 message(s)" in sampled.text
        assert receiver.RELATED_TASK in sampled.text  # it came back through tasks/result
        row = bench.records.iloc[-1]
        assert row["tool"] == "trigger-sampling-request-async" and bool(row["ok"])
        assert "sampled 1 message(s)" in row["text"]
        elicited = bench.call("everything-trigger-elicitation-request-async")
        assert "[COMPLETED]" in elicited.text and "Ada" in elicited.text
