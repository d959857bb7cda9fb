"""Resources and resource templates on the bench: tables, reads, links, one history, bounds.

In-process ``MCPServer``s for each behaviour, the bundled ``beyond`` demo over real stdio, and
server-everything (npm) over stdio; the process tests are ``slow``.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import sqlite3
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources.types import BinaryResource, TextResource
from servers import everything

import toolbench as tb
from toolbench._bench.journal import file as journal_file
from toolbench._transports.mcp.methods import listing as mcp_listing
from toolbench.demo import beyond

HOSTILE = "<script>alert('x')</script><img src=x onerror=alert(1)>"
PNG = base64.b64encode(beyond.swatch_png()).decode()


def resource_server(label: str = "res", *, hits: list[str] | None = None) -> MCPServer:
    """Text, JSON, hostile text, a PNG, a binary blob, a template, and tools that link."""
    srv = MCPServer(f"test-{label}")
    srv.add_resource(TextResource(uri="note://plain", name="plain", title="Plain note",
                                  description="a short note", mime_type="text/plain",
                                  text=f"hello from {label}"))
    srv.add_resource(TextResource(uri="note://hostile", name="hostile", mime_type="text/plain",
                                  description=HOSTILE, text=HOSTILE))
    srv.add_resource(TextResource(uri="note://data.json", name="data",
                                  mime_type="application/json", text='{"a": [1, 2], "b": "x"}'))
    srv.add_resource(BinaryResource(uri="note://pic.png", name="pic", mime_type="image/png",
                                    data=beyond.swatch_png()))
    srv.add_resource(BinaryResource(uri="note://raw.bin", name="raw",
                                    mime_type="application/octet-stream",
                                    data=bytes(range(256)) * 40))

    @srv.resource("item://{key}", name="item", mime_type="text/plain")
    def item(key: str) -> str:
        if hits is not None:
            hits.append(key)
        return f"item {key} of {label}"

    @srv.tool()
    def linker(key: str) -> list[t.ContentBlock]:
        return [t.TextContent(type="text", text="see the link"),
                t.ResourceLink(type="resource_link", uri=f"item://{key}", name=f"item {key}",
                               mime_type="text/plain", description=HOSTILE)]

    @srv.tool()
    def embedder() -> list[t.ContentBlock]:
        return [t.EmbeddedResource(type="resource", resource=t.TextResourceContents(
            uri="note://inline", mime_type="text/plain", text=HOSTILE + "x" * 50_000))]

    return srv


@pytest.fixture
def bench() -> Any:
    with tb.Bench(timeout=10) as b:
        b.connect("one", resource_server("one"))
        b.connect("two", resource_server("two"))
        yield b


# -- tables ---------------------------------------------------------------------------------
def test_resources_and_templates_are_frames_with_the_contract_columns(bench: Any) -> None:
    df = bench.resources()
    assert list(df.columns) == ["name", "server", "uri", "title", "description", "mime_type",
                                "size", "annotations"]
    assert sorted(set(df["server"])) == ["one", "two"]
    plain = df[(df["server"] == "one") & (df["uri"] == "note://plain")].iloc[0]
    assert (plain["name"], plain["title"], plain["mime_type"]) == ("plain", "Plain note",
                                                                   "text/plain")
    assert set(df[df["server"] == "two"]["uri"]) == {
        "note://plain", "note://hostile", "note://data.json", "note://pic.png", "note://raw.bin"}
    only = bench.resources("one", search="JSON")
    assert list(only["uri"]) == ["note://data.json"]
    templates = bench.resource_templates()
    assert list(templates["uri"]) == ["item://{key}", "item://{key}"]
    assert list(templates["server"]) == ["one", "two"]
    assert templates["size"].isna().all()


def test_a_toolbox_offers_no_resources_and_the_bench_says_so(bench: Any) -> None:
    @tb.tool(server="calc")
    def double(n: int) -> int:
        """Twice n."""
        return 2 * n

    bench.add(tb.ToolBox(double))
    assert "calc" not in set(bench.resources()["server"])  # left out, no warning
    with pytest.raises(tb.Refused, match="offers tools only") as info:
        bench.resources("calc")
    assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
    with pytest.raises(tb.Refused, match="offers tools only"):
        bench.read("calc", "note://plain")
    with pytest.raises(tb.Unreachable, match="no server 'nope'"):
        bench.read("nope", "note://plain")


def test_a_server_without_the_resources_capability_is_refused_before_sending() -> None:
    async def no_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=[])

    with tb.Bench(timeout=10) as bench:
        bench.connect("bare", Server("bare", on_list_tools=no_tools))
        bench.connect("one", resource_server("one"))
        assert set(bench.resources()["server"]) == {"one"}
        with pytest.raises(tb.Refused, match="does not offer resources") as info:
            bench.read("bare", "x://y")
        assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
        assert type(info.value).__name__ == "NotOffered"  # a Refused known by its type
        row = bench.records.iloc[-1]
        assert (row["kind"], row["disposition"], row["error_type"]) == (
            "resource", "did_not_happen", "NotOffered")


# -- reading --------------------------------------------------------------------------------
def test_read_text_json_image_and_blob(bench: Any) -> None:
    text = bench.read("one", "note://plain")
    assert isinstance(text, tb.ReadResult)
    assert (text.text, text.server, text.mime_type) == ("hello from one", "one", "text/plain")
    data = bench.read("two", "note://data.json")
    assert data.data == {"a": [1, 2], "b": "x"}
    assert "&quot;a&quot;: [" in data._repr_html_()  # pretty JSON, escaped
    pic = bench.read("one", "note://pic.png")
    assert pic.blob() == beyond.swatch_png()
    assert '<img style="max-width:480px" src="data:image/png;base64,' in pic._repr_html_()
    raw = bench.read("one", "note://raw.bin")
    assert raw.blob() == bytes(range(256)) * 40 and raw.data == raw.blob()
    page = raw._repr_html_()
    assert "binary: 10,240 bytes, application/octet-stream" in page
    assert raw.contents[0]["blob"][:40] not in page  # a blob is never put in the page
    assert "[binary: 10240 bytes, application/octet-stream]" in repr(raw)
    filled = bench.read("two", "item://k7")
    assert filled.text == "item k7 of two"


def test_hostile_text_is_escaped_and_long_text_is_capped(bench: Any) -> None:
    hostile = bench.read("one", "note://hostile")
    assert hostile.text == HOSTILE  # the data is kept as sent
    page = hostile._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "onerror=alert(1)>" not in page
    long = tb.ReadResult("x://long", [{"uri": "x://long", "mimeType": "text/plain",
                                       "text": "y" * 200_000}])
    page = long._repr_html_()
    assert len(page) < 45_000 and "200,000 characters in all" in page


def test_an_unknown_uri_is_refused_and_recorded_before_it_raises(bench: Any) -> None:
    with pytest.raises(tb.Refused, match="Unknown resource") as info:
        bench.read("one", "note://missing")
    assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
    row = bench.records.iloc[-1]
    assert row["kind"] == "resource" and row["tool"] == "note://missing"
    assert row["arguments"] == {"uri": "note://missing"} and not row["ok"]
    with pytest.raises(tb.Refused, match="non-empty str"):
        bench.read("one", "")


def test_links_and_embedded_resources_show_and_can_be_followed(bench: Any) -> None:
    result = bench.call("two-linker", key="k1")
    page = result._repr_html_()
    assert "[resource_link block]" not in page
    assert "[resource link]" in page and "item://k1" in page and "item k1" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    link = result.content[1]
    followed = bench.read(link)  # the link's record says it came from "two"
    assert (followed.server, followed.text) == ("two", "item k1 of two")
    assert bench.read(dict(link)).server == "two"  # an equal copy is found too
    assert bench.read(link, server="one").text == "item k1 of one"
    embedded = bench.call("one-embedder")
    page = embedded._repr_html_()
    assert "[resource block]" not in page and "[embedded resource]" in page
    assert "note://inline" in page and "&lt;script&gt;" in page and "<script>" not in page
    assert "50,056 characters in all" in page or "characters in all" in page
    assert len(page) < 45_000
    inline = bench.read(embedded.content[0])
    assert inline.uri == "note://inline" and inline.text.startswith(HOSTILE)
    with pytest.raises(ValueError, match="follows a resource_link or resource block"):
        bench.read({"type": "text", "text": "x"})


def test_a_link_of_unknown_origin_needs_a_server() -> None:
    with tb.Bench(timeout=10) as bench:
        bench.connect("one", resource_server("one"))
        bench.connect("two", resource_server("two"))
        link = {"type": "resource_link", "uri": "item://z", "name": "z"}
        with pytest.raises(ValueError, match="pass server="):
            bench.read(link)
        bench.disconnect("two")
        assert bench.read(link).text == "item z of one"  # only one server could serve it


# -- one history ----------------------------------------------------------------------------
def test_reads_are_records_with_a_kind_and_map_and_compare_work(bench: Any) -> None:
    bench.call("one-linker", key="a")
    bench.read("one", "note://plain")
    frame = bench.map_read("one", ["item://1", "note://missing", "item://2"], progress=False)
    assert list(frame["kind"]) == ["resource"] * 3
    assert list(frame["ok"]) == [True, False, True]
    assert frame.iloc[1]["disposition"] == "did_not_happen"
    assert frame.iloc[0]["text"] == "item 1 of one"
    assert len(set(frame["batch"])) == 1 and frame.iloc[0]["batch"] is not None
    compared = bench.compare_read(["item://q", "note://plain"])
    assert list(compared["case"]) == [0, 0, 1, 1]
    assert list(compared["server"]) == ["one", "two", "one", "two"]
    assert list(compared["text"]) == ["item q of one", "item q of two", "hello from one",
                                      "hello from two"]
    records = bench.records
    assert records.iloc[0]["kind"] == "tool" and records.iloc[1]["kind"] == "resource"
    assert set(records["kind"]) == {"tool", "resource"}
    assert set(compared["call_id"]) <= set(records["call_id"])
    read_row = records.iloc[1]
    assert read_row["content"][0]["type"] == "resource"
    assert read_row["content"][0]["resource"]["text"] == "hello from one"


def test_a_read_never_stands_in_for_a_tool_call_on_resume(tmp_path: Path) -> None:
    hits: list[str] = []
    with tb.Bench(journal=tmp_path / "j.sqlite") as bench:
        bench.connect("one", resource_server("one", hits=hits))
        bench.map_read("one", ["item://a", "item://a"], progress=False)
        assert hits == ["a", "a"]  # idempotent: no resume, both read
        df = bench.map("one-linker", [{"key": "a"}], resume=True, progress=False)
        assert df.iloc[0]["kind"] == "tool" and df.iloc[0]["ok"]


def test_the_journal_keeps_kind_and_an_old_journal_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.connect("one", resource_server("one"))
        bench.call("one-linker", key="z")
        bench.read("one", "note://plain")
    with tb.Bench(journal=path) as again:
        assert list(again.records["kind"]) == ["tool", "resource"]
        assert again.records.iloc[1]["text"] == "hello from one"
    # A schema-2 file (before kind): drop the column the way an old toolbench wrote it.
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"VACUUM INTO '{old}'")
    db.close()
    db = sqlite3.connect(old)
    db.execute("ALTER TABLE calls DROP COLUMN kind")
    db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    with tb.Bench(journal=old) as bench:
        assert list(bench.records["kind"]) == ["tool", "tool"]  # NULL: written as calls
        bench.connect("one", resource_server("one"))
        bench.read("one", "note://plain")
    db = sqlite3.connect(old)
    assert db.execute("PRAGMA user_version").fetchone() == (journal_file.SCHEMA_VERSION,)
    assert [r[0] for r in db.execute("SELECT kind FROM calls ORDER BY seq")] == [
        None, None, "resource"]
    db.close()


# -- bounds ---------------------------------------------------------------------------------
def test_a_huge_resource_in_process_is_malformed_not_kept() -> None:
    srv = MCPServer("huge")
    srv.add_resource(TextResource(uri="big://text", name="big", text="z" * (50 * 1024 * 1024)))
    with tb.Bench(timeout=30) as bench:
        bench.connect("huge", srv)
        with pytest.raises(tb.Malformed, match="more than max_message_bytes") as info:
            bench.read("huge", "big://text")
        assert "52,428,800 characters" in str(info.value)
        row = bench.records.iloc[-1]
        assert row["kind"] == "resource" and row["text"] is None and row["content"] == []


def test_a_read_that_hangs_times_out_in_doubt() -> None:
    srv = MCPServer("slow")

    @srv.resource("slow://{n}")
    async def slow(n: str) -> str:
        await anyio.sleep(30)
        return n

    with tb.Bench(timeout=10) as bench:
        bench.connect("slow", srv)
        with pytest.raises(tb.TimedOut) as info:
            bench.read("slow", "slow://1", timeout=0.5)
        assert info.value.disposition is tb.Disposition.IN_DOUBT
        assert bench.records.iloc[-1]["kind"] == "resource"


def _paging_server(repeat: bool) -> Server[Any]:
    async def no_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=[])

    async def pages(ctx: Any, params: Any) -> t.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        n = int(cursor) if cursor and cursor.isdigit() else 0
        return t.ListResourcesResult(resources=[t.Resource(name=f"r{n}", uri=f"x://{n}")],
                                     next_cursor="same" if repeat else str(n + 1))

    return Server("pager", on_list_tools=no_tools, on_list_resources=pages)


def test_listing_pagination_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    with tb.Bench(timeout=10) as bench:
        bench.connect("loop", _paging_server(repeat=True))
        with pytest.raises(tb.Malformed, match="repeated the resources/list cursor"):
            bench.resources("loop")
        with pytest.warns(tb.ListingWarning, match="loop"):
            assert bench.resources().empty  # every server on its own: a warning, no raise
        bench.connect("endless", _paging_server(repeat=False), max_tools=25)
        with pytest.raises(tb.Unreachable, match="more than max_tools=25 resources"):
            bench.resources("endless")
        monkeypatch.setattr(mcp_listing, "MAX_PAGES", 5)
        bench.disconnect("endless")
        bench.connect("endless", _paging_server(repeat=False))
        with pytest.raises(tb.Unreachable, match="more than 5 pages of resources"):
            bench.resources("endless")


def test_every_operation_has_a_blocking_and_an_awaitable_face() -> None:
    for op in ("resources", "resource_templates", "read", "compare_read", "map_read"):
        sync, awaitable = getattr(tb.Bench, op), getattr(tb.Bench, "a" + op)
        assert not inspect.iscoroutinefunction(sync) and inspect.iscoroutinefunction(awaitable)
        assert (list(inspect.signature(sync).parameters)
                == list(inspect.signature(awaitable).parameters)), op


def test_the_awaitable_faces_work_from_another_loop() -> None:
    async def main() -> tuple[str, int]:
        async with tb.Bench(timeout=10) as bench:
            await bench.aconnect("one", resource_server("one"))
            read = await bench.aread("one", "note://plain")
            df = await bench.aresources("one")
            return read.text, len(df)

    assert asyncio.run(main()) == ("hello from one", 5)


# -- over stdio -----------------------------------------------------------------------------
BIG_SERVER = textwrap.dedent("""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.resources.types import TextResource
    srv = MCPServer("big")
    srv.add_resource(TextResource(uri="big://text", name="big", text="z" * (50 * 1024 * 1024)))
    srv.add_resource(TextResource(uri="small://text", name="small", text="fine"))
    srv.run()
""")


@pytest.mark.slow
def test_a_50_mb_resource_over_stdio_fails_the_read_and_the_server_recovers(
        tmp_path: Path) -> None:
    script = tmp_path / "big_server.py"
    script.write_text(BIG_SERVER)
    with tb.Bench(timeout=60, connect_timeout=60) as bench:
        bench.connect("big", [sys.executable, str(script)])
        with pytest.raises(tb.Malformed, match="exceeded max_message_bytes=33,554,432") as info:
            bench.read("big", "big://text")
        assert info.value.disposition is tb.Disposition.LANDED
        assert bench.read("big", "small://text").text == "fine"  # reconnected


@pytest.mark.slow
def test_the_beyond_demo_over_stdio() -> None:
    with tb.Bench(timeout=30, connect_timeout=60) as bench:
        bench.connect("beyond", [sys.executable, "-m", "toolbench.demo.beyond"])
        df = bench.resources("beyond")
        assert set(df["uri"]) == {"beyond://readme", "beyond://cities.json",
                                  "beyond://swatch.png", "beyond://bytes.bin", "beyond://note"}
        assert list(bench.resource_templates()["uri"]) == ["city://{name}"]
        assert bench.read("beyond", "beyond://swatch.png").blob() == beyond.swatch_png()
        raw = bench.read("beyond", "beyond://bytes.bin")
        assert raw.blob() == bytes(range(256))
        assert "binary: 256 bytes" in raw._repr_html_()
        cities = bench.read("beyond", "beyond://cities.json").data
        assert {c["name"] for c in cities} >= {"Paris", "Lima"}
        result = bench.call("beyond-city_link", name="lima")
        link = next(b for b in result.content if b["type"] == "resource_link")
        assert bench.read(link).data["country"] == "Peru"
        embedded = bench.call("beyond-city_embedded", name="paris")
        assert "[embedded resource]" in embedded._repr_html_()
        assert list(bench.records["kind"]) == ["resource"] * 3 + ["tool", "resource", "tool"]


@pytest.mark.slow
def test_an_instant_error_reply_from_the_beyond_demo_is_refused_not_in_doubt() -> None:
    # The server answers the read of an unknown city at once with -32603 and the prompt with
    # a missing argument with 0: safe to repeat, so Refused with the code and the message.
    with tb.Bench(timeout=30, connect_timeout=60) as bench:
        bench.connect("beyond", [sys.executable, "-m", "toolbench.demo.beyond"])
        with pytest.raises(tb.Refused) as info:
            bench.read("beyond", "city://atlantis")
        assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
        assert "error -32603" in str(info.value) and "unknown city 'atlantis'" in str(info.value)
        with pytest.raises(tb.Refused, match=r"prompts/get .*to_city") as fetch:
            bench.prompt("beyond-plan_trip", from_city="Paris")
        assert fetch.value.disposition is tb.Disposition.DID_NOT_HAPPEN
        rows = bench.records.tail(2)
        assert list(rows["error_type"]) == ["Refused", "Refused"]
        assert list(rows["disposition"]) == ["did_not_happen"] * 2
        assert list(rows["kind"]) == ["resource", "prompt"]
        assert bench.read("beyond", "city://lima").data["country"] == "Peru"  # still up
        assert bench.servers.iloc[0]["status"] == "connected"


def test_an_error_reply_to_a_listing_is_refused() -> None:
    async def no_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=[])

    async def broken(ctx: Any, params: Any) -> t.ListResourcesResult:
        raise RuntimeError("the index is being rebuilt")

    srv: Server[Any] = Server("broken-list", on_list_tools=no_tools,
                              on_list_resources=broken)
    with tb.Bench(timeout=10) as bench:
        bench.connect("broken", srv)
        with pytest.raises(tb.Refused, match="resources/list") as info:
            bench.resources("broken")
        assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN


_why_not = everything.node_missing()


@pytest.mark.slow
@pytest.mark.skipif(_why_not is not None, reason=f"server-everything needs Node.js: {_why_not}")
def test_server_everything_resources_templates_and_links_over_stdio() -> None:
    command = everything.stdio_command()
    with tb.Bench(timeout=30, connect_timeout=60) as bench:
        bench.connect("everything", command)
        df = bench.resources("everything")
        static = {u for u in df["uri"] if u.startswith("demo://resource/static/document/")}
        assert len(static) == 7 and set(df["mime_type"]) >= {"text/markdown"}
        templates = bench.resource_templates("everything")
        assert set(templates["uri"]) >= {"demo://resource/dynamic/text/{resourceId}",
                                         "demo://resource/dynamic/blob/{resourceId}"}
        doc = bench.read("everything", "demo://resource/static/document/features.md")
        assert doc.mime_type == "text/markdown" and len(doc.text) > 100
        blob = bench.read("everything", "demo://resource/dynamic/blob/3")
        assert "blob" in blob.contents[0] and "binary:" in blob._repr_html_()
        links = bench.call("everything-get-resource-links", count=2)
        found = [b for b in links.content if b["type"] == "resource_link"]
        assert len(found) == 2 and "[resource link]" in links._repr_html_()
        text_link = next(b for b in found if "/text/" in b["uri"])
        assert bench.read(text_link).server == "everything"
        ref = bench.call("everything-get-resource-reference", resourceType="Text",
                         resourceId=4)
        assert "[embedded resource]" in ref._repr_html_()


@pytest.mark.slow
def test_compare_read_leaves_out_a_real_server_that_offers_no_resources() -> None:
    """Issue 37, item 12: mcp-server-time (tools only; it lists no resources) gave a failed
    row on every case of a compare over a resource. It gives none now, unless named in
    ``servers``."""
    exe = Path(sys.executable).parent / "mcp-server-time"
    with tb.Bench(timeout=20) as bench:
        bench.connect("one", resource_server("one"))
        bench.connect("time", f"{exe} --local-timezone UTC")
        compared = bench.compare_read(["note://plain", "item://q"])
        assert list(compared["server"]) == ["one", "one"] and all(compared["ok"])
        named = bench.compare_read("note://plain", servers=["one", "time"])
        assert list(named["server"]) == ["one", "time"]
        assert named.iloc[1]["error_type"] == "Refused" and "note://plain" in named.iloc[1]["error"]
