"""A stdio MCP server (the SDK's ``MCPServer``) with subscribable resources, for
resubscribing after a reconnect on either protocol era.

``pid`` answers the process id, so a test can kill it; ``touch(uri)`` says that ``uri``
changed (``notifications/resources/updated`` to whoever subscribed: a 2025 subscription, or
a 2026-07-28 ``subscriptions/listen`` stream naming it).
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("memo")


@server.resource("memo://{key}")
def memo(key: str) -> str:
    """A memo."""
    return f"memo {key}"


@server.tool()
def pid() -> int:
    """This process's id."""
    return os.getpid()


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Say that ``uri`` changed."""
    await ctx.notify_resource_updated(uri)
    return "ok"


if __name__ == "__main__":
    server.run()
