"""Streamable HTTP (stdlib only) that offers one huge page of tools, as JSON or as an event.

    big_catalog_http.py PORT --tools 100000 [--sse] [--desc-bytes 20]

``--sse`` answers every request with an event stream (``text/event-stream``), the page split
over several ``data:`` lines and preceded by a notification and an ``id:`` line whose quotes
and brackets would confuse a count that read them; without it, plain JSON bodies. The
``count`` tool returns how many tools/list requests it answered. A port of 0 picks a free
one; the URL is printed on stdout once it listens.
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def page(tools: int, desc_bytes: int) -> list[dict[str, Any]]:
    description = "d" * desc_bytes
    return [{"name": f"t{i}", "description": description, "inputSchema": {"type": "object"}}
            for i in range(tools)]


class Handler(BaseHTTPRequestHandler):
    tools = 10
    desc_bytes = 20
    sse = False
    lists = 0
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._empty(405)

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
            body = {"result": {"tools": page(self.tools, self.desc_bytes)}}
        elif method == "tools/call":
            body = {"result": {"content": [{"type": "text", "text": str(Handler.lists)}]}}
        else:
            body = {"error": {"code": -32601, "message": f"Method not found: {method}"}}
        data = json.dumps({"jsonrpc": "2.0", "id": msg["id"], **body}).encode()
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
        else:
            kind = "application/json"
        self.send_response(200)
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
    args = parser.parse_args()
    Handler.tools, Handler.desc_bytes, Handler.sse = args.tools, args.desc_bytes, args.sse
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
