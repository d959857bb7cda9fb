"""Demo MCP server ``limited``: a streamable HTTP server that limits its callers.

Run it with ``python -m toolbench.demo.limited --port N`` (``--port 0`` picks a free port; the
first line on stdout is ``READY http://127.0.0.1:<port>/mcp``). Offline, on 127.0.0.1, it
behaves as a busy real server does:

- it admits ``--rate`` tool calls a second (a token bucket holding ``--burst``), and answers
  the rest HTTP 429 with a ``Retry-After`` (whole seconds, as HTTP says; ``--retry-after``
  sets a fixed value instead, fractions allowed, for quick tests) before running anything;
- it answers some calls HTTP 503 before running anything: every ``--unavailable-every``-th
  call (deterministic, for tests) or a seeded ``--unavailable-rate`` of them;
- ``--forever`` answers every tool call 429: a server that never lets a caller in;
- its lists carry the 2026-07-28 cache hints (``ttlMs``, ``cacheScope``: ``--list-ttl-ms``
  and ``--cache-scope``) on sessions of that protocol era.

``GET /stats`` says what it served, so a test or a notebook can count at the server: calls
``received``, ``served`` (the tool ran), ``limited`` (429), ``unavailable`` (503), and
``repeated`` (how many times a tool ran again for arguments it had already run for; a sweep
that never doubles a call leaves it 0). ``POST /stats/reset`` zeroes them.

Tools: ``lookup`` (a number's square and its digits' sum, ``delay_ms`` to be slow) and
``stats`` (the counters, as a tool).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server import CacheHint
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

NAME = "limited"
MAX_BODY = 1 << 20
"""The most of a POST body the limiter reads to find the JSON-RPC method."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class Limits:
    """How the server limits its callers (see the module's docstring)."""

    rate: float = 20.0
    burst: float = 5.0
    retry_after: float | None = None
    unavailable_every: int = 0
    unavailable_rate: float = 0.0
    forever: bool = False
    seed: int = 0


@dataclass
class Stats:
    """What the server saw and did, counted at the server."""

    received: int = 0
    served: int = 0
    limited: int = 0
    unavailable: int = 0
    runs: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, int]:
        return {"received": self.received, "served": self.served, "limited": self.limited,
                "unavailable": self.unavailable,
                "repeated": sum(n - 1 for n in self.runs.values() if n > 1),
                "distinct": len(self.runs)}


class Bucket:
    """A token bucket: ``rate`` a second, holding at most ``burst``."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, max(1.0, burst)
        self.tokens, self.at = self.burst, time.monotonic()

    def take(self) -> float:
        """0 if a call may run now (a token taken), else the seconds until one may."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class Lookup(BaseModel):
    n: int
    square: int
    digit_sum: int


def limiter(app: App, limits: Limits, stats: Stats) -> App:
    """ASGI middleware: 429 and 503 for ``tools/call`` POSTs before the MCP app sees them."""
    bucket = Bucket(limits.rate, limits.burst)
    chance = random.Random(limits.seed)
    admitted = 0

    async def busy(send: Send, status: int, wait: float) -> None:
        if limits.retry_after is not None:
            shown = f"{limits.retry_after:g}"
        else:
            shown = str(max(1, math.ceil(wait)))
        text = b"Too Many Requests" if status == 429 else b"Service Unavailable"
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain"),
                                (b"retry-after", shown.encode()),
                                (b"content-length", str(len(text)).encode())]})
        await send({"type": "http.response.body", "body": text})

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal admitted
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await app(scope, receive, send)
            return
        messages: list[Message] = []
        size, more = 0, True
        while more and size <= MAX_BODY:  # a bigger body passes on unread (no tool call)
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            messages.append(message)
            size += len(message.get("body", b""))
            more = bool(message.get("more_body"))
        try:
            method = None if more else json.loads(
                b"".join(m.get("body", b"") for m in messages)).get("method")
        except (ValueError, AttributeError):
            method = None
        if method == "tools/call":
            stats.received += 1
            wait = math.inf if limits.forever else bucket.take()
            if wait > 0:
                stats.limited += 1
                await busy(send, 429, 1.0 if math.isinf(wait) else wait)
                return
            admitted += 1
            if ((limits.unavailable_every and admitted % limits.unavailable_every == 0)
                    or (limits.unavailable_rate and chance.random() < limits.unavailable_rate)):
                stats.unavailable += 1
                await busy(send, 503, 1.0)
                return
        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await app(scope, replay, send)

    return guarded


def build_server(limits: Limits, stats: Stats, *, list_ttl_ms: int = 60_000,
                 cache_scope: str = "public") -> MCPServer:
    """The MCP server (its tools count their runs into ``stats``)."""
    scope: Any = cache_scope
    hint = CacheHint(ttl_ms=list_ttl_ms, scope=scope)
    server = MCPServer(
        NAME,
        instructions="An offline demo server that limits its callers: it answers HTTP 429 "
                     f"beyond {limits.rate:g} calls a second, and sometimes 503.",
        cache_hints={"tools/list": hint, "resources/list": hint, "prompts/list": hint},
        log_level="WARNING",
    )

    @server.tool(description="A number's square and the sum of its digits (slow with "
                             "delay_ms): one row of a sweep.")
    async def lookup(n: int, delay_ms: int = 0) -> Lookup:
        stats.runs[json.dumps({"n": n, "delay_ms": delay_ms}, sort_keys=True)] += 1
        stats.served += 1
        if delay_ms > 0:
            await anyio.sleep(min(delay_ms, 60_000) / 1000)
        return Lookup(n=n, square=n * n, digit_sum=sum(int(d) for d in str(abs(n))))

    @server.tool(description="What this server received, served, limited and repeated.")
    def counters() -> dict[str, int]:
        return stats.as_dict()

    @server.custom_route("/stats", methods=["GET"])  # type: ignore[untyped-decorator]
    async def stats_page(request: Request) -> Response:
        return JSONResponse(stats.as_dict())

    @server.custom_route("/stats/reset", methods=["POST"])  # type: ignore[untyped-decorator]
    async def stats_reset(request: Request) -> Response:
        stats.received = stats.served = stats.limited = stats.unavailable = 0
        stats.runs.clear()
        return JSONResponse(stats.as_dict())

    return server


async def serve(port: int = 0, *, limits: Limits | None = None, list_ttl_ms: int = 60_000,
                cache_scope: str = "public", ready: Any = None) -> None:
    """Serve on 127.0.0.1:``port`` until cancelled; ``ready(url)`` is told the MCP URL."""
    import uvicorn

    from toolbench.demo.protected import _bind

    sock = _bind(port)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    stats = Stats()
    limits = limits or Limits()
    server = build_server(limits, stats, list_ttl_ms=list_ttl_ms, cache_scope=cache_scope)
    app = server.streamable_http_app(transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=[base.removeprefix("http://")],
        allowed_origins=[base]))
    config = uvicorn.Config(limiter(app, limits, stats), log_level="warning",
                            lifespan="on", log_config=None)

    class Told(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and ready is not None:
                ready(f"{base}/mcp")

    await Told(config).serve(sockets=[sock])


def _positive(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: a number above 0")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text}: a number of seconds, 0 or more")
    return value


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m toolbench.demo.limited",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--rate", type=_positive, default=20.0, help="tool calls a second")
    parser.add_argument("--burst", type=_positive, default=5.0, help="calls admitted at once")
    parser.add_argument("--retry-after", type=_seconds, default=None, metavar="SECONDS",
                        help="a fixed Retry-After (default: the whole seconds until a token)")
    parser.add_argument("--unavailable-every", type=int, default=0, metavar="K",
                        help="answer every K-th admitted call 503 (0: never)")
    parser.add_argument("--unavailable-rate", type=float, default=0.0, metavar="P",
                        help="answer this share of admitted calls 503 (seeded)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--forever", action="store_true", help="answer every tool call 429")
    parser.add_argument("--list-ttl-ms", type=int, default=60_000)
    parser.add_argument("--cache-scope", choices=("public", "private"), default="public")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port}: a port is 0..65535")
    if args.unavailable_every < 0 or not 0 <= args.unavailable_rate <= 1:
        parser.error("--unavailable-every is 0 or more; --unavailable-rate is 0..1")
    if args.list_ttl_ms < 0:
        parser.error(f"--list-ttl-ms {args.list_ttl_ms}: 0 or more")
    limits = Limits(rate=args.rate, burst=args.burst, retry_after=args.retry_after,
                    unavailable_every=args.unavailable_every,
                    unavailable_rate=args.unavailable_rate, forever=args.forever,
                    seed=args.seed)

    def ready(url: str) -> None:
        print(f"READY {url}", flush=True)

    try:
        anyio.run(lambda: serve(args.port, limits=limits, list_ttl_ms=args.list_ttl_ms,
                                cache_scope=args.cache_scope, ready=ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        sys.exit(f"limited demo: cannot serve on 127.0.0.1:{args.port}: {exc}")


if __name__ == "__main__":
    main()
