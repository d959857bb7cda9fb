"""The ``atlas`` demo server (an MCP App) through the MCP SDK's own ``mcp.Client``, no toolbench.

In process on both protocol paths (``mode="auto"``, 2026-07-28, and ``mode="legacy"``,
2025-11-25), and once over stdio as a real ``python -m toolbench.demo.atlas`` child. The
checks are the server's side of MCP Apps: the tool declares its view in both keys, the view
is a ``ui://`` resource of ``text/html;profile=mcp-app`` whose ``_meta.ui`` is on the list entry
and on the content item, the app-only tool says so, and the view itself is self-contained
(no URL it could load) and speaks the handshake by hand.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import anyio
import mcp.types as t
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from toolbench.demo import atlas
from toolbench.demo._cities import table

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
MODES = ("auto", "legacy")


def run(body: Callable[[], Awaitable[T]], limit: float = 60.0) -> T:
    async def bounded() -> T:
        with anyio.fail_after(limit):
            return await body()

    return anyio.run(bounded)


@asynccontextmanager
async def in_process(mode: str) -> AsyncIterator[Client]:
    async with Client(atlas.create(), mode=mode, read_timeout_seconds=30) as client:
        yield client


@asynccontextmanager
async def over_stdio(mode: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "toolbench.demo.atlas"],
                                   env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode,
                          read_timeout_seconds=30) as client:
            yield client


def text_of(result: t.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, t.TextContent))


async def check_server(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"show_map", "map_cities", "distance"}
    assert tools["show_map"].meta == {"ui": {"resourceUri": atlas.VIEW_URI},
                                      "ui/resourceUri": atlas.VIEW_URI}
    assert tools["map_cities"].meta == {"ui": {"visibility": ["app"]}}
    assert not (tools["distance"].meta or {}).get("ui")  # the default: model and app

    listed = {str(r.uri): r for r in (await client.list_resources()).resources}
    assert set(listed) == {atlas.VIEW_URI}
    entry = listed[atlas.VIEW_URI]
    assert entry.mime_type == "text/html;profile=mcp-app"
    assert entry.meta == {"ui": {"csp": {}, "prefersBorder": True}}

    read = await client.read_resource(atlas.VIEW_URI)
    (item,) = read.contents
    assert isinstance(item, t.TextResourceContents)
    assert item.mime_type == "text/html;profile=mcp-app"
    assert item.meta == {"ui": {"csp": {}, "prefersBorder": True}}
    assert item.text == atlas.view_html()

    shown = await client.call_tool("show_map", {"from_city": "london", "to_city": "Tokyo",
                                                "unit": "mi"})
    assert not shown.is_error
    assert shown.structured_content == {"cities": len(table()), "unit": "mi",
                                        "from_city": "London", "to_city": "Tokyo",
                                        "distance": 5939.423}  # as geo-distance says
    assert "London to Tokyo: 5939.423 mi" in text_of(shown)
    one = await client.call_tool("show_map", {"to_city": "paris"})
    assert one.structured_content == {"cities": len(table()), "unit": "km", "to_city": "Paris"}
    bad = await client.call_tool("show_map", {"from_city": "Atlantis", "to_city": "Paris"})
    assert bad.is_error and "unknown city 'Atlantis' for argument 'from_city'" in text_of(bad)

    cities = await client.call_tool("map_cities", {})
    data = cities.structured_content
    assert data is not None and data["count"] == len(table()) == len(data["cities"])
    assert data["cities"][0] == {"name": "London", "country": "United Kingdom",
                                 "lat": 51.5074, "lon": -0.1278}

    far = await client.call_tool("distance", {"from_city": "London", "to_city": "Paris"})
    assert far.structured_content == {"result": 343.557}


@pytest.mark.parametrize("mode", MODES)
def test_atlas_lists_reads_and_calls_in_process(mode: str) -> None:
    async def body() -> None:
        async with in_process(mode) as client:
            await check_server(client)

    run(body)


@pytest.mark.slow
def test_atlas_over_stdio() -> None:
    async def body() -> None:
        async with over_stdio("auto") as client:
            await check_server(client)

    run(body)


def test_the_view_is_self_contained_and_speaks_the_handshake_by_hand() -> None:
    html = atlas.view_html()
    assert html.startswith("<!doctype html>") and "<head>" in html
    assert len(html.encode()) < 16_000  # small: a demo, not a bundle
    # Nothing to load: no src/href attribute, no URL but the SVG namespace, no import.
    assert not re.search(r"\b(src|href)\s*=", html)
    assert re.findall(r"https?://[^\s\"'<>]+", html) == ["http://www.w3.org/2000/svg"]
    assert "import(" not in html and "fetch(" not in html
    # Untrusted text is set as text, never parsed as HTML.
    assert "innerHTML" not in html and "insertAdjacentHTML" not in html
    assert "document.write" not in html
    # The MCP Apps handshake, by hand: initialize, then initialized, then calls through the host.
    for needle in ('"ui/initialize"', '"ui/notifications/initialized"', '"tools/call"',
                   '"ui/notifications/size-changed"', '"ui/resource-teardown"',
                   'protocolVersion: PROTOCOL', 'const PROTOCOL = "2026-01-26"',
                   "event.source !== window.parent", 'callTool("map_cities"',
                   'callTool("distance"', 'id="measure-btn"'):
        assert needle in html, needle
    handshake = html.index('request("ui/initialize"')
    assert handshake < html.index('notify("ui/notifications/initialized"')
