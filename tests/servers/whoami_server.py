"""A stdio MCP server whose tool says which process answered (for the pegboard test).

Two copies run under different server names; each must be reached by its own prefixed name.
``grow`` adds a tool and announces tools/list_changed, so the pegboard's refresh-on-notify
path is exercised against a real server too.
"""

from __future__ import annotations

import contextlib
import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("whoami")


@server.tool()
def whoami() -> dict[str, object]:
    """Report this process's pid and the WHOAMI_LABEL it was started with."""
    return {"pid": os.getpid(), "label": os.environ.get("WHOAMI_LABEL", "")}


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named ``extra`` and announce the change on both protocol generations."""
    server.add_tool(lambda: "extra", name="extra")
    await ctx.notify_tools_changed()
    with contextlib.suppress(Exception):  # a 2026 connection has no legacy channel
        await ctx.session.send_tool_list_changed()
    return "grew"


if __name__ == "__main__":
    server.run()
