"""A model provider on 127.0.0.1 that answers recorded replies, for the adapters' tests.

The real ``openai`` and ``anthropic`` client packages talk HTTP to it through their
``base_url``, so everything the client does (serializing, parsing, status handling, its
exceptions) runs for real; nothing reaches a network. Each POST gets the next scripted reply
and its JSON body is kept, so a test can see what the client sent.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    """One recorded reply: a status, a JSON body (or raw bytes), extra headers."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Stub:
    url: str
    answers: list[Answer]
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@contextlib.contextmanager
def provider(*answers: Answer | Any) -> Iterator[Stub]:
    """Serve ``answers`` in order (a bare value is a 200 JSON reply); yield the stub."""
    queue = [a if isinstance(a, Answer) else Answer(a) for a in answers]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            with lock:
                stub.paths.append(self.path)
                stub.requests.append(json.loads(raw) if raw else {})
                answer = queue.pop(0) if queue else Answer(
                    {"error": {"message": "the stub has no more replies"}}, 500)
            body = answer.body if isinstance(answer.body, bytes) else json.dumps(
                answer.body).encode()
            self.send_response(answer.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            for key, value in answer.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stub = Stub(f"http://127.0.0.1:{server.server_address[1]}", queue)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


# -- recorded replies (shapes as the providers send them) -------------------------------------
def openai_tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1",
                     usage: tuple[int, int] = (82, 24)) -> dict[str, Any]:
    return {
        "id": "chatcmpl-AbC123", "object": "chat.completion", "created": 1733400000,
        "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_5f20662549",
        "choices": [{"index": 0, "logprobs": None, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "refusal": None, "tool_calls": [{
                "id": call_id, "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)}}]}}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                  "total_tokens": sum(usage)}}


def openai_text(text: str, usage: tuple[int, int] = (140, 12)) -> dict[str, Any]:
    return {
        "id": "chatcmpl-AbC124", "object": "chat.completion", "created": 1733400001,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "logprobs": None, "finish_reason": "stop", "message": {
            "role": "assistant", "content": text, "refusal": None}}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                  "total_tokens": sum(usage)}}


OPENAI_429 = Answer({"error": {
    "message": "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): "
               "Limit 30000, Used 30000, Requested 120. Please try again in 240ms.",
    "type": "tokens", "param": None, "code": "rate_limit_exceeded"}}, 429,
    {"retry-after-ms": "240", "x-request-id": "req_1"})


def anthropic_tool_use(name: str, arguments: dict[str, Any], text: str | None = None,
                       use_id: str = "toolu_01A", usage: tuple[int, int] = (412, 61)
                       ) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "id": use_id, "name": name, "input": arguments})
    return {"id": "msg_01XFD", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": content, "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}


def anthropic_text(text: str, usage: tuple[int, int] = (530, 18),
                   stop_reason: str = "end_turn") -> dict[str, Any]:
    content = [{"type": "text", "text": text}] if text else []
    return {"id": "msg_01XFE", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": content, "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}


ANTHROPIC_429 = Answer({"type": "error", "error": {
    "type": "rate_limit_error",
    "message": "This request would exceed your organization's rate limit of 50,000 input "
               "tokens per minute."}}, 429, {"retry-after": "1", "request-id": "req_2"})
