"""Per-call overhead of McpClient's sync face against the SDK's own ``Client.call_tool``.

Both sides call the same in-process MCPServer over the JSON-RPC (legacy) wire path, in the
same run, interleaved round by round so machine noise hits both alike. The SDK side runs
inside one ``anyio.run`` (its best case: no thread hop); McpClient pays for the hop from the
calling thread to the shared loop and back, which is the price of a synchronous face.

    python -m benchmarks.bench_mcp [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer

from toolbench._core.ids import ToolId
from toolbench._loop import get_loop
from toolbench._transports.mcp.client import McpClient

TARGET_RATIO = 1.15


def _server() -> MCPServer:
    srv = MCPServer("bench")

    @srv.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return srv


def _sdk_round(server: MCPServer, calls: int, mode: str) -> float:
    async def main() -> float:
        async with Client(server, mode=mode, cache=None) as client:
            await client.call_tool("add", {"a": 1, "b": 2})  # warm the schema cache
            started = time.perf_counter()
            for i in range(calls):
                await client.call_tool("add", {"a": i, "b": 2})
            return (time.perf_counter() - started) / calls

    return anyio.run(main)


def _toolbench_round(client: McpClient, calls: int) -> float:
    tool = ToolId("bench", "add")
    started = time.perf_counter()
    for i in range(calls):
        get_loop().run(client.call, tool, {"a": i, "b": 2})  # the sync hop, as a Bench
    return (time.perf_counter() - started) / calls


def _on_loop_round(client: McpClient, calls: int) -> float:
    """``acall`` awaited on the shared loop itself: McpClient's cost without the thread hop."""
    tool = ToolId("bench", "add")

    async def body() -> float:
        started = time.perf_counter()
        for i in range(calls):
            await client.call(tool, {"a": i, "b": 2})
        return (time.perf_counter() - started) / calls

    return get_loop().run(body)


def run(quick: bool) -> dict[str, Any]:
    rounds, calls = (3, 150) if quick else (5, 600)
    server = _server()
    figures: dict[str, Any] = {"rounds": rounds, "calls_per_round": calls}
    for mode in ("legacy", "auto"):  # "legacy": the JSON-RPC wire path, like for like
        ours: list[float] = []
        sdk: list[float] = []
        on_loop: list[float] = []
        client = McpClient(server, name="bench", protocol_mode=mode)
        get_loop().run(client.aconnect)
        try:
            get_loop().run(client.call, ToolId("bench", "add"), {"a": 0, "b": 0})
            for _ in range(rounds):
                sdk.append(_sdk_round(server, calls, mode))
                ours.append(_toolbench_round(client, calls))
                on_loop.append(_on_loop_round(client, calls))
        finally:
            get_loop().run(client.aclose)
        sdk_us = statistics.median(sdk) * 1e6
        ours_us = statistics.median(ours) * 1e6
        figures[mode] = {
            "sdk_call_tool_us": round(sdk_us, 1),
            "mcpclient_call_sync_us": round(ours_us, 1),
            "ratio": round(ours_us / sdk_us, 3),
            "overhead_us": round(ours_us - sdk_us, 1),
            "mcpclient_acall_on_loop_us": round(statistics.median(on_loop) * 1e6, 1),
        }
    figures["target_ratio"] = TARGET_RATIO
    figures["meets_target"] = figures["legacy"]["ratio"] <= TARGET_RATIO
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (under ~15 s)")
    figures = run(parser.parse_args().quick)
    print(f"{figures['rounds']} rounds x {figures['calls_per_round']} calls, medians per call")
    print(f"{'mode':<8}{'SDK call_tool':>16}{'McpClient sync':>18}{'ratio':>8}{'extra':>10}"
          f"{'acall on loop':>16}")
    for mode in ("legacy", "auto"):
        f = figures[mode]
        print(f"{mode:<8}{f['sdk_call_tool_us']:>13.1f} us{f['mcpclient_call_sync_us']:>15.1f} us"
              f"{f['ratio']:>8.3f}{f['overhead_us']:>7.1f} us"
              f"{f['mcpclient_acall_on_loop_us']:>13.1f} us")
    verdict = "meets" if figures["meets_target"] else "misses"
    print(f"legacy ratio {verdict} the target of {TARGET_RATIO}")


if __name__ == "__main__":
    main()
