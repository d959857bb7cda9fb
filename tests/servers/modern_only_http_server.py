"""A 2026-only MCP server over HTTP (stdlib only), as the conformance runner's mocks are.

``python modern_only_http_server.py PORT [CODE]``: a request without the
``MCP-Protocol-Version`` header (which is how a 2025 ``initialize`` arrives) is answered with
HTTP 400 and JSON-RPC error CODE (default -32020, "Missing MCP-Protocol-Version header");
-32021 and -32022 are the other codes a 2026 server may use. With the header, it serves
``server/discover``, ``tools/list`` and ``tools/call`` (``echo``, and ``bare``, whose result
has no ``resultType``) as plain JSON answers. Every method received goes to stderr, in order.
"""

import contextlib
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VERSION = "2026-07-28"
TOOLS = [{"name": "echo", "inputSchema": {"type": "object",
                                          "properties": {"text": {"type": "string"}}}},
         {"name": "bare", "inputSchema": {"type": "object"}}]
"""``bare`` answers without ``resultType``, which SEP-2322 says a client reads as complete."""
MESSAGES = {
    -32020: "Missing MCP-Protocol-Version header",
    -32021: "Missing required client capability",
    -32022: "Unsupported protocol version",
}


def answer(msg: dict[str, Any]) -> dict[str, Any]:
    method = msg.get("method")
    if method == "server/discover":
        return {"result": {"supportedVersions": [VERSION], "capabilities": {"tools": {}},
                           "serverInfo": {"name": "modern-only", "version": "1.0"},
                           "resultType": "complete"}}
    if method == "tools/list":
        return {"result": {"tools": TOOLS, "resultType": "complete", "ttlMs": 0,
                           "cacheScope": "private"}}
    if method == "tools/call":
        params = msg.get("params") or {}
        if params.get("name") == "bare":
            return {"result": {"content": [{"type": "text", "text": "no resultType"}]}}
        args = params.get("arguments") or {}
        return {"result": {"content": [{"type": "text", "text": str(args.get("text"))}],
                           "isError": False, "resultType": "complete"}}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


class Handler(BaseHTTPRequestHandler):
    code = -32020

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any] | None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(405, None)

    def do_DELETE(self) -> None:
        self._send(405, None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        msg = json.loads(self.rfile.read(length) or b"{}")
        print(f"method {msg.get('method')}", file=sys.stderr, flush=True)
        if "id" not in msg:
            self._send(202, None)
            return
        if self.headers.get("MCP-Protocol-Version") != VERSION:
            self._send(400, {"jsonrpc": "2.0", "id": msg["id"],
                             "error": {"code": self.code, "message": MESSAGES[self.code]}})
            return
        self._send(200, {"jsonrpc": "2.0", "id": msg["id"], **answer(msg)})


@contextlib.contextmanager
def serve_in_thread(code: int = -32020) -> Iterator[tuple[str, list[str]]]:
    """Serve on a free loopback port in a thread: yields the URL and the methods received."""
    seen: list[str] = []

    class Recording(Handler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            self.rfile = __import__("io").BytesIO(body)
            self.headers.replace_header("Content-Length", str(len(body)))
            seen.append(str(json.loads(body or b"{}").get("method")))
            super().do_POST()

    Recording.code = code
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recording)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


if __name__ == "__main__":
    Handler.code = int(sys.argv[2]) if len(sys.argv) > 2 else -32020
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
