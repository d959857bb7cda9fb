"""A 2026-07-28 MCP server over HTTP (stdlib only) that sends cache hints and counts requests.

``serve_in_thread()`` serves on a free loopback port in a thread and yields a ``HintServer``:
its ``url``, ``hints`` (per method, the ``{"ttlMs": ..., "cacheScope": ...}`` added to each
answer, which a test may change at any time, bad values included: the SDK's own server would
refuse to send them) and ``seen`` (every method received, in order: the wire calls counted
at the server; ``keys``, the ``X-Key`` header of each call). It serves ``server/discover``,
``tools/list``, ``tools/call`` (``echo``), ``resources/list``, ``resources/templates/list``,
``resources/read`` and ``prompts/list`` as plain JSON answers; any other request is
"Method not found".

``python cache_hints_http.py PORT TTL_MS [SCOPE] [DELAY_MS]`` serves the same with one hint
for every method, each call taking DELAY_MS (the benchmarks' server).
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VERSION = "2026-07-28"
TOOLS = [{"name": "echo", "description": "Answers with its text.",
          "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]
RESOURCES = [{"name": "note", "uri": "memo://note", "mimeType": "text/plain"}]
TEMPLATES = [{"name": "memo", "uriTemplate": "memo://{key}"}]
PROMPTS = [{"name": "greet", "description": "Say hello."}]


@dataclass
class HintServer:
    url: str = ""
    hints: dict[str, dict[str, Any]] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    reads: int = 0
    delay_s: float = 0.0
    """How long each ``tools/call`` takes (a remote server's latency, no CPU)."""
    keys: list[str | None] = field(default_factory=list)
    """The ``X-Key`` header of every ``tools/call`` (a client's own header, as it arrived)."""

    def count(self, method: str) -> int:
        return self.seen.count(method)


def answer(state: HintServer, msg: dict[str, Any]) -> dict[str, Any]:
    method = str(msg.get("method"))
    params = msg.get("params") or {}
    if method == "server/discover":
        return {"result": {"supportedVersions": [VERSION],
                           "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                           "serverInfo": {"name": "cache-hints", "version": "1.0"},
                           "resultType": "complete"}}
    if method == "tools/call":
        if state.delay_s:
            time.sleep(state.delay_s)
        text = str((params.get("arguments") or {}).get("text"))
        return {"result": {"content": [{"type": "text", "text": text}], "isError": False,
                           "resultType": "complete"}}
    if method == "resources/read":
        state.reads += 1
        uri = str(params.get("uri"))
        result: dict[str, Any] = {"contents": [{"uri": uri, "mimeType": "text/plain",
                                                "text": f"read {state.reads}"}]}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "resources/list":
        result = {"resources": RESOURCES}
    elif method == "resources/templates/list":
        result = {"resourceTemplates": TEMPLATES}
    elif method == "prompts/list":
        result = {"prompts": PROMPTS}
    else:
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}
    hint = state.hints.get(method, state.hints.get("*", {"ttlMs": 0, "cacheScope": "private"}))
    return {"result": {**result, **hint, "resultType": "complete"}}


class Server(ThreadingHTTPServer):
    """Keeps up with a sweep: a deep accept queue (socketserver's default is 5, which a map
    of 16 in flight overflows into reset connections), and threads that never hold exit."""

    request_queue_size = 128
    daemon_threads = True


def handler_for(state: HintServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a sweep reuses its connections

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: dict[str, Any] | None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client gone
                self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(405, None)

        def do_DELETE(self) -> None:
            self._send(405, None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            msg = json.loads(self.rfile.read(length) or b"{}")
            if "id" not in msg:
                self._send(202, None)
                return
            if self.headers.get("MCP-Protocol-Version") != VERSION:
                self._send(400, {"jsonrpc": "2.0", "id": msg["id"],
                                 "error": {"code": -32020,
                                           "message": "Missing MCP-Protocol-Version header"}})
                return
            state.seen.append(str(msg.get("method")))
            if msg.get("method") == "tools/call":
                state.keys.append(self.headers.get("X-Key"))
            self._send(200, {"jsonrpc": "2.0", "id": msg["id"], **answer(state, msg)})

    return Handler


@contextlib.contextmanager
def serve_in_thread(hints: dict[str, dict[str, Any]] | None = None) -> Iterator[HintServer]:
    """Serve on a free loopback port in a thread (see the module)."""
    state = HintServer(hints=dict(hints or {}))
    server = Server(("127.0.0.1", 0), handler_for(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


if __name__ == "__main__":
    scope = sys.argv[3] if len(sys.argv) > 3 else "public"
    main_state = HintServer(hints={"*": {"ttlMs": int(sys.argv[2]), "cacheScope": scope}},
                            delay_s=float(sys.argv[4]) / 1000 if len(sys.argv) > 4 else 0.0)
    Server(("127.0.0.1", int(sys.argv[1])), handler_for(main_state)).serve_forever()
