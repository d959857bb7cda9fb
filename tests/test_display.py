"""Safe display: every repr of the bench's objects escapes what servers send and stays small."""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError as ServerToolError

import toolbench as tb
from toolbench._notebook.views.compare import DIFFER, compare_html, disagreements
from toolbench._notebook.views.display import (
    bundle,
    error_html,
    frame_html,
    frame_text,
    html_table,
    kind_of,
    records_html,
    result_html,
    show,
)

SCRIPT = "<script>alert('xss')</script>"
IMG = "<img src=x onerror=alert(1)>"
BIG = "B" * 5_000_000
HOSTILE = SCRIPT + IMG
SMALL = 100_000


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A valid tiny PNG (red pixels), built by hand so no imaging library is needed."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def hostile_server(label: str = "evil") -> MCPServer:
    """Tools whose descriptions, results and errors carry markup and 5 MB of text."""
    srv = MCPServer(f"hostile-{label}")

    @srv.tool(title=IMG, description=HOSTILE + BIG)
    def shout(text: str = "hi") -> str:
        return f"{label}:{text}" + HOSTILE + BIG

    @srv.tool(description=SCRIPT)
    def blob(key: str = "k") -> dict[str, Any]:
        return {HOSTILE: SCRIPT, "big": BIG, "label": label, "key": key}

    @srv.tool(description=IMG)
    def boom(why: str = "x") -> str:
        raise ServerToolError(HOSTILE + why + BIG)

    @srv.tool()
    def picture() -> Image:
        return Image(data=png_bytes(), format="png")

    return srv


def no_live_markup(html: str) -> None:
    assert "<script" not in html.lower()
    assert "<img src=x" not in html and "<i>" not in html.replace("<i>[", "")


@pytest.fixture(scope="module")
def evil() -> Iterator[tb.Bench]:
    with tb.Bench() as bench:
        bench.connect("evil", hostile_server())
        bench.connect("twin", hostile_server("twin"))
        yield bench


def test_result_reprs_escape_and_stay_small(evil: tb.Bench) -> None:
    for name in ("evil-shout", "evil-blob"):
        result = evil.call(name)
        for html in (result._repr_html_(), result_html(result), bundle(result)["text/html"]):
            no_live_markup(html)
            assert "&lt;script&gt;" in html
            assert len(html) < SMALL
        assert len(repr(result)) < 5_000
        assert "text/plain" in bundle(result)
    assert "(shortened)" in result_html(evil.call("evil-blob"))
    # A text-only result (what most servers send) says how much there was in all.
    text_only = tb.Result([{"type": "text", "text": HOSTILE + BIG}, {"type": "text", "text": BIG}])
    shown = result_html(text_only)
    no_live_markup(shown)
    assert "5,000,0" in shown and len(shown) < SMALL


def test_result_mimebundle_small_with_huge_structured(evil: tb.Bench) -> None:
    result = evil.call("evil-blob")
    total = sum(len(str(v)) for v in result._repr_mimebundle_().values())
    assert total < SMALL


def test_images_inline_and_svg_never(evil: tb.Bench) -> None:
    result = evil.call("evil-picture")
    html = result_html(result)
    assert '<img style="max-width:480px" src="data:image/png;base64,' in html
    assert base64.b64encode(png_bytes()).decode() in html
    svg = tb.Result([{"type": "image", "mimeType": "image/svg+xml",
                      "data": base64.b64encode(b"<svg onload=alert(1)/>").decode()}])
    html = result_html(svg)
    assert "<img" not in html and "not shown" in html


def test_error_shows_type_disposition_and_escapes(evil: tb.Bench) -> None:
    with pytest.raises(tb.ToolFailed) as info:
        evil.call("evil-boom")
    html = error_html(info.value)
    no_live_markup(html)
    assert "ToolFailed" in html and "landed" in html and "the tool ran" in html
    assert "&lt;script&gt;" in html
    assert len(html) < SMALL
    refused = error_html(tb.Refused("bad <b>arg</b>"))
    assert "did_not_happen" in refused and "&lt;b&gt;arg" in refused
    assert "in_doubt" in error_html(tb.TimedOut("slow"))
    needs_url = tb.Refused("open it first")
    needs_url.urls = ["https://auth.example.com/a?b=1&c=<x>", "javascript:alert(1)"]  # type: ignore[attr-defined]
    shown = error_html(needs_url)
    assert '<a href="https://auth.example.com/a?b=1&amp;c=&lt;x&gt;" target="_blank"' in shown
    assert "javascript:alert(1)</code>" in shown and 'href="javascript' not in shown


def test_bench_tables_through_show(evil: tb.Bench) -> None:
    evil.call("evil-shout")
    evil.call("evil-blob")
    with pytest.raises(tb.ToolFailed):
        evil.call("evil-boom")
    frames = {"servers": evil.servers, "catalog": evil.catalog(), "records": evil.records,
              "compare": evil.compare("shout", [{"text": SCRIPT}])}
    for kind, df in frames.items():
        assert kind_of(df) == kind
        out = show(df)._repr_mimebundle_()
        assert set(out) == {"text/plain", "text/html"}
        no_live_markup(out["text/html"])
        assert len(out["text/html"]) < SMALL, kind
        assert len(out["text/plain"]) < SMALL, kind
        assert "&lt;" in out["text/html"] or kind == "servers"
    # The tooltip holds more of a long cell than the cell shows, escaped too.
    catalog_html = frame_html(evil.catalog())
    assert "title=\"&lt;script&gt;" in catalog_html
    assert "<i>" not in catalog_html  # the tool's title was <i>: escaped
    # The DataFrames themselves stay plain pandas.
    assert type(evil.records) is pd.DataFrame


def test_pandas_own_repr_is_safe_only_under_default_options(evil: tb.Bench) -> None:
    """Why show() exists: pandas escapes, but its caps are options a user may lift."""
    evil.call("evil-shout")
    for df in (evil.catalog(), evil.records):
        html = df._repr_html_()
        assert html is not None
        no_live_markup(html)
        assert len(html) < SMALL
    with pd.option_context("display.max_colwidth", None):
        html = evil.catalog()._repr_html_()
        assert html is not None and len(html) > 5_000_000  # every byte a server sent
        assert len(show(evil.catalog())._repr_mimebundle_()["text/html"]) < SMALL


@pytest.mark.slow
def test_bench_repr_escapes_failed_server_errors(tmp_path: Any) -> None:
    with tb.Bench(connect_timeout=10) as bench:
        bench.connect("evil", hostile_server())
        with pytest.raises(tb.Unreachable):
            bench.connect("gone", ["/nonexistent/" + "x" * 20 + "<script>"])
        out = bench._repr_mimebundle_()
        assert "text/plain" in out and "text/html" in out
        no_live_markup(out["text/html"])
        assert "failed" in out["text/html"] and "&lt;script&gt;" in out["text/html"]
        assert len(out["text/html"]) < SMALL
        assert show(bench)._repr_mimebundle_() == out


def test_html_table_caps_rows_and_cells() -> None:
    df = pd.DataFrame({"a": range(500), "b": ["x" * 300] * 500, "<c>": [None] * 500})
    html = html_table(df, max_rows=20, max_cell=50)
    assert html.count("<tr>") == 21  # the header and 20 rows
    assert "showing 20 of 500 rows" in html
    assert "&lt;c&gt;" in html
    assert 'title="' + "x" * 300 + '"' in html
    assert "x" * 51 not in html.replace('title="' + "x" * 300, "")
    assert "20 of 500" in html and len(html) < SMALL
    small = html_table(df.head(3))
    assert "3 rows" in small


def test_counts_are_printed_with_the_right_plural() -> None:
    from toolbench._core.html import counted

    assert [counted(n, "row") for n in (0, 1, 2, 1200)] == ["0 rows", "1 row", "2 rows",
                                                           "1,200 rows"]
    assert counted(1, "entry", "entries") == "1 entry" and counted(3, "entry", "entries") == (
        "3 entries")
    one = pd.DataFrame({"a": [1]})
    assert "<small>1 row</small>" in html_table(one) and "1 rows" not in html_table(one)
    assert frame_text(pd.DataFrame({"a": range(30)}), max_rows=20).endswith(
        "[showing 20 of 30 rows]")
    box = tb.ToolBox()

    @box.tool(server="solo")
    def only(x: int) -> int:
        """One tool."""
        return x

    with tb.Bench() as bench:
        bench.add(box)
        assert repr(bench) == "<Bench open: 1 server, 1 tool, 0 records>"
        bench.call("solo-only", x=1)
        assert repr(bench) == "<Bench open: 1 server, 1 tool, 1 record>"


def test_display_never_raises() -> None:
    class Nasty:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        def __str__(self) -> str:
            raise RuntimeError("no str")

    df = pd.DataFrame({"x": [Nasty()]}, dtype=object)
    out = bundle(df)
    assert "text/plain" in out
    out = bundle(Nasty())
    assert "text/plain" in out and "display failed" in out["text/plain"]
    broken = tb.Result(content=[{"type": "text", "text": Nasty()}])  # type: ignore[dict-item]
    assert "text/plain" in bundle(broken)
    assert "could not be shown" in result_html(broken) or "<pre>" in result_html(broken)
    assert "records" not in records_html(pd.DataFrame())
    assert "no calls yet" in records_html(pd.DataFrame())


def test_compare_view_highlights_disagreement_and_latency() -> None:
    df = pd.DataFrame([
        {"case": 0, "server": "a", "ok": True, "latency_ms": 10.0, "text": "1",
         "structured": {"v": 1}, "error_type": None, "error": None, "structured.v": 1},
        {"case": 0, "server": "b", "ok": True, "latency_ms": 40.0, "text": "1",
         "structured": {"v": 1}, "error_type": None, "error": None, "structured.v": 1},
        {"case": 1, "server": "a", "ok": True, "latency_ms": 20.0, "text": "2",
         "structured": {"v": 2}, "error_type": None, "error": None, "structured.v": 2},
        {"case": 1, "server": "b", "ok": True, "latency_ms": 80.0, "text": SCRIPT,
         "structured": {"v": 3}, "error_type": None, "error": None, "structured.v": 3},
        {"case": 1, "server": "c", "ok": False, "latency_ms": 5.0, "text": None,
         "structured": None, "error_type": "TimedOut", "error": IMG, "structured.v": None},
    ])
    assert disagreements(df) == {0: 1, 1: 3}
    html = compare_html(df)
    no_live_markup(html)
    assert "servers disagree on 1 of 2 cases" in html
    assert html.count("title='servers disagree'") == 3  # each row of case 1
    assert html.count("background:#fff3cd") >= 2  # b's answer and the differing v cells
    assert "background:#fde2e2" in html  # c failed
    assert "width:80px" in html and "width:10px" in html  # bars scale to the slowest (80 ms)
    assert "median latency per server" in html
    assert frame_html(df) == html
    # With a majority, only the odd answer is highlighted; a 1-1 split highlights both.
    # The structured fields show the answer, so there is no answer column beside them.
    three = df.iloc[[2, 3, 3]].assign(server=["a", "b", "d"], text=["2", "3", "3"])
    html = compare_html(three)
    assert "<th>answer</th>" not in html and "<th>error</th>" not in html  # none failed
    assert html.count(f"<td style='{DIFFER}'>2</td>") == 1
    assert f"<td style='{DIFFER}'>3</td>" not in html
    pair = df.iloc[[2, 3]].assign(text=["2", "3"])
    html = compare_html(pair)
    assert f"<td style='{DIFFER}'>2</td>" in html and f"<td style='{DIFFER}'>3</td>" in html
    failing = df.iloc[[0, 1, 4]].assign(case=0)
    html = compare_html(failing)
    assert "<th>answer</th>" not in html and "<th rowspan='2'>error</th>" in html
    assert ("<td style='background:#fde2e2' class='tb-wide'><span class=\"tb-error\" "
            "title=\"&lt;img src=x onerror=alert(1)&gt;\">TimedOut: &lt;img") in html
    # Without structured fields, the answer column carries the comparison.
    plain_text = three.drop(columns=["structured.v"]).assign(structured=None)
    html = compare_html(plain_text)
    assert "<th>answer</th>" in html
    assert html.count(f"<td style='{DIFFER}' class='tb-wide'>2</td>") == 1
    assert f"<td style='{DIFFER}' class='tb-wide'>3</td>" not in html


def test_compare_view_heads_structured_fields_by_key_under_one_group() -> None:
    """Issue 37 item 16: ``structured.`` on every field header made notebook 04's compare
    wider than its cell. The fields share one ``structured`` header; each is headed by its key
    (cut, escaped), its DataFrame column name in the tooltip. The frame itself is unchanged."""
    long_key = "population_of_the_metropolitan_area"
    fields = {"country": "Kenya", SCRIPT: 1, long_key: 4397000}
    df = pd.DataFrame([
        {"case": 0, "server": server, "name": "city", "arguments": {}, "ok": True,
         "disposition": None, "error_type": None, "error": None, "latency_ms": ms,
         "text": "{}", "structured": fields, **{f"structured.{k}": v for k, v in fields.items()}}
        for server, ms in (("geo", 5.0), ("atlas", 3.0))])
    columns = list(df.columns)
    html = compare_html(df)
    no_live_markup(html)
    assert list(df.columns) == columns
    head = html[html.index("<thead>"):html.index("</thead>")]
    assert head.count("<tr>") == 2
    assert head.startswith("<thead><tr><th rowspan='2'>case</th><th rowspan='2'>server</th>"
                           "<th rowspan='2'>ok</th><th rowspan='2'>latency_ms</th>"
                           "<th colspan='3' class='tb-group'>structured</th></tr>")
    fields_row = head.split("</tr>")[1]
    assert fields_row == (
        '<tr><th title="structured.country">country</th>'
        '<th title="structured.&lt;script&gt;alert(&#x27;xss&#x27;)&lt;/script&gt;">'
        "&lt;script&gt;alert(&#x27;xss&#x27;)&lt;/s…</th>"
        f'<th title="structured.{long_key}">population_of_the_metro…</th>')
    assert html.count("structured.") == 3  # only in the tooltips: no header repeats it
    assert ".toolbench-table th.tb-group{text-align:center}" in html
    text = bundle(df)["text/plain"]
    assert "structured.country" in text and "<thead>" not in text
    # Without structured fields the header stays one row.
    flat = compare_html(df.drop(columns=[f"structured.{k}" for k in fields]))
    assert "<thead><tr><th>case</th>" in flat and "tb-group" not in flat.split("</style>")[1]


def test_real_compare_frame(evil: tb.Bench) -> None:
    df = evil.compare("blob", [{"key": "same"}, {"key": SCRIPT}])
    assert set(df["server"]) == {"evil", "twin"}
    html = compare_html(df)
    no_live_markup(html)
    assert len(html) < SMALL
    # The servers answer with their own label, so every case differs.
    assert "servers disagree on 2 of 2 cases" in html
    assert "structured.label" in html


# -- the notebook face: what a reader sees -------------------------------------------------
def hinting_server() -> MCPServer:
    srv = MCPServer("hinting")

    @srv.tool()
    def lookup(city: str) -> dict[str, Any]:
        """Find a city."""
        if city != "Tokyo":
            raise ServerToolError(f"unknown city {city!r}. Did you mean 'Tokyo'?")
        return {"city": city, "population": 37_000_000}

    return srv


@pytest.fixture(scope="module")
def hinting() -> Iterator[tb.Bench]:
    with tb.Bench() as bench:
        bench.connect("hint", hinting_server())
        yield bench


def test_result_displays_as_the_html_card_not_a_json_tree(hinting: tb.Bench) -> None:
    """JupyterLab ranks application/json above text/html: offering it hid the card."""
    from IPython.core.formatters import DisplayFormatter

    result = hinting.call("hint-lookup", city="Tokyo")
    assert result.structured is not None
    data, _metadata = DisplayFormatter().format(result)
    assert set(data) == {"text/plain", "text/html"}
    assert "class='toolbench-result'" in data["text/html"]
    assert "hint/lookup" in data["text/html"] and " ms</small>" in data["text/html"]
    assert result.data == {"city": "Tokyo", "population": 37_000_000}  # the JSON, in code


def test_a_tool_error_is_shown_once(hinting: tb.Bench) -> None:
    with pytest.raises(tb.ToolFailed) as info:
        hinting.call("hint-lookup", city="Tokio")
    html = error_html(info.value)
    assert html.count("Did you mean") == 1
    assert "ToolFailed" in html and "landed" in html
    # A result that carries more than the message (an image, structured data) still shows.
    picture = tb.Result([{"type": "text", "text": "no"},
                         {"type": "image", "mimeType": "image/png",
                          "data": base64.b64encode(png_bytes()).decode()}], is_error=True)
    html = error_html(tb.ToolFailed("no", result=picture))
    assert "data:image/png;base64," in html


def test_history_keeps_dates_on_one_line_and_cells_short(hinting: tb.Bench) -> None:
    hinting.call("hint-lookup", city="Tokyo")
    with pytest.raises(tb.ToolFailed):
        hinting.call("hint-lookup", city="x" * 300)
    html = records_html(hinting.records)
    started = hinting.records["started"].iloc[-1].strftime("%Y-%m-%d %H:%M:%S")
    assert f"<td class='tb-nowrap'>{started}</td>" in html
    assert "td.tb-nowrap{white-space:nowrap" in html and "max-width:32em" in html
    assert "<td class='tb-number'>" in html  # latency, right-aligned on one line
    assert "<td class='tb-nowrap'>hint-lookup</td>" in html  # no break at the hyphen
    assert "td.tb-wide{min-width:12em}" in html and "<td class='tb-wide'>" in html
    assert "<div class='toolbench-scroll'><table" in html  # too wide: it scrolls sideways
    assert "x" * 49 not in html.replace("x" * 300, "")  # a long cell is cut (full in tooltip)


def test_compare_failure_carries_the_whole_error_on_hover() -> None:
    long_error = SCRIPT + " went wrong: " + "e" * 5000 + " END"
    df = pd.DataFrame([
        {"case": 0, "server": "a", "ok": True, "latency_ms": 10.0, "text": "1",
         "structured": None, "error_type": None, "error": None},
        {"case": 0, "server": "b", "ok": False, "latency_ms": 5.0, "text": None,
         "structured": None, "error_type": "ToolFailed", "error": long_error},
    ])
    html = compare_html(df)
    no_live_markup(html)
    title = 'title="&lt;script&gt;alert(&#x27;xss&#x27;)&lt;/script&gt; went wrong: '
    # Both the failed answer (the error type) and the error cell show the full text on hover.
    assert html.count(title) == 2
    assert html.count(" END\">") == 2
    assert f'{title}{"e" * 5000} END">ToolFailed</span>' in html


def test_shortened_text_ends_after_a_word() -> None:
    from toolbench._core.html import shorten

    hint = "unknown city 'Tokio' for argument 'to_city'. Did you mean 'Tokyo'? This demo knows"
    for limit in range(40, len(hint)):
        short = shorten(hint, limit)
        assert len(short) <= limit and short.endswith("…")
        assert hint.startswith(short[:-1])
        room = limit - 1
        if " " in hint[room * 4 // 5: room + 1]:  # a word ends near the cut: it cuts there
            assert hint[len(short) - 1] == " ", (limit, short)
    assert shorten(hint, 62) == "unknown city 'Tokio' for argument 'to_city'. Did you mean…"
    assert shorten("x" * 300, 50) == "x" * 49 + "…"  # no space: cut where the room ends
    assert shorten("short", 50) == "short"


def test_latency_rounded_for_the_eye_answers_keep_their_digits() -> None:
    df = pd.DataFrame([
        {"case": 0, "server": "a", "ok": True, "latency_ms": 12.345678, "text": "9558.575",
         "structured": {"result": 9558.575}, "error_type": None, "error": None,
         "structured.result": 9558.575},
        {"case": 0, "server": "b", "ok": True, "latency_ms": 3.21, "text": "9558.571",
         "structured": {"result": 9558.571}, "error_type": None, "error": None,
         "structured.result": 9558.571},
    ])
    html = compare_html(df)
    assert "12.3 ms" in html and "12.34" not in html
    assert ">9558.575<" in html and ">9558.571<" in html  # not both "9558.6"
    table = html_table(df)
    assert "<td class='tb-number'>12.3</td>" in table and ">9558.575<" in table
    assert df["latency_ms"].iloc[0] == 12.345678  # the data keep every digit


def test_servers_and_catalog_views_show_warnings_as_escaped_sentences() -> None:
    """A skipped tool or an unchecked schema is said where people look: the tables' views."""
    import mcp_types as types
    from mcp.server import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name="fine", input_schema={"type": "object"}),
            types.Tool(name="has space<script>", input_schema={"type": "object"}),
            types.Tool(name="remote", input_schema={
                "type": "object", "$ref": "http://127.0.0.1:9/<script>x</script>"}),
        ])

    with tb.Bench() as bench:
        bench.connect("odd", Server("odd", on_list_tools=list_tools))
        servers_html = show(bench.servers)._repr_mimebundle_()["text/html"]
        catalog_html = show(bench.catalog())._repr_mimebundle_()["text/html"]
    for html in (servers_html, catalog_html):
        no_live_markup(html)
        assert "<th>warnings</th>" in html
    assert "skipped" in servers_html
    assert "not checked" in catalog_html or "not check" in catalog_html
    # A tool with no warning shows an empty warnings cell (the row's last), not "[]".
    fine_row = catalog_html.split(">odd-fine<", 1)[1].split("</tr>", 1)[0]
    assert fine_row.endswith("></td>") and not fine_row.endswith("[]</td>")


def test_descriptions_in_the_catalog_and_on_handles_show_code_and_stay_inert() -> None:
    box = tb.ToolBox()

    @box.tool(server="prose")
    def look(city: str) -> str:
        """Look up `city`.

        Hard-wrapped
        line with <script>alert(1)</script> and `<img src=x onerror=alert(1)>`.
        """
        return city

    with tb.Bench() as bench:
        bench.add(box)
        catalog = frame_html(bench.catalog())
        no_live_markup(catalog)
        assert "Look up <code>city</code>. Hard-wrapped line with" in catalog
        assert "<code>&lt;img src=x onerror=alert(1)&gt;</code>" in catalog or "title=" in catalog
        handle = bench.tools["prose-look"]._repr_html_()
        no_live_markup(handle)
        assert "<b>prose-look</b>" in handle and "<code>city</code>" in handle
        assert ("<p style='margin:0 0 0.5em 0'>Hard-wrapped line with &lt;script&gt;alert(1)"
                "&lt;/script&gt; and <code>&lt;img src=x onerror=alert(1)&gt;</code>.</p>"
                ) in handle


def test_history_is_newest_first_by_start_not_by_completion() -> None:
    from toolbench._notebook.views.display import newest_first

    t0 = pd.Timestamp("2026-01-01T00:00:00Z")
    # records are kept as calls end: the slow call started first and ended last
    df = pd.DataFrame({"name": ["fast", "slow", "later"],
                       "started": [t0 + pd.Timedelta(seconds=1), t0,
                                   t0 + pd.Timedelta(seconds=5)]})
    assert list(newest_first(df)["name"]) == ["later", "fast", "slow"]
    html = records_html(df.assign(ok=True))
    assert html.index("later") < html.index("fast") < html.index("slow")
    same = pd.DataFrame({"name": ["a", "b"], "started": [t0, t0]})
    assert list(newest_first(same)["name"]) == ["b", "a"]  # a tie: the one recorded last


def test_the_catalog_view_marks_a_tool_with_an_mcp_app_view() -> None:
    """DESIGN.md, "MCP Apps": a ``ui`` badge in the catalog view; its URI, a server's text,
    escaped in the tooltip, and no badge for a tool without a view."""
    from test_bridge import app_server

    uri = 'ui://clock/"><script>x</script>.html'
    bench = tb.Bench()
    try:
        bench.connect("app", app_server(uri=uri), protocol_mode="legacy")
        html = frame_html(bench.catalog())
        no_live_markup(html)
        badges = html.count("class=\"tb-ui\"")
        assert badges == 1, html  # clock has a view; poll, secret and caps do not
        assert "title=\"ui://clock/&quot;&gt;&lt;script&gt;" in html
    finally:
        bench.close()
