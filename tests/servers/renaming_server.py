"""A stdio server whose tools change name each time it starts (a server upgraded under us).

Usage: ``python renaming_server.py COUNTER``. The file ``COUNTER`` counts the starts; start
*n* offers ``pid`` (answers the process id, so a test can kill it) and ``tool_v<n>``, the
resources ``note://fixed`` (its description names the start) and ``note://v<n>``, and the
prompt ``greet_v<n>``. A test kills it mid-session; the bench's reconnect must bring the
catalog the new names. Each ``resources/subscribe`` is written to ``COUNTER.subs`` as
``<start> <uri>``.
"""

import os
import sys
from pathlib import Path

from _rpc import serve

counter = Path(sys.argv[1])
start = int(counter.read_text() or "0") + 1 if counter.exists() else 1
counter.write_text(str(start))
TOOLS = [{"name": "pid", "inputSchema": {"type": "object"}},
         {"name": f"tool_v{start}", "inputSchema": {"type": "object"}}]
RESOURCES = [{"uri": "note://fixed", "name": "fixed", "description": f"start {start}"},
             {"uri": f"note://v{start}", "name": f"v{start}"}]
PROMPTS = [{"name": f"greet_v{start}", "description": "Say hello."}]


def subscribe(msg: dict) -> dict:
    with open(f"{counter}.subs", "a", encoding="utf-8") as subs:
        subs.write(f"{start} {msg['params']['uri']}\n")
    return {"result": {}}


def call(msg: dict) -> dict:
    name = msg["params"]["name"]
    if name == "pid":
        return {"result": {"content": [{"type": "text", "text": str(os.getpid())}]}}
    if name == f"tool_v{start}":
        return {"result": {"content": [{"type": "text", "text": f"v{start}"}]}}
    return {"error": {"code": -32602, "message": f"Unknown tool: {name}"}}


serve({
    "initialize": lambda msg: {"result": {"protocolVersion": "2025-11-25",
                                          "capabilities": {"tools": {"listChanged": True},
                                                           "resources": {"subscribe": True},
                                                           "prompts": {}},
                                          "serverInfo": {"name": "renaming",
                                                         "version": str(start)}}},
    "tools/list": lambda msg: {"result": {"tools": TOOLS}},
    "tools/call": call,
    "resources/subscribe": subscribe,
    "resources/list": lambda msg: {"result": {"resources": RESOURCES}},
    "resources/templates/list": lambda msg: {"result": {"resourceTemplates": []}},
    "prompts/list": lambda msg: {"result": {"prompts": PROMPTS}},
})
