"""A well-behaved MCPServer for tests.

`python echo_server.py [stdio|streamable-http|sse] [PORT]`
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("echo-server", version="9.8.7")


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers (structured result)."""
    return a + b


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer: for timeouts and interrupts."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def fail(reason: str) -> str:
    """Report a failure the tool itself chose."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return "done"


@server.tool()
def whoami(ctx: Context) -> dict[str, Any]:
    """Return the request _meta provenance and the env var TOOLBENCH_TEST_SECRET's length."""
    meta = ctx.request_context.meta or {}
    secret = os.environ.get("TOOLBENCH_TEST_SECRET", "")
    return {"provenance": meta.get("toolbench/provenance"), "secret_len": len(secret),
            "pid": os.getpid()}


@server.tool()
def leak_to_stderr() -> str:
    """Write the secret env value to stderr (a careless server)."""
    print("the secret is " + os.environ.get("TOOLBENCH_TEST_SECRET", "<unset>"), file=sys.stderr,
          flush=True)
    return "logged"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool, and announce the change on both protocol generations."""
    name = f"extra_{len(server._tool_manager.list_tools())}"
    server.add_tool(lambda: "extra", name=name)
    await ctx.notify_tools_changed()
    with contextlib.suppress(Exception):  # a 2026 connection has no legacy channel
        await ctx.session.send_tool_list_changed()
    return name


@server.tool()
def die() -> str:
    """Exit the whole process mid-call: a lost connection."""
    os._exit(3)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    print(f"echo_server starting ({mode})", file=sys.stderr, flush=True)
    if mode == "stdio":
        server.run("stdio")
    else:
        port = int(sys.argv[2])
        server.run(mode, host="127.0.0.1", port=port)  # type: ignore[call-overload]
