"""Tools that require task augmentation (MCP 2025-11-25 tasks), run to completion in one call.

A tool whose ``execution.taskSupport`` is ``"required"`` refuses a plain ``tools/call``
("requires task augmentation"). Such a call is made as a task instead: created with
``tools/call`` plus ``task``, polled with ``tasks/get`` at the server's ``pollInterval``
(clamped to ``POLL_S``) until it ends or needs input, then its result fetched with
``tasks/result`` (which also carries any elicitation the task is waiting on, answered through
the bench's own callbacks). All of it runs inside the call's one timeout; a call that is
cancelled or runs out of time sends ``tasks/cancel`` (shielded, bounded by ``CANCEL_S``), so
an interrupted cell does not leave work running on the server.

mcp 2.3's client has no task support of its own (tasks left the core protocol in
2026-07-28 and continue as an extension; ``mcp.types`` keeps the types only). ``tasks/get``,
``tasks/result`` and ``tasks/cancel`` go through the session's typed ``send_request``. The
creating call cannot: ``send_request`` checks every ``tools/call`` reply as a
``CallToolResult`` and rejects the ``CreateTaskResult``, so that one request goes through the
session's dispatcher (``send_raw_request``), a private attribute. If a later SDK drops it,
the call is refused before anything is sent, saying why
(``tests/test_everything.py`` pins the SDK's behaviour).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from mcp import types

from toolbench._core.errors import Refused
from toolbench._core.ids import ToolId

TTL_MS = 300_000
"""How long the server should keep a task's result (the call's own timeout ends it sooner)."""
POLL_S = (0.05, 2.0)
"""The shortest and longest wait between two ``tasks/get``, whatever the server suggests."""
CANCEL_S = 2.0
"""How long a ``tasks/cancel`` may take when a call is cancelled or times out."""
TERMINAL = frozenset({"completed", "failed", "cancelled"})


def task_of(result: Any, error: BaseException | None) -> str | None:
    """The server's task id of a call that ran as a task, whatever its outcome: from the
    result, from the ``ToolFailed``'s result, or from the error (failed, timed out)."""
    for holder in (result, getattr(error, "result", None), error):
        task_id = getattr(holder, "task_id", None)
        if isinstance(task_id, str):
            return task_id
    return None


def requires_task(tool: types.Tool) -> bool:
    """The server says this tool runs only as a task."""
    execution = tool.execution
    return execution is not None and execution.task_support == "required"


async def call_as_task(client: Any, tool: ToolId, arguments: Mapping[str, Any],
                       meta: Mapping[str, Any] | None,
                       on_created: Callable[[str], None]) -> types.CallToolResult:
    """Create the task, wait for it within the caller's scope, return its ``CallToolResult``.

    ``on_created(task_id)`` runs as soon as the server has accepted the task, so the caller
    can name it in an error or a record whatever happens next.
    """
    session = client.session
    send_raw = getattr(getattr(session, "_dispatcher", None), "send_raw_request", None)
    if send_raw is None:
        raise Refused(f"{tool.tool!r} runs only as a task, and this version of the mcp SDK "
                      "offers no way to create one; nothing was sent", tool=tool)
    params = types.CallToolRequestParams(name=tool.tool, arguments=dict(arguments),
                                         task=types.TaskMetadata(ttl=TTL_MS))
    wire = params.model_dump(by_alias=True, mode="json", exclude_none=True)
    if meta:
        wire["_meta"] = dict(meta)
    created = types.CreateTaskResult.model_validate(await send_raw("tools/call", wire, None),
                                                    by_name=False)
    task_id = created.task.task_id
    on_created(task_id)
    try:
        status, poll = created.task.status, created.task.poll_interval
        while status not in TERMINAL and status != "input_required":
            await anyio.sleep(min(max((poll or 500) / 1000, POLL_S[0]), POLL_S[1]))
            state = await session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)),
                types.GetTaskResult)
            status, poll = state.status, state.poll_interval or poll
        # tasks/result waits for the end, and delivers a pending elicitation on the way.
        result: types.CallToolResult = await session.send_request(
            types.GetTaskPayloadRequest(
                params=types.GetTaskPayloadRequestParams(task_id=task_id)),
            types.CallToolResult)
        return result
    except BaseException:
        # The server may have finished or gone meanwhile; the call fails anyway.
        with (anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_S),
              contextlib.suppress(Exception)):
            await session.send_request(
                types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id)),
                types.CancelTaskResult)
        raise
