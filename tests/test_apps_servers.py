"""MCP Apps against the real ext-apps example servers over stdio (npm, pinned), driven
without a browser through ``view.handle`` (DESIGN.md, "MCP Apps")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from tests.servers.everything import cache_dir
from toolbench._bench.apps.meta import MIME_TYPE

APPS_VERSION = "2.0.3"
"""The version `.ci/run` installs (APPS_VERSION there): change them together."""


def server_command(package: str) -> list[str]:
    """``node …/dist/index.js --stdio`` for a pinned ext-apps example server, else skip."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH; the ext-apps example servers need Node.js")
    root = cache_dir() / "node_modules" / "@modelcontextprotocol" / package
    how = (f"install it with: npm install --prefix {cache_dir()} --no-audit --no-fund "
           f"@modelcontextprotocol/{package}@{APPS_VERSION}")
    if not (root / "dist" / "index.js").is_file():
        pytest.skip(f"@modelcontextprotocol/{package} is not installed in {cache_dir()}; {how}")
    found = json.loads((root / "package.json").read_text(encoding="utf-8")).get("version")
    if found != APPS_VERSION:
        pytest.skip(f"{package} is {found!r}, the tests pin {APPS_VERSION!r}; {how}")
    return [node, str(Path(root, "dist", "index.js")), "--stdio"]


def rpc(id_: int | None, method: str, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id_ is not None:
        message["id"] = id_
    return message


@pytest.mark.slow
def test_basic_vanillajs_view_and_its_four_buttons() -> None:
    with tb.Bench(timeout=30) as bench:
        bench.connect("basic", server_command("server-basic-vanillajs"))
        cat = bench.catalog().set_index("tool")
        assert cat.loc["get-time", "ui"] == "ui://get-time/mcp-app.html"
        apps = bench.apps()
        row = apps.iloc[0]
        assert row["mime_type"] == MIME_TYPE and row["error"] is None
        assert row["bytes"] > 10_000
        result = bench.call("basic-get-time")
        view = result.app
        assert view is not None and view.sandbox == "allow-scripts"
        init = view.handle(rpc(1, "ui/initialize", protocolVersion="2026-01-26",
                               appInfo={"name": "t", "version": "1"}, appCapabilities={}))
        assert init["result"]["hostContext"]["toolInfo"]["tool"]["name"] == "get-time"
        view.handle(rpc(None, "ui/notifications/initialized"))
        outbox = view.bridge.outbox
        assert [m["method"] for m in outbox] == ["ui/notifications/tool-input",
                                                 "ui/notifications/tool-result"]
        # "Get Server Time": tools/call through the bench, recorded with its provenance
        reply = view.handle(rpc(2, "tools/call", name="get-time", arguments={}))
        assert "time" in reply["result"]["structuredContent"]
        last = bench.records.iloc[-1]
        assert last["ok"] and last["provenance"]["app"] == {
            "uri": "ui://get-time/mcp-app.html", "opened_by": result.call_id}
        # "Send Message", "Send Log", "Open Link"
        view.handle(rpc(3, "ui/message", role="user",
                        content=[{"type": "text", "text": "hello"}]))
        assert view.messages[-1]["content"][0]["text"] == "hello"
        view.handle(rpc(None, "notifications/message", level="info", data="a log"))
        assert (bench.logs["kind"] == "app").any()
        view.handle(rpc(4, "ui/open-link", url="https://modelcontextprotocol.io/"))
        assert view.links == ["https://modelcontextprotocol.io/"]


@pytest.mark.slow
def test_system_monitor_app_only_tool_is_callable_by_its_view_only() -> None:
    with tb.Bench(timeout=30) as bench:
        bench.connect("mon", server_command("server-system-monitor"))
        cat = bench.catalog().set_index("tool")
        app_only = [t for t, v in cat["visibility"].items() if tuple(v) == ("app",)]
        assert app_only, "system-monitor declares an app-only tool its view polls"
        with_view = [t for t, u in cat["ui"].items() if isinstance(u, str)]
        assert with_view
        result = bench.call(f"mon-{with_view[0]}")
        view = result.app
        assert view is not None
        view.handle(rpc(1, "ui/initialize", protocolVersion="2026-01-26"))
        reply = view.handle(rpc(2, "tools/call", name=app_only[0], arguments={}))
        assert "result" in reply, reply
        assert bench.records.iloc[-1]["provenance"]["app"]["opened_by"] == result.call_id
        refused = view.handle(rpc(3, "tools/call", name="not-a-tool", arguments={}))
        assert refused["error"]["code"] == -32602
        assert bench.records.iloc[-1]["error_type"] == "Refused"
