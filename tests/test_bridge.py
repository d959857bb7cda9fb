"""MCP Apps, kernel side: negotiation, discovery, the frame's policy and the bridge, driven
without a browser against a hand-written in-process app server (DESIGN.md, "MCP Apps")."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer

import toolbench as tb
from toolbench._bench.apps.bridge import MAX_IN_FLIGHT, Bridge
from toolbench._bench.apps.meta import EXTENSION, MIME_TYPE

VIEW = "<!DOCTYPE html><html><head><title>v</title></head><body><p>hi</p></body></html>"


def app_server(mime: str = MIME_TYPE, uri: str = "ui://clock/view.html",
               document: str = VIEW) -> MCPServer:
    server = MCPServer("app")

    @server.tool(meta={"ui": {"resourceUri": uri}, "ui/resourceUri": uri})
    def clock(zone: str = "UTC") -> str:
        """The time in a zone."""
        return f"12:00 {zone}"

    @server.tool(meta={"ui": {"visibility": ["app"]}})
    def poll() -> dict[str, int]:
        """Only the view polls this."""
        return {"load": 1}

    @server.tool(meta={"ui": {"visibility": ["model"]}})
    def secret() -> str:
        """Only the model may call this."""
        return "s"

    @server.tool()
    def caps(ctx: Context) -> str:
        """What the client advertised."""
        found = ctx.session.client_capabilities
        return json.dumps(found.extensions if found is not None else None)

    @server.resource("ui://clock/view.html", mime_type=mime, meta={"ui": {
        "csp": {"connectDomains": ["https://api.example.com", "http://plain.example.com"],
                "resourceDomains": ["*", "https://cdn.example.com", "'unsafe-eval'"]},
        "permissions": {"clipboardWrite": {}}, "prefersBorder": True}})
    def view() -> str:
        return document

    return server


def bench_with(server: MCPServer, **options: Any) -> tb.Bench:
    bench = tb.Bench(**options)
    bench.connect("app", server, protocol_mode="legacy")
    return bench


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_extension_is_advertised_in_both_eras_and_not_with_apps_off(mode: str) -> None:
    for apps, expected in ((True, {EXTENSION: {"mimeTypes": [MIME_TYPE]}}), (False, None)):
        with tb.Bench(apps=apps) as bench:
            bench.connect("app", app_server(), protocol_mode=mode)
            assert json.loads(bench.call("app-caps").text) == expected


def test_catalog_and_apps_show_views_and_visibility() -> None:
    with bench_with(app_server()) as bench:
        cat = bench.catalog().set_index("tool")
        assert cat.loc["clock", "ui"] == "ui://clock/view.html"
        assert cat.loc["poll", "visibility"] == ("app",)
        assert cat.loc["caps", "visibility"] == ("model", "app")
        assert not isinstance(cat.loc["caps", "ui"], str)
        apps = bench.apps()
        assert list(apps.columns) == ["name", "server", "tool", "uri", "mime_type", "bytes",
                                      "csp", "permissions", "domain", "prefers_border", "error"]
        row = apps.iloc[0]
        assert (row["tool"], row["mime_type"], row["bytes"]) == ("clock", MIME_TYPE, len(VIEW))
        assert row["error"] is None and row["prefers_border"] is True
        assert row["permissions"] == ["clipboardWrite"]
        assert "connect-src https://api.example.com;" in row["csp"]
        assert "plain.example.com" not in row["csp"] and "unsafe-eval" not in row["csp"]
        assert "default-src 'none'" in row["csp"] and "object-src 'none'" in row["csp"]
        assert "frame-src 'none'" in row["csp"] and "base-uri 'none'" in row["csp"]
        assert "script-src 'unsafe-inline' https://cdn.example.com;" in row["csp"]


def test_a_bad_uri_is_a_warning_and_a_wrong_mime_type_an_error_row() -> None:
    with bench_with(app_server(uri="https://evil.example.com/v.html")) as bench:
        cat = bench.catalog().set_index("tool")
        assert not isinstance(cat.loc["clock", "ui"], str)
        assert any("https://evil.example.com/v.html" in w and "ui://" in w
                   for w in cat.loc["clock", "warnings"])
        assert bench.call("app-clock").app is None
    with bench_with(app_server(mime="text/html")) as bench:
        row = bench.apps().iloc[0]
        assert "text/html" in row["error"] and MIME_TYPE in row["error"]
        assert row["csp"] is None
        assert bench.call("app-clock").app is None


def test_apps_off_gives_no_view() -> None:
    with bench_with(app_server(), apps=False) as bench:
        assert bench.call("app-clock").app is None


def opened(bench: tb.Bench) -> tuple[tb.Result, Bridge]:
    result = bench.call("app-clock", zone="CET")
    return result, bridge_of(result.app)


def bridge_of(app: Any) -> Bridge:
    """The bridge behind ``result.app`` (tb.Bench makes an AppView of it)."""
    bridge = getattr(app, "bridge", app)
    assert isinstance(bridge, Bridge)
    return bridge


def test_the_bridge_answers_as_design_says() -> None:
    asyncio.run(_answers())


async def _answers() -> None:
    async with tb.Bench() as bench:
        await bench.aconnect("app", app_server(), protocol_mode="legacy")
        result = await bench.acall("app-clock", zone="CET")
        bridge = bridge_of(result.app)
        assert bridge.html.startswith(
            '<!DOCTYPE html><base href="about:srcdoc"><meta http-equiv="Content-Security-Policy"')
        init = await bridge.ahandle({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
                                    "params": {"protocolVersion": "2026-01-26"}})
        assert init is not None
        info = init["result"]
        assert info["hostInfo"]["name"] == "toolbench"
        assert "sampling" not in info["hostCapabilities"]
        assert info["hostContext"]["toolInfo"]["tool"]["name"] == "clock"
        assert info["hostContext"]["displayMode"] == "inline"
        assert not bridge.outbox  # nothing before initialized
        assert await bridge.ahandle({"jsonrpc": "2.0",
                                    "method": "ui/notifications/initialized"}) is None
        methods = [m["method"] for m in bridge.outbox]
        assert methods == ["ui/notifications/tool-input", "ui/notifications/tool-result"]
        assert bridge.outbox[0]["params"] == {"arguments": {"zone": "CET"}}
        # tools/call through the bench, with its provenance
        reply = await bridge.ahandle({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                     "params": {"name": "poll", "arguments": {}}})
        assert reply is not None and reply["result"]["structuredContent"] == {"load": 1}
        records = bench.records
        last = records.iloc[-1]
        assert last["tool"] == "poll" and last["ok"]
        assert last["provenance"]["app"] == {"uri": "ui://clock/view.html",
                                             "opened_by": result.call_id}
        # a model-only tool and an unknown one: -32602 and a Refused record
        for name in ("secret", "other-tool"):
            before = len(bench.records)
            reply = await bridge.ahandle({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                         "params": {"name": name}})
            assert reply is not None and reply["error"]["code"] == -32602
            assert name in reply["error"]["message"]
            rec = bench.records.iloc[-1]
            assert len(bench.records) == before + 1 and rec["error_type"] == "Refused"
        # the rest of the methods
        link = await bridge.ahandle({"jsonrpc": "2.0", "id": 4, "method": "ui/open-link",
                                    "params": {"url": "https://example.com/x"}})
        assert link == {"jsonrpc": "2.0", "id": 4, "result": {}}
        assert list(bridge.links) == ["https://example.com/x"]
        await bridge.ahandle({"jsonrpc": "2.0", "id": 5, "method": "ui/message",
                             "params": {"role": "user", "content": [{"type": "text",
                                                                     "text": "hello"}]}})
        assert bridge.messages[-1]["role"] == "user"
        await bridge.ahandle({"jsonrpc": "2.0", "id": 6, "method": "ui/update-model-context",
                             "params": {"structuredContent": {"a": 1}}})
        assert bridge.context == {"structuredContent": {"a": 1}}
        mode = await bridge.ahandle({"jsonrpc": "2.0", "id": 7,
                                    "method": "ui/request-display-mode",
                                    "params": {"mode": "fullscreen"}})
        assert mode is not None and mode["result"] == {"mode": "fullscreen"}  # issue 43
        read = await bridge.ahandle({"jsonrpc": "2.0", "id": 8, "method": "resources/read",
                                    "params": {"uri": "ui://clock/view.html"}})
        assert read is not None and read["result"]["contents"][0]["text"] == VIEW
        assert bench.records.iloc[-1]["kind"] == "resource"
        unknown = await bridge.ahandle({"jsonrpc": "2.0", "id": 9, "method": "no/such"})
        assert unknown is not None and unknown["error"]["code"] == -32601
        await bridge.ahandle({"jsonrpc": "2.0", "method": "notifications/message",
                             "params": {"level": "info", "data": "from the view"}})
        logs = bench.logs
        assert ((logs["kind"] == "app") & (logs["message"] == "from the view")).any()
        await bridge.ahandle({"jsonrpc": "2.0", "method": "ui/notifications/size-changed",
                             "params": {"height": 99999}})
        assert bridge.height == 4000
        bad = await bridge.ahandle({"jsonrpc": "1.0", "id": 10, "method": "x"})
        assert bad is not None and bad["error"]["code"] == -32600
        big = await bridge.ahandle({"jsonrpc": "2.0", "id": 11, "method": "ui/message",
                                   "params": {"x": "a" * (5 * 1024 * 1024)}})
        assert big is not None and "over the limit" in big["error"]["message"]
        log = bridge.log
        assert list(log.columns) == ["time", "direction", "method", "id", "ok", "error"]
        assert {"in", "out"} <= set(log["direction"])
        bridge.post = None  # no front end: the bridge sends the teardown and waits itself
        started = time.monotonic()
        answered = await bridge.ateardown()  # nobody answers here: bounded at 2 s
        assert answered is False and bridge.outbox[-1]["method"] == "ui/resource-teardown"
        assert 1.5 < time.monotonic() - started < 5
        unanswered = bridge.log.iloc[-1]
        assert (unanswered["direction"], unanswered["method"], unanswered["ok"]) == (
            "in", "ui/resource-teardown", False)
        assert "did not answer" in unanswered["error"]
        after = await bridge.ahandle({"jsonrpc": "2.0", "id": 12, "method": "ping"})
        assert after is not None and "torn down" in after["error"]["message"]


def test_in_flight_requests_are_bounded() -> None:
    asyncio.run(_bounded())


async def _bounded() -> None:
    server = app_server()

    @server.tool(meta={"ui": {"visibility": ["app"]}})
    async def slow() -> str:
        """Slow."""
        await asyncio.sleep(0.3)
        return "ok"

    async with tb.Bench() as bench:
        await bench.aconnect("app", server, protocol_mode="legacy")
        bridge = bridge_of((await bench.acall("app-clock")).app)
        replies = await asyncio.gather(*(bridge.ahandle(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "slow"}})
            for i in range(MAX_IN_FLIGHT + 4)))
        refused = [r for r in replies if r is not None and "error" in r]
        assert len(refused) == 4 and all("in flight" in r["error"]["message"] for r in refused)
        assert int((bench.records["tool"] == "slow").sum()) == MAX_IN_FLIGHT


def test_bench_app_reopens_a_recorded_call() -> None:
    with bench_with(app_server()) as bench:
        result, _ = opened(bench)
        again = bridge_of(bench.app(result.call_id))
        assert again.opened.arguments == {"zone": "CET"}
        with pytest.raises(KeyError):
            bench.app("no-such-call")


def test_a_missing_view_and_one_over_the_byte_cap_are_error_rows() -> None:
    with tb.Bench() as bench:
        bench.connect("app", app_server(uri="ui://clock/missing.html"), protocol_mode="legacy")
        row = bench.apps().iloc[0]
        assert "ui://clock/missing.html" in row["error"] and row["csp"] is None
        assert bench.call("app-clock").app is None
    with tb.Bench() as bench:
        bench.connect("app", app_server(document=VIEW + " " * 200_000),
                      protocol_mode="legacy", max_message_bytes=100_000)
        row = bench.apps().iloc[0]
        assert "100,000" in row["error"] and row["bytes"] == 0 and row["csp"] is None
        assert bench.call("app-clock").app is None


def listed_only_server(listed_meta: dict[str, Any] | None) -> Any:
    """A view whose ``_meta.ui`` is only on its ``resources/list`` entry (the read's content
    item carries none), as some servers send it."""
    import mcp_types as t
    from mcp.server import Server

    uri = "ui://listed/view.html"

    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=[t.Tool(
            name="show", input_schema={"type": "object"},
            _meta={"ui": {"resourceUri": uri}})])

    async def call_tool(ctx: Any, params: Any) -> t.CallToolResult:
        return t.CallToolResult(content=[t.TextContent(type="text", text="shown")])

    async def list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
        return t.ListResourcesResult(resources=[t.Resource(
            name="view", uri=uri, mime_type=MIME_TYPE, _meta=listed_meta)])

    async def read_resource(ctx: Any, params: Any) -> t.ReadResourceResult:
        return t.ReadResourceResult(contents=[t.TextResourceContents(
            uri=uri, mime_type=MIME_TYPE, text=VIEW)])

    return Server("listed", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource)


def test_a_views_meta_falls_back_to_its_resources_list_entry() -> None:
    """DESIGN.md, "MCP Apps", Discovery: the content item's ``_meta.ui`` first, the
    ``resources/list`` entry's as the fallback."""
    listed = {"ui": {"csp": {"connectDomains": ["https://api.example.com"]},
                     "permissions": {"geolocation": {}}, "prefersBorder": True}}
    with tb.Bench() as bench:
        bench.connect("listed", listed_only_server(listed))
        (row,) = bench.apps().to_dict("records")
        assert row["error"] is None
        assert "connect-src https://api.example.com" in row["csp"]
        assert row["permissions"] == ["geolocation"] and row["prefers_border"] is True
    with tb.Bench() as bench:  # nothing listed either: the strictest policy
        bench.connect("listed", listed_only_server(None))
        (row,) = bench.apps().to_dict("records")
        assert row["error"] is None and "connect-src 'none'" in row["csp"]
        assert row["permissions"] == [] and row["prefers_border"] is False
        assert "meta" not in bench.resources().columns  # the table's columns are unchanged
