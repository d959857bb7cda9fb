"""An in-process MCP server for the fast tests: ``add`` answers at once, ``slow`` waits."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer


def make_mem_server() -> MCPServer:
    srv = MCPServer("mem", version="1.0")

    @srv.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @srv.tool()
    async def slow(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "done"

    return srv
