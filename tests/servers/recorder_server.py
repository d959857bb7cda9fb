"""A raw JSON-RPC stdio server (2025-11-25) that writes down every message it receives.

Usage: ``python recorder_server.py LOG [NAME [ICON_URL]]``. Each message the client sends (requests,
notifications, answers to our own requests) is appended to ``LOG`` as one JSON line, so a
test can see exactly what reached the server: ``logging/setLevel``, ``roots/list`` answers,
``notifications/roots/list_changed``.

It offers ten tools: nine good ones and ``broken``, which has no ``inputSchema`` (the SDK's
page validation rejects the whole page for it); ``remote_out`` declares an output schema
with a remote ``$ref``. ``ask_roots`` asks the client for its roots (``roots/list``) and
answers with them as text; ``needs_url`` fails with -32042 (URL elicitation required) the
first time and works after. Its serverInfo has a title, description, website and two icons
(a ``data:`` PNG and the remote ``ICON_URL``), and it gives
instructions with HTML in them.
"""

import json
import sys
from typing import Any

LOG = sys.argv[1]
NAME = sys.argv[2] if len(sys.argv) > 2 else "recorder"
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
       "z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
ICON_URL = sys.argv[3] if len(sys.argv) > 3 else "http://127.0.0.1:9/icon.png"

TOOLS: list[dict[str, Any]] = [
    {"name": f"good{i}", "inputSchema": {"type": "object"}} for i in range(1, 7)
]
TOOLS += [
    {"name": "broken", "description": "no inputSchema"},
    {"name": "remote_out", "inputSchema": {"type": "object"},
     "outputSchema": {"type": "object", "properties": {
         "x": {"$ref": "https://example.invalid/schema.json"}}}},
    {"name": "ask_roots", "inputSchema": {"type": "object"},
     "icons": [{"src": PNG, "mimeType": "image/png"}], "_meta": {"team": "<b>core</b>"}},
    {"name": "needs_url", "inputSchema": {"type": "object"}},
]
state = {"asked": 0, "url_refused": False}


def log(msg: Any) -> None:
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(json.dumps(msg) + "\n")


def send(msg: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


def text(value: str) -> dict[str, Any]:
    return {"result": {"content": [{"type": "text", "text": value}]}}


def read() -> dict[str, Any] | None:
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        log(msg)
        return msg if isinstance(msg, dict) else None
    return None


def call(msg: dict[str, Any]) -> dict[str, Any]:
    name = msg["params"]["name"]
    if name == "ask_roots":
        state["asked"] += 1
        ask_id = f"roots-{state['asked']}"
        send({"id": ask_id, "method": "roots/list"})
        while True:  # answer other requests meanwhile? none come: the client waits on us
            reply = read()
            if reply is None:
                sys.exit(0)
            if reply.get("id") == ask_id and "method" not in reply:
                roots = reply.get("result", {}).get("roots", [])
                return text(json.dumps(sorted(r["uri"] for r in roots)))
    if name == "needs_url":
        if not state["url_refused"]:
            state["url_refused"] = True
            return {"error": {"code": -32042, "message": "open the page first", "data": {
                "elicitations": [{"mode": "url", "url": "https://auth.example.com/start?x=1",
                                  "message": "Sign in to continue",
                                  "elicitationId": "e1"}]}}}
        return text("thanks")
    return text(f"{name} ok")


HANDLERS = {
    "initialize": lambda msg: {"result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}, "logging": {}},
        "serverInfo": {"name": NAME, "version": "1.2.3", "title": "Recorder <i>title</i>",
                       "description": "writes down what it hears",
                       "websiteUrl": "https://example.com/recorder",
                       "icons": [{"src": PNG, "mimeType": "image/png"},
                                 {"src": ICON_URL, "mimeType": "image/png"}]},
        "instructions": "Use <script>alert(1)</script> wisely. " + "x" * 20_000}},
    "tools/list": lambda msg: {"result": {"tools": TOOLS}},
    "tools/call": call,
    "logging/setLevel": lambda msg: {"result": {}},
}


def main() -> None:
    while True:
        msg = read()
        if msg is None:
            return
        method = msg.get("method")
        if "id" not in msg or method is None:
            continue
        handler = HANDLERS.get(method)
        answer = handler(msg) if handler is not None else {
            "error": {"code": -32601, "message": f"Method not found: {method}"}}
        send({"id": msg["id"], **answer})


main()
