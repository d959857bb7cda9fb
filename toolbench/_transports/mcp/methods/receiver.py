"""The client's side of MCP 2025-11-25 tasks: sampling and elicitation as tasks the server polls.

A server may send ``sampling/createMessage`` or ``elicitation/create`` with ``task`` in its
params, if the client advertised ``capabilities.tasks.requests.sampling.createMessage`` (or
``.elicitation.create``). The client then answers at once with a ``CreateTaskResult``, runs the
request in the background, and serves ``tasks/get``, ``tasks/result``, ``tasks/list`` and
``tasks/cancel`` for it. Some servers list tools only to a client that advertises this
(server-everything's ``trigger-sampling-request-async`` and ``trigger-elicitation-request-async``;
issue 37, item 15).

What is advertised is exactly what is served: a request type only when the bench answers it
(a sampling or elicitation handler; the SDK's own capabilities say which), plus ``list`` and
``cancel``, and only on a handshake-era connection (``ClientCapabilities.tasks`` is 2025-11-25
only; on 2026-07-28 tasks are an extension the bench does not implement, so nothing is sent).

mcp 2.3's ``ClientSession`` neither advertises nor serves client tasks (``tasks/*`` are left out
of its request table on purpose), and has no public hook for either, so :class:`TaskClient`
wraps two of the session's private methods as it builds the session (``_build_capabilities``
and ``_on_request``, which the dispatcher is handed when the session is entered). A later SDK
without them leaves the session as it was: nothing advertised, nothing served
(``tests/test_receiver.py`` pins the SDK's behaviour).

A server's tasks are bounded: at most ``MAX_TASKS`` at once (a hostile server cannot start
unbounded work), each forgotten ``ttl`` after it ends (at most ``MAX_TTL_MS``), and a task
runs in the session's own task group, so closing the connection ends it.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

logger = logging.getLogger(__name__)

MAX_TASKS = 32
"""How many of one server's tasks the client keeps at once (running or awaiting collection)."""
MAX_TTL_MS = 600_000
"""The longest a finished task's result is kept, whatever ttl the server asks for."""
POLL_MS = 500
"""The polling interval the client suggests."""
TERMINAL = frozenset({"completed", "failed", "cancelled"})
RELATED_TASK = "io.modelcontextprotocol/related-task"
AUGMENTABLE = {"sampling/createMessage": ("sampling", "createMessage"),
               "elicitation/create": ("elicitation", "create")}
"""The requests a client may run as tasks (2025-11-25), and where each sits in the capability."""
TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})

OnRequest = Callable[[Any, str, Mapping[str, Any] | None], Awaitable[dict[str, Any]]]


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


def tasks_capability(capabilities: types.ClientCapabilities,
                     version: str) -> types.ClientTasksCapability | None:
    """What to advertise under ``tasks`` beside ``capabilities`` at ``version``: the request
    types the client answers (sampling, elicitation), or None when there are none or the
    version has no client tasks."""
    if version in MODERN_PROTOCOL_VERSIONS:
        return None
    sampling = (types.TasksSamplingCapability(create_message=types.TasksCreateMessageCapability())
                if capabilities.sampling is not None else None)
    elicitation = (types.TasksElicitationCapability(create=types.TasksCreateElicitationCapability())
                   if capabilities.elicitation is not None else None)
    if sampling is None and elicitation is None:
        return None
    return types.ClientTasksCapability(
        list=types.TasksListCapability(), cancel=types.TasksCancelCapability(),
        requests=types.ClientTasksRequestsCapability(sampling=sampling, elicitation=elicitation))


@dataclass
class _Task:
    task_id: str
    ttl_ms: int
    created_at: str
    status: str = "working"
    status_message: str | None = None
    updated_at: str = ""
    ended_at: float | None = None
    result: dict[str, Any] | None = None
    error: MCPError | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def wire(self) -> dict[str, Any]:
        """The task as the spec's ``Task`` object."""
        task: dict[str, Any] = {"taskId": self.task_id, "status": self.status,
                                "createdAt": self.created_at,
                                "lastUpdatedAt": self.updated_at or self.created_at,
                                "ttl": self.ttl_ms, "pollInterval": POLL_MS}
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task

    def end(self, status: str, message: str | None = None) -> None:
        if self.status in TERMINAL:
            return
        self.status, self.status_message, self.updated_at = status, message, _now()
        self.ended_at = anyio.current_time()
        self.done.set()


def _unknown(task_id: object) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS,
                    message=f"no task {str(task_id)[:80]!r} on this client")


class TaskReceiver:
    """The tasks one session runs for its server."""

    def __init__(self, session: Any, on_request: OnRequest) -> None:
        self._session = session
        self._on_request = on_request
        self._tasks: dict[str, _Task] = {}

    def handshake_era(self) -> bool:
        version = getattr(self._session, "_negotiated_version", None)
        return version is not None and version not in MODERN_PROTOCOL_VERSIONS

    async def __call__(self, dctx: Any, method: str,
                       params: Mapping[str, Any] | None) -> dict[str, Any]:
        """The session's request handler: tasks here, everything else as the SDK does it."""
        if self.handshake_era():
            if method in TASK_METHODS:
                return await self._serve(method, params or {})
            task = params.get("task") if params is not None else None
            if method in AUGMENTABLE and params is not None and isinstance(task, dict):
                if self._advertised(method):
                    return self._create(dctx, method, params)
                # Not offered: the spec says to run it as a plain request.
                params = {key: value for key, value in params.items() if key != "task"}
        return await self._on_request(dctx, method, params)

    def _advertised(self, method: str) -> bool:
        caps = self._session._build_capabilities(self._session._negotiated_version)
        wire = caps.model_dump(by_alias=True, mode="json", exclude_none=True)
        category, kind = AUGMENTABLE[method]
        return kind in wire.get("tasks", {}).get("requests", {}).get(category, {})

    def _prune(self) -> None:
        now = anyio.current_time()
        for task_id, task in list(self._tasks.items()):
            if task.ended_at is not None and now - task.ended_at > task.ttl_ms / 1000:
                del self._tasks[task_id]

    def _create(self, dctx: Any, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Accept a task-augmented request: start it, answer with the task at once."""
        self._prune()
        if len(self._tasks) >= MAX_TASKS:
            raise MCPError(code=types.INVALID_REQUEST,
                           message=f"this client already holds {MAX_TASKS} tasks of this server")
        asked = params["task"].get("ttl")
        ttl = min(asked, MAX_TTL_MS) if isinstance(asked, int) and asked >= 0 else MAX_TTL_MS
        task = _Task(task_id=uuid.uuid4().hex, ttl_ms=ttl, created_at=_now())
        self._tasks[task.task_id] = task
        plain = {key: value for key, value in params.items() if key != "task"}
        group = self._session._task_group
        if group is None:  # the session is closing
            raise MCPError(code=types.INTERNAL_ERROR, message="the client is closing")
        group.start_soon(self._run, task, dctx, method, plain)
        return {"task": task.wire()}

    async def _run(self, task: _Task, dctx: Any, method: str, params: dict[str, Any]) -> None:
        with task.scope:
            try:
                task.result = await self._on_request(dctx, method, params)
            except MCPError as exc:
                task.error = exc
                task.end("failed", exc.error.message[:500])
            except Exception as exc:  # a handler's failure must not take the session down
                logger.debug("task %s failed", task.task_id, exc_info=True)
                task.error = MCPError(code=types.INTERNAL_ERROR,
                                      message=f"the client's handler failed ({type(exc).__name__})")
                task.end("failed", task.error.error.message)
            else:
                task.end("completed")
        task.end("cancelled", "cancelled by the server")  # no-op unless the scope was cancelled

    def _task(self, params: Mapping[str, Any]) -> _Task:
        task_id = params.get("taskId")
        task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise _unknown(task_id)
        return task

    async def _serve(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        self._prune()
        if method == "tasks/list":
            return {"tasks": [task.wire() for task in self._tasks.values()]}
        task = self._task(params)
        if method == "tasks/get":
            return task.wire()
        if method == "tasks/cancel":
            if task.status in TERMINAL:
                raise MCPError(code=types.INVALID_PARAMS,
                               message=f"task {task.task_id} has already ended ({task.status})")
            task.scope.cancel()
            task.end("cancelled", "cancelled by the server")
            return task.wire()
        await task.done.wait()  # tasks/result: bounded by the server's own request timeout
        if task.error is not None:
            raise task.error
        if task.result is None:
            raise MCPError(code=types.INVALID_REQUEST, message=f"task {task.task_id} was cancelled")
        meta = dict(task.result.get("_meta") or {})
        meta[RELATED_TASK] = {"taskId": task.task_id}
        return {**task.result, "_meta": meta}


def install(session: Any) -> TaskReceiver | None:
    """Advertise and serve client tasks on an SDK session that is built but not yet entered.

    None (and the session untouched) when the SDK lacks the private methods this relies on.
    """
    build = getattr(session, "_build_capabilities", None)
    on_request = getattr(session, "_on_request", None)
    if build is None or on_request is None:
        return None

    def build_capabilities(version: str) -> types.ClientCapabilities:
        capabilities: types.ClientCapabilities = build(version)
        tasks = tasks_capability(capabilities, version)
        if tasks is None:
            return capabilities
        return capabilities.model_copy(update={"tasks": tasks})

    receiver = TaskReceiver(session, on_request)
    session._build_capabilities = build_capabilities
    session._on_request = receiver
    return receiver


class TaskClient(Client):
    """``mcp.Client`` whose session advertises and serves client tasks (see the module)."""

    async def _build_session(self, exit_stack: AsyncExitStack) -> Any:
        session = await super()._build_session(exit_stack)
        install(session)
        return session
