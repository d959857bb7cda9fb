"""Raw JSON-RPC over stdio (stdlib only): a tool that runs only as a task (MCP 2025-11-25).

No SDK server can require task augmentation (mcp 2.3 has no server side for tasks), so this
one is written by hand. ``report(topic, polls)`` refuses a plain ``tools/call``; as a task it
is ``working`` for ``polls`` ``tasks/get`` requests, then ``completed`` (``polls`` < 0: it never
ends). ``cancels`` is an ordinary tool that says which task ids ``tasks/cancel`` named.
"""

import itertools
from typing import Any

from _rpc import serve

TOOLS = [
    {"name": "report", "inputSchema": {"type": "object", "properties": {
        "topic": {"type": "string"}, "polls": {"type": "integer"}}, "required": ["topic"]},
     "execution": {"taskSupport": "required"}},
    {"name": "cancels", "inputSchema": {"type": "object"}},
]
TASKS: dict[str, dict[str, Any]] = {}
CANCELLED: list[str] = []
IDS = itertools.count(1)
NOW = "2026-12-03T00:00:00Z"


def _task(task_id: str) -> dict[str, Any]:
    state = TASKS[task_id]
    return {"taskId": task_id, "status": state["status"], "createdAt": NOW,
            "lastUpdatedAt": NOW, "ttl": 60000, "pollInterval": 20}


def call(msg: dict[str, Any]) -> dict[str, Any]:
    params = msg["params"]
    if params["name"] == "cancels":
        return {"result": {"content": [{"type": "text", "text": ",".join(CANCELLED)}]}}
    if "task" not in params:
        return {"error": {"code": -32602, "message": "Tool report requires task augmentation"}}
    args = params.get("arguments") or {}
    task_id = f"task-{next(IDS)}"
    TASKS[task_id] = {"status": "working", "left": int(args.get("polls", 2)),
                      "topic": args.get("topic", "")}
    return {"result": {"task": _task(task_id)}}


def get(msg: dict[str, Any]) -> dict[str, Any]:
    task_id = msg["params"]["taskId"]
    state = TASKS[task_id]
    if state["status"] == "working" and state["left"] >= 0:
        state["left"] -= 1
        if state["left"] < 0:
            state["status"] = "completed"
    return {"result": _task(task_id)}


def result(msg: dict[str, Any]) -> dict[str, Any]:
    task_id = msg["params"]["taskId"]
    state = TASKS[task_id]
    if state["status"] != "completed":
        return {"error": {"code": -32602, "message": f"task {task_id} is {state['status']}"}}
    return {"result": {"content": [{"type": "text", "text": f"report on {state['topic']}"}],
                       "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task_id}}}}


def cancel(msg: dict[str, Any]) -> dict[str, Any]:
    task_id = msg["params"]["taskId"]
    CANCELLED.append(task_id)
    TASKS[task_id]["status"] = "cancelled"
    return {"result": _task(task_id)}


serve({
    "initialize": lambda msg: {"result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}, "tasks": {"cancel": {},
                                                "requests": {"tools": {"call": {}}}}},
        "serverInfo": {"name": "tasks", "version": "0.0.1"}}},
    "tools/list": lambda msg: {"result": {"tools": TOOLS}},
    "tools/call": call,
    "tasks/get": get,
    "tasks/result": result,
    "tasks/cancel": cancel,
})
