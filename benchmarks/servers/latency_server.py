"""A small MCP server over stdio whose every answer takes a fixed time: the benchmarks' target.

The latency is slept on the server side, so the client pays for it exactly as it would for
a real remote tool; ``delay_ms`` on a call overrides it, so one set of servers serves both the
"as fast as possible" and the "slow far side" workloads. ``--name`` sets the advertised
server name, because the SDK's ``ClientSessionGroup`` keys tool names on it.

    python benchmarks/servers/latency_server.py --latency-ms 20 --name slow20
"""

from __future__ import annotations

import argparse

import anyio
from mcp.server.mcpserver import MCPServer


def build(name: str, latency_ms: float) -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    async def work(x: int, delay_ms: float | None = None) -> int:
        """Sleep the server's latency (or ``delay_ms``), then return ``x + 1``."""
        wait = latency_ms if delay_ms is None else delay_ms
        if wait > 0:
            await anyio.sleep(wait / 1000.0)
        return x + 1

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers; no waiting (async, so the server spends no worker-thread hop)."""
        return a + b

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="how long every `work` call sleeps before answering")
    parser.add_argument("--name", default="latency", help="the server name it advertises")
    args = parser.parse_args()
    if args.latency_ms < 0:
        parser.error(f"--latency-ms must be 0 or more, not {args.latency_ms}")
    build(args.name, args.latency_ms).run("stdio")


if __name__ == "__main__":
    main()
