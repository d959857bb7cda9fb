"""A legacy SSE MCP server (HTTP+SSE, 2024-11-05; stdlib only) that sends oversized events.

    big_sse_server.py PORT [--tools N] [--id-last]

GET ``/sse`` opens the event stream (first event: the POST endpoint); every reply goes out on
it as one ``message`` event, written *before* the POST is answered ``202``. ``--id-last``
writes each reply's ``id`` after its ``result``, as TypeScript servers do. Tools:

- ``echo(text)``: says it back;
- ``big(mb)``: a text result of ``mb`` MiB;
- ``shout(mb)``: a ``notifications/message`` of ``mb`` MiB, and never an answer;
- ``lists()``: how many ``tools/list`` requests were answered.

``tools/list`` offers ``--tools`` tiny tools (those four first) in one page. A port of 0
picks a free one; the URL is printed on stdout once it listens.
"""

import argparse
import json
import queue
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

MB = 2**20
SESSIONS: dict[str, "queue.Queue[bytes]"] = {}
BASE = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "big", "inputSchema": {"type": "object", "properties": {"mb": {"type": "number"}}}},
    {"name": "shout", "inputSchema": {"type": "object", "properties": {"mb": {"type": "number"}}}},
    {"name": "lists", "inputSchema": {"type": "object"}},
]


class Handler(BaseHTTPRequestHandler):
    tools = 4
    id_last = False
    lists = 0
    page: bytes | None = None
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if urlparse(self.path).path != "/sse":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        session = uuid.uuid4().hex
        events: queue.Queue[bytes] = queue.Queue()
        SESSIONS[session] = events
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(f"event: endpoint\r\ndata: /messages?session_id={session}\r\n\r\n"
                             .encode())
            self.wfile.flush()
            while True:
                try:
                    event = events.get(timeout=0.5)
                except queue.Empty:
                    self.wfile.write(b": ping\r\n\r\n")  # notices a client gone
                    self.wfile.flush()
                    continue
                self.wfile.write(event)
                self.wfile.flush()
        except OSError:
            pass
        finally:
            SESSIONS.pop(session, None)
            self.close_connection = True

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        msg = json.loads(self.rfile.read(length) or b"{}")
        events = SESSIONS.get(parse_qs(urlparse(self.path).query).get("session_id", [""])[0])
        if events is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "id" in msg:
            for event in self.answer(msg):
                events.put(event)
        self.send_response(202)
        self.send_header("Content-Length", "8")
        self.end_headers()
        self.wfile.write(b"Accepted")

    def reply(self, msg_id: Any, body: bytes) -> bytes:
        """One ``message`` event; ``body`` is the encoded ``"result": ...`` or ``"error": ...``."""
        ident = json.dumps(msg_id).encode()
        if self.id_last:
            data = b'{' + body + b',"jsonrpc":"2.0","id":' + ident + b'}'
        else:
            data = b'{"jsonrpc":"2.0","id":' + ident + b',' + body + b'}'
        return b"event: message\r\ndata: " + data + b"\r\n\r\n"

    def answer(self, msg: dict[str, Any]) -> list[bytes]:
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            result: Any = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "big-sse", "version": "0.0.1"}}
        elif method == "tools/list":
            Handler.lists += 1
            if Handler.page is None:
                extra = [{"name": f"t{i}", "inputSchema": {}}
                         for i in range(max(self.tools - len(BASE), 0))]
                Handler.page = json.dumps({"tools": BASE + extra}).encode()
            return [self.reply(msg["id"], b'"result":' + Handler.page)]
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "shout":
                note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                   "params": {"level": "info",
                                              "data": "n" * int(args["mb"] * MB)}}).encode()
                return [b"event: message\r\ndata: " + note + b"\r\n\r\n"]
            text = {"echo": lambda: args.get("text", ""), "big": lambda: "x" * int(args["mb"] * MB),
                    "lists": lambda: str(Handler.lists)}[name]()
            result = {"content": [{"type": "text", "text": text}]}
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            return [self.reply(msg["id"], b'"error":' + json.dumps(error).encode())]
        return [self.reply(msg["id"], b'"result":' + json.dumps(result).encode())]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--tools", type=int, default=4)
    parser.add_argument("--id-last", action="store_true")
    args = parser.parse_args()
    Handler.tools, Handler.id_last = args.tools, args.id_last
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}/sse", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.exit(0)


if __name__ == "__main__":
    main()
