"""A server (the real SDK's MCPServer) whose MCP App view changes under a pinned bench: the
tool ``show`` declares the view ``ui://flip/view.html``, and ``flip`` rewrites that view's
HTML (nothing else) and says so (``tools/list_changed``, then ``resources/updated``).

In process: ``create(state_path)``; over stdio: ``python view_server.py STATE_PATH``. The
state is a JSON file read at every read of the view: ``version`` (default 1) is written into
the HTML, ``broken`` (default false) makes the read fail, and ``pad`` (default 0) adds that
many spaces to the HTML (to go over a bench's ``max_message_bytes``).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

URI = "ui://flip/view.html"
MIME = "text/html;profile=mcp-app"


def read_state(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        found = {}
    return found if isinstance(found, dict) else {}


def write_state(path: Path, **state: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(path)


def html(version: int, pad: int = 0) -> str:
    return (f"<!DOCTYPE html><html><head><title>v{version}</title></head>"
            f"<body><p>view version {version}</p>{' ' * pad}</body></html>")


def create(path: str | Path) -> MCPServer:
    state_path = Path(path)
    server = MCPServer("flipview")

    @server.tool(meta={"ui": {"resourceUri": URI}})
    def show(text: str = "hi") -> str:
        """Show the text in the view."""
        return f"shown: {text}"

    @server.tool()
    def plain() -> str:
        """A tool without a view."""
        return "plain"

    @server.tool()
    async def flip(ctx: Context, version: int = 2, broken: bool = False) -> str:
        """Rewrite the view's HTML (the tools' declarations stay as they were), then say so."""
        write_state(state_path, version=version, broken=broken)
        await ctx.notify_tools_changed()
        with contextlib.suppress(Exception):  # a 2026 connection has no legacy channel
            await ctx.session.send_tool_list_changed()
        with contextlib.suppress(Exception):
            await ctx.session.send_resource_updated(URI)
        return f"version {version}"

    @server.resource(URI, mime_type=MIME)
    def view() -> str:
        state = read_state(state_path)
        if state.get("broken"):
            raise RuntimeError("the view cannot be read (broken on purpose)")
        return html(int(state.get("version", 1)), int(state.get("pad", 0)))

    return server


if __name__ == "__main__":
    create(sys.argv[1]).run("stdio")
