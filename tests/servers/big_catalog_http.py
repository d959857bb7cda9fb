"""Streamable HTTP (stdlib only) that offers one huge page of tools, as JSON or as an event.

    big_catalog_http.py PORT --tools 100000 [--sse [--resume]] [--desc-bytes 20] [--tiny]

``--sse`` answers every request with an event stream (``text/event-stream``), the page split
over several ``data:`` lines and preceded by a notification and an ``id:`` line whose quotes
and brackets would confuse a count that read them; without it, plain JSON bodies. The
``count`` tool returns how many tools/list requests it answered. ``--resume`` (with
``--sse``): the tools/list POST's stream ends after one event with an ``id:``, before the
reply; the page comes on the GET that resumes it (``Last-Event-ID``), as a server whose
stream was cut would send it. ``--shout MB`` gives the client a session, and the first GET
that opens the standalone stream (no ``Last-Event-ID``) gets a notification of ``MB`` MiB.
A port of 0 picks a free one; the URL is printed on stdout once it listens.
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar


def page(tools: int, desc_bytes: int, tiny: bool) -> list[dict[str, Any]]:
    """``tiny``: ``{"name": "tN", "inputSchema": {}}``, the smallest tool the SDK accepts."""
    if tiny:
        return [{"name": f"t{i}", "inputSchema": {}} for i in range(tools)]
    description = "d" * desc_bytes
    return [{"name": f"t{i}", "description": description, "inputSchema": {"type": "object"}}
            for i in range(tools)]


class Handler(BaseHTTPRequestHandler):
    tools = 10
    desc_bytes = 20
    sse = False
    tiny = False
    lists = 0
    resume = False
    shout = 0.0
    held: ClassVar[dict[str, bytes]] = {}  # --resume: event id -> the stream that resumes after it
    encoded: bytes | None = None  # the reply to tools/list, but for its id (made once)
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        data = Handler.held.pop(self.headers.get("Last-Event-ID") or "", None)
        if data is None and self.shout and not self.headers.get("Last-Event-ID"):
            Handler.shout, big = 0, "n" * int(self.shout * 2**20)
            data = b"event: message\ndata: " + json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/message",
                 "params": {"level": "info", "data": big}}).encode() + b"\n\n"
        if data is None:
            self._empty(405)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_DELETE(self) -> None:
        self._empty(405)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        msg = json.loads(self.rfile.read(length) or b"{}")
        if "id" not in msg:
            self._empty(202)
            return
        method = msg.get("method")
        if method == "initialize":
            body: dict[str, Any] = {"result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "catalog", "version": "0.0.1"}}}
        elif method == "tools/list":
            Handler.lists += 1
            if Handler.encoded is None:
                Handler.encoded = json.dumps(
                    {"tools": page(self.tools, self.desc_bytes, self.tiny)}).encode()
            body = {"result": "RESULT"}
        elif method == "tools/call":
            body = {"result": {"content": [{"type": "text", "text": str(Handler.lists)}]}}
        else:
            body = {"error": {"code": -32601, "message": f"Method not found: {method}"}}
        data = json.dumps({"jsonrpc": "2.0", "id": msg["id"], **body}).encode()
        if body.get("result") == "RESULT" and Handler.encoded is not None:
            data = data.replace(b'"RESULT"', Handler.encoded)
        if self.sse:
            note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                               "params": {"level": "info", "data": "[{ listing"}}).encode()
            lines, at = [], 0  # split between tools: a newline inside a string is not JSON
            while at < len(data):
                cut = data.find(b', {"name"', at + 65_536)
                cut = len(data) if cut < 0 else cut + 1
                lines.append(data[at:cut])
                at = cut
            data = (b"event: message\ndata: " + note + b"\n\n"
                    + b'id: "[[[{\n: {"\r\nevent: message\n'
                    + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n")
            kind = "text/event-stream"
            if self.resume and method == "tools/list":
                event_id = f"ev-{Handler.lists}"
                Handler.held[event_id] = data
                data = b"retry: 10\nid: " + event_id.encode() + b"\nevent: message\ndata: " \
                    + note + b"\n\n"
        else:
            kind = "application/json"
        self.send_response(200)
        if method == "initialize" and self.shout:
            self.send_header("Mcp-Session-Id", "shouting")
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--desc-bytes", type=int, default=20)
    parser.add_argument("--sse", action="store_true")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--shout", type=float, default=0.0)
    args = parser.parse_args()
    Handler.tools, Handler.desc_bytes, Handler.sse = args.tools, args.desc_bytes, args.sse
    Handler.tiny, Handler.resume, Handler.shout = args.tiny, args.resume, args.shout
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.exit(0)


if __name__ == "__main__":
    main()
