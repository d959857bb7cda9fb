"""The explorer driven from Python: real in-process servers, real clicks, real records."""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any, Literal

import anyio
import ipywidgets as widgets
import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError as ServerToolError
from mcp.server.mcpserver.prompts.base import (
    AssistantMessage,
    Message,
    Prompt,
    PromptArgument,
    UserMessage,
)
from mcp.server.mcpserver.resources.types import TextResource
from mcp.shared.exceptions import MCPDeprecationWarning
from test_display import BIG, HOSTILE, IMG, SCRIPT, hostile_server, no_live_markup

import toolbench as tb
from toolbench._notebook.explorer.explorer import (
    BUSY_HTML,
    CLOSED_HTML,
    LIST_WIDTH,
    LOG_ROWS,
    SECTIONS,
    Explorer,
    bench_closed,
    explorer,
)
from toolbench.demo import beyond

WAIT = 20.0
SMALL = 100_000
gate = threading.Event()


def make_server(label: str) -> MCPServer:
    srv = MCPServer(f"test-{label}")

    @srv.tool()
    def echo(text: str, times: int = 1) -> str:
        """Echo the text, tagged with the server's label."""
        return " ".join([f"{label}:{text}"] * times)

    @srv.tool()
    def everything(word: str, count: int, ratio: float, flag: bool,
                   mode: Literal["fast", "slow"], items: list[int], options: dict[str, str],
                   note: str | None = None, limit: int = 3) -> dict[str, Any]:
        """Takes every kind of parameter and hands them back."""
        return {"word": word, "count": count, "ratio": ratio, "flag": flag, "mode": mode,
                "items": items, "options": options, "note": note, "limit": limit}

    @srv.tool()
    async def wait_for_gate() -> str:
        """Blocks until the test opens the gate (bounded)."""
        opened = await anyio.to_thread.run_sync(gate.wait, WAIT)
        return "opened" if opened else "timed out"

    return srv


@tb.tool(server="ledger")
def echo(text: str, times: int = 1) -> str:
    """Echo, reversed."""
    return " ".join([text[::-1]] * times)


@pytest.fixture
def bench() -> Iterator[tb.Bench]:
    with tb.Bench() as b:
        b.connect("mem", make_server("mem"))
        b.add(tb.ToolBox(echo))
        yield b


@pytest.fixture
def app(bench: tb.Bench) -> Iterator[Explorer]:
    built = explorer(bench)
    yield built
    built.close()


def wait(app: Explorer) -> None:
    assert app.last_future is not None, "no call was started"
    app.last_future.result(timeout=WAIT)


def test_catalog_filter_search_and_selection(app: Explorer, bench: tb.Bench) -> None:
    assert [v for _, v in app.server_filter.options] == ["", "mem", "ledger"]
    names = [v for _, v in app.tool_list.options]
    assert names == sorted(bench.catalog()["name"])
    assert app.tool_list.value == names[0]
    app.server_filter.value = "ledger"
    assert [v for _, v in app.tool_list.options] == ["ledger-echo"]
    assert app.tool_list.value == "ledger-echo"
    assert "Echo, reversed." in app.description.value
    app.server_filter.value = ""
    app.search.value = "EVERY kind"
    assert [v for _, v in app.tool_list.options] == ["mem-everything"]
    assert "mem-everything" in app.description.value
    assert set(app.form.fields) == {"word", "count", "ratio", "flag", "mode", "items",
                                    "options", "note", "limit"}
    app.search.value = "no such tool anywhere"
    assert app.tool_list.options == ()
    assert "no tool matches" in app.description.value
    assert app.call() is None and "choose a tool" in app.result.value
    assert "0 of 4 tools" in app.count.value
    assert app.form.fields == {}


def test_call_every_type_records_and_shows(app: Explorer, bench: tb.Bench) -> None:
    app.tool_list.value = "mem-everything"
    form = app.form
    form["word"].value = "hello"
    form["count"].value = 7
    form["ratio"].value = 0.5
    form["flag"].value = True
    form["mode"].label = "slow"
    form["items"].value = "[1, 2, 3]"
    form["options"].value = '{"k": "v"}'
    app.call_button.click()
    wait(app)
    records = bench.records
    assert len(records) == 1
    row = records.iloc[0]
    assert row["name"] == "mem-everything" and bool(row["ok"])
    assert row["arguments"] == {"word": "hello", "count": 7, "ratio": 0.5, "flag": True,
                                "mode": "slow", "items": [1, 2, 3], "options": {"k": "v"},
                                "limit": 3}
    assert "&quot;items&quot;: [" in app.result.value
    assert "&quot;mode&quot;: &quot;slow&quot;" in app.result.value
    assert isinstance(app.last_result, tb.Result)
    assert app.last_result.structured is not None
    assert app.last_result.structured["note"] is None  # the empty optional was not sent
    assert not app.call_button.disabled and app.busy.value == ""
    assert "mem-everything" in app.history.value


def test_optional_fields_sent_when_filled(app: Explorer, bench: tb.Bench) -> None:
    app.tool_list.value = "mem-echo"
    app.form["text"].value = "hi"
    app.form["times"].value = 2
    app.call_button.click()
    wait(app)
    assert bench.records.iloc[-1]["arguments"] == {"text": "hi", "times": 2}
    assert "mem:hi mem:hi" in app.result.value


def test_invalid_input_sends_nothing(app: Explorer, bench: tb.Bench) -> None:
    app.tool_list.value = "mem-everything"
    app.form["word"].value = ""
    app.form["count"].value = 7  # valid: left unmarked
    app.form["items"].value = "[1, 2"
    app.form["options"].value = '["not", "an", "object"]'
    app.call_button.click()
    assert app.last_future is None
    assert len(bench.records) == 0
    # Said once: under the form (which the Call tab shows), not again under the button.
    assert "nothing was sent" in app.form.message.value
    assert app.result.value == ""
    fields = app.form.fields
    assert "required" in fields["word"].error.value
    assert "not valid JSON" in fields["items"].error.value
    assert "expected a JSON object" in fields["options"].error.value
    assert fields["count"].error.value == ""
    app.compare_button.click()
    assert app.last_future is None and len(bench.records) == 0
    # The Compare tab does not show the form, so it names the broken fields itself.
    assert "nothing was sent" in app.compare_output.value
    assert "items" in app.compare_output.value and "word" in app.compare_output.value


def test_tool_failure_shows_type_and_disposition(bench: tb.Bench) -> None:
    bench.connect("evil", hostile_server())
    app = explorer(bench)
    try:
        app.tool_list.value = "evil-boom"
        app.call_button.click()
        wait(app)
        html = app.result.value
        assert "ToolFailed" in html and "landed" in html
        no_live_markup(html)
        assert len(html) < SMALL
        assert isinstance(app.last_result, tb.ToolFailed)
        assert bench.records.iloc[-1]["error_type"] == "ToolFailed"
    finally:
        app.close()


def test_image_result_inline(bench: tb.Bench) -> None:
    bench.connect("evil", hostile_server())
    app = explorer(bench)
    try:
        app.tool_list.value = "evil-picture"
        app.call_button.click()
        wait(app)
        assert '<img style="max-width:480px" src="data:image/png;base64,' in app.result.value
    finally:
        app.close()


def test_busy_while_running_and_kernel_not_blocked(app: Explorer, bench: tb.Bench) -> None:
    gate.clear()
    app.tool_list.value = "mem-wait_for_gate"
    # If click() waited for the call, the tool would block on the closed gate and this line
    # would only be reached after WAIT seconds with "timed out" as the answer.
    app.call_button.click()
    assert app.call_button.disabled
    assert "running" in app.busy.value
    assert app.call() is None  # a second press while busy does nothing
    gate.set()
    wait(app)
    assert "opened" in app.result.value
    assert not app.call_button.disabled and app.busy.value == ""
    assert list(bench.records["text"]) == ["opened"]


def test_compare_tab_runs_every_server(app: Explorer, bench: tb.Bench) -> None:
    app.tool_list.value = "ledger-echo"
    assert "<code>ledger</code>" in app.compare_servers.value
    assert "<code>mem</code>" in app.compare_servers.value
    app.form["text"].value = "abc"
    app.compare_button.click()
    wait(app)
    records = bench.records
    assert sorted(records["server"]) == ["ledger", "mem"]
    assert records["batch"].nunique() == 1 and records["batch"].iloc[0] is not None
    html = app.compare_output.value
    assert "cba" in html and "mem:abc" in html
    assert "servers disagree on 1 of 1 case" in html
    assert "median latency per server" in html
    assert app.last_compare is not None and len(app.last_compare) == 2
    assert not app.compare_button.disabled and app.compare_busy.value == ""
    assert html.count("<tr>") >= 3


def test_hostile_server_everything_escaped_and_small(bench: tb.Bench) -> None:
    bench.connect("evil", hostile_server())
    bench.connect("twin", hostile_server("twin"))
    app = explorer(bench)
    try:
        app.tool_list.value = "evil-shout"
        description = app.description.value
        no_live_markup(description)
        assert "&lt;script&gt;" in description and len(description) < SMALL
        assert "shortened" in description
        app.form["text"].value = SCRIPT
        app.call_button.click()
        wait(app)
        app.tool_list.value = "evil-blob"
        app.compare_button.click()
        wait(app)
        app.tool_list.value = "evil-boom"
        app.call_button.click()
        wait(app)
        assert len(bench.records) == 4
        for html in (app.result.value, app.compare_output.value, app.history.value,
                     app.description.value, app.compare_servers.value):
            no_live_markup(html)
            assert len(html) < SMALL
        assert "&lt;img src=x onerror" in app.history.value
        for field in app.form.fields.values():
            no_live_markup(field.row.children[0].value)
        # The widget's own repr is the widget view, not server text.
        bundle = app._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle
        assert HOSTILE not in str(bundle) and BIG[:1000] not in str(bundle)
    finally:
        app.close()


def test_bench_explore_and_refresh(bench: tb.Bench) -> None:
    app = bench.explore()
    try:
        assert isinstance(app, Explorer)
        bench.connect("late", make_server("late"))
        assert "late" not in [v for _, v in app.server_filter.options]
        app.refresh_button.click()
        assert "late" in [v for _, v in app.server_filter.options]
        assert "late-echo" in [v for _, v in app.tool_list.options]
        app.tool_list.value = "late-echo"
        app.form["text"].value = "x"
        app.call_button.click()
        wait(app)
        assert bench.records.iloc[-1]["server"] == "late"
        bench.disconnect("late")
        app.refresh_button.click()
        assert "late-echo" not in [v for _, v in app.tool_list.options]
        assert "late" not in app.history.value  # the History is the selected tool's
        assert "other record on this bench" in app.history.value  # records outlive the server
    finally:
        app.close()


def indented_server() -> MCPServer:
    srv = MCPServer("indented")

    @srv.tool()
    def spaced(text: str = "x") -> str:
        """First line.

        Second paragraph, indented like every docstring
        in a class or a function body.
        """
        return text

    @srv.tool()
    def fails(city: str = "Tokio") -> str:
        """Fails with a hint."""
        raise ServerToolError(f"unknown city {city!r}. Did you mean 'Tokyo'?")

    return srv


def test_history_is_the_selected_tools_with_its_errors(app: Explorer, bench: tb.Bench) -> None:
    bench.call("mem-echo", text="mine")
    bench.call("ledger-echo", text="theirs")
    with pytest.raises(tb.Refused):
        bench.call("mem-echo", times="many")  # fails locally: an error to show
    app.tool_list.value = "mem-echo"
    html = app.history.value
    assert "calls of mem-echo (newest first)" in html and "<small>2 rows</small>" in html
    assert "mine" in html and "theirs" not in html
    assert "1 other record on this bench" in html
    heads = [h.split("</th>")[0] for h in html.split("<th>")[1:]]
    assert heads == ["started", "ok", "disposition", "latency_ms", "answer or error",
                     "arguments"]
    assert "Refused: " in html  # the error, before the arguments: visible in a narrow pane
    assert html.index("Refused") < html.index("mine")  # the failure came last: it is first
    app.tool_list.value = "ledger-echo"  # selecting another tool shows its own calls
    assert "theirs" in app.history.value and "mine" not in app.history.value


def test_description_is_dedented(bench: tb.Bench) -> None:
    bench.connect("ind", indented_server())
    app = explorer(bench)
    try:
        app.tool_list.value = "ind-spaced"
        html = app.description.value
        # paragraphs kept, the hard wrap inside one joined, the docstring's indentation gone
        assert ("<p style='margin:0 0 0.5em 0'>First line.</p><p style='margin:0 0 0.5em 0'>"
                "Second paragraph, indented like every docstring in a class or a function "
                "body.</p>") in html
        assert "\n" not in html and "  " not in html
    finally:
        app.close()


def test_description_shows_inline_code_and_stays_inert(bench: tb.Bench) -> None:
    srv = MCPServer("prose")

    @srv.tool(description="Look up `city` by name.\nThe `<script>alert(1)</script>` here\n"
                          "and <b>`x`</b> stay text; a lone ` too.\n\nSecond ``a`b`` part.")
    def look(city: str = "x") -> str:
        return city

    bench.connect("prose", srv)
    app = explorer(bench)
    try:
        app.tool_list.value = "prose-look"
        html = app.description.value
        no_live_markup(html)
        assert ("Look up <code>city</code> by name. The <code>&lt;script&gt;alert(1)&lt;/script&gt;"
                "</code> here and &lt;b&gt;<code>x</code>&lt;/b&gt; stay text; a lone ` too.</p>"
                "<p style='margin:0 0 0.5em 0'>Second <code>a`b</code> part.</p>") in html
        assert "`city`" not in html and "<b>" not in html.replace("<b>prose-look</b>", "")
    finally:
        app.close()


def test_a_failed_call_shows_its_error_once(bench: tb.Bench) -> None:
    bench.connect("ind", indented_server())
    app = explorer(bench)
    try:
        app.tool_list.value = "ind-fails"
        app.call_button.click()
        wait(app)
        assert isinstance(app.last_result, tb.ToolFailed)
        assert app.result.value.count("Did you mean") == 1
    finally:
        app.close()


EMOJI_RANGES = [(0x231A, 0x231B), (0x23E9, 0x23FA), (0x25FD, 0x25FE), (0x2600, 0x26FF),
                (0x2B50, 0x2B55), (0x1F000, 0x1FAFF)]


def emoji_in(text: str) -> list[str]:
    return [c for c in text if any(lo <= ord(c) <= hi for lo, hi in EMOJI_RANGES)]


def test_no_emoji_that_needs_a_special_font(app: Explorer) -> None:
    assert emoji_in(BUSY_HTML) == [] and "running" in BUSY_HTML
    gate.clear()
    app.tool_list.value = "mem-wait_for_gate"
    app.call_button.click()
    try:
        assert "running" in app.busy.value and emoji_in(app.busy.value) == []
    finally:
        gate.set()
        wait(app)
    for text in (app.description.value, app.history.value, app.result.value, app.count.value,
                 CLOSED_HTML, *(b.description for b in (app.call_button, app.compare_button))):
        assert emoji_in(text) == [], text


def test_tool_list_width_is_fixed(app: Explorer) -> None:
    layout = app.tool_list.layout
    assert layout.width == layout.min_width == layout.max_width == LIST_WIDTH
    assert layout.flex == f"0 0 {LIST_WIDTH}"  # neither grows nor shrinks in its row


def test_closed_bench_says_so_and_disables_the_buttons(app: Explorer, bench: tb.Bench) -> None:
    app.tool_list.value = "mem-echo"
    app.form["text"].value = "hi"
    assert not app.call_button.disabled and app.banner.value == ""
    bench.close()
    assert app.call() is None  # what a click does: nothing is sent
    assert len(bench.records) == 0
    assert "This bench is closed" in app.banner.value
    assert "This bench is closed" in app.result.value  # where the click was, too
    assert "RuntimeError" not in app.result.value
    for button in (app.call_button, app.compare_button, app.refresh_button, app.history_button):
        assert button.disabled, button.description
    assert app.compare() is None and "This bench is closed" in app.compare_output.value


def test_explorer_of_a_closed_bench_says_so_at_once() -> None:
    bench = tb.Bench()
    bench.connect("mem", make_server("mem"))
    bench.close()
    app = bench.explore()
    try:
        assert "This bench is closed" in app.banner.value
        assert app.call_button.disabled and app.compare_button.disabled
    finally:
        app.close()


def test_bench_closed_during_a_call_keeps_the_buttons_off(app: Explorer, bench: tb.Bench) -> None:
    gate.clear()
    app.tool_list.value = "mem-wait_for_gate"
    app.call_button.click()
    assert app.call_button.disabled
    closing = threading.Thread(target=bench.close)
    closing.start()
    try:
        deadline = time.monotonic() + WAIT
        while not bench_closed(bench) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert bench_closed(bench)
    finally:
        gate.set()  # the call in flight may now end (answered or cut off)
    wait(app)
    closing.join(WAIT)
    assert not closing.is_alive()
    assert app.call_button.disabled and app.compare_button.disabled
    assert "This bench is closed" in app.banner.value


# -- the Resources, Prompts and Log sections ------------------------------------------------
RESOURCES, PROMPTS, LOG = (SECTIONS.index(s) for s in ("Resources", "Prompts", "Log"))


def open_section(app: Explorer, index: int) -> None:
    """Open a section as a click on its tab does; wait for the listing it starts, if any."""
    app.last_future = None
    app.sections.selected_index = index
    if app.last_future is not None:
        wait(app)


def choose(choice: Any, text: str) -> None:
    """Pick the Dropdown option whose label contains ``text`` (as a person would)."""
    values = [v for label, v in choice.options if text in label]
    assert len(values) == 1, (text, choice.options)
    choice.value = values[0]


def escaped(html: str) -> None:
    """Nothing a hostile server sent is live markup: no script, no image with a handler."""
    assert "<script" not in html.lower()
    assert "<img src=x" not in html and "onerror=alert" not in html.replace(
        "&lt;img src=x onerror=alert", "")


@pytest.fixture
def beyond_bench(bench: tb.Bench) -> tb.Bench:
    bench.connect("beyond", beyond.create())
    return bench


def test_resources_tab_lists_reads_every_kind_and_fills_a_template(
        beyond_bench: tb.Bench) -> None:
    bench = beyond_bench
    app = explorer(bench)
    try:
        assert not app.resources_loaded and app.resource_table.value == ""  # not at build
        open_section(app, RESOURCES)
        labels = [label for label, _ in app.resource_choice.options]
        expected = sorted(bench.resources()["uri"]) + list(bench.resource_templates()["uri"])
        assert sorted(u for u in expected if "{" not in u) == sorted(
            r["uri"] for r in app.resource_rows if r["kind"] == "resource")
        assert len(labels) == 1 + len(expected) and labels[0] == "(choose a resource)"
        assert "city://{name}" in app.resource_table.value
        assert "[template]" in labels[-1]
        # mem has no resources and ledger is a ToolBox: each says so, the tab still lists.
        assert "<code>ledger</code>" in app.resources_note.value
        assert "<code>mem</code>: lists no resources" in app.resources_note.value
        assert len(bench.records) == 0, "listing is not a read"

        choose(app.resource_choice, "beyond://cities.json")
        wait(app)
        assert "&quot;Nairobi&quot;" in app.resource_output.value
        assert isinstance(app.last_result, tb.ReadResult)
        assert app.last_result.data == bench.read("beyond", "beyond://cities.json").data
        choose(app.resource_choice, "swatch")
        wait(app)
        assert 'src="data:image/png;base64,' in app.resource_output.value
        choose(app.resource_choice, "bytes.bin")
        wait(app)
        assert "256" in app.resource_output.value and "octet-stream" in app.resource_output.value
        assert "\\x00" not in app.resource_output.value

        reads = len(bench.records)
        choose(app.resource_choice, "[template]")
        assert app.last_future is None and "fill in" in app.resource_output.value
        assert app.resource_uri.value == "city://{name}"
        assert app.read() is None and len(bench.records) == reads  # nothing was sent
        app.resource_uri.value = "city://lima"
        app.read_button.click()
        wait(app)
        assert "&quot;Peru&quot;" in app.resource_output.value
        app.resource_uri.value = "city://atlantis"
        app.read_button.click()
        wait(app)
        assert isinstance(app.last_result, tb.ToolError)
        assert "atlantis" in app.resource_output.value
        records = bench.records
        assert set(records["kind"]) == {"resource"}
        assert list(records["name"][-2:]) == ["city://lima", "city://atlantis"]
        assert "city://lima" not in app.history.value  # reads are not the tool's History
        assert "other records on this bench" in app.history.value
        assert not app.read_button.disabled and app.read_busy.value == ""
    finally:
        app.close()


def test_prompts_tab_builds_a_form_and_shows_the_transcript(beyond_bench: tb.Bench) -> None:
    bench = beyond_bench
    app = explorer(bench)
    try:
        assert app.prompt_button.disabled, "nothing chosen yet"
        open_section(app, PROMPTS)
        assert [label for label, _ in app.prompt_choice.options][1:] == [
            "beyond-welcome — Welcome", "beyond-plan_trip — Plan a trip"]
        assert "<code>mem</code>: lists no prompts" in app.prompts_note.value
        choose(app.prompt_choice, "plan_trip")
        form = app.prompt_form
        assert list(form.fields) == ["from_city", "to_city", "days"]
        assert "Ask an assistant to plan a trip" in app.prompt_info.value
        app.prompt_button.click()  # the required cities are empty
        assert app.last_future is None and len(bench.records) == 0
        assert "nothing was sent" in form.message.value
        assert "required" in form.fields["from_city"].error.value
        assert form.fields["days"].error.value == ""  # optional
        form["from_city"].value = "Paris"
        form["to_city"].value = "Tokyo"
        app.prompt_button.click()
        wait(app)
        html = app.prompt_output.value
        assert "Plan a 3-day trip from Paris to Tokyo" in html
        assert "toolbench-transcript" in html and "city://tokyo" in html
        assert isinstance(app.last_result, tb.PromptResult)
        row = bench.records.iloc[-1]
        assert row["kind"] == "prompt" and row["name"] == "beyond-plan_trip"
        assert row["arguments"] == {"from_city": "Paris", "to_city": "Tokyo"}  # days unsent
        form["days"].value = "x"
        app.prompt_button.click()
        wait(app)
        assert isinstance(app.last_result, tb.ToolError) and "plan_trip" in app.prompt_output.value
        assert not app.prompt_button.disabled and app.prompt_busy.value == ""

        choose(app.prompt_choice, "welcome")
        assert app.prompt_form.fields == {} and app.prompt_output.value == ""
        assert "takes no arguments" in app.prompt_form.widget.children[0].value
        app.get_prompt()
        wait(app)
        assert "What can this server do?" in app.prompt_output.value
    finally:
        app.close()


def test_log_tab_shows_logs_newest_first_and_refreshes(beyond_bench: tb.Bench) -> None:
    bench = beyond_bench
    app = explorer(bench)
    try:
        open_section(app, LOG)
        assert "No log messages" in app.log.value and "bench.logs" in app.log.value
        bench.call("beyond-chatty")
        bench.call("beyond-countdown", steps=3, delay_ms=0, progress=False)
        assert "No log messages" in app.log.value  # until refreshed
        app.log_button.click()
        html = app.log.value
        logs = bench.logs
        assert f"{len(logs)} rows" in html and "newest first" in html
        newest, oldest = logs.iloc[-1], logs.iloc[0]
        assert html.index(str(newest["message"])) < html.index(str(oldest["message"]))
        assert "step 3 of 3" in html and "warning message from chatty" in html
        # A call made in the explorer refreshes the log by itself.
        app.sections.selected_index = 0
        app.tool_list.value = "beyond-chatty"
        app.call_button.click()
        wait(app)
        assert f"{len(bench.logs)} rows" in app.log.value and len(bench.logs) > len(logs)
    finally:
        app.close()


def test_sections_follow_the_server_filter_and_the_search(beyond_bench: tb.Bench) -> None:
    bench = beyond_bench
    bench.connect("twin", beyond.create())
    app = explorer(bench)
    try:
        open_section(app, RESOURCES)
        open_section(app, PROMPTS)
        assert len(app.resource_choice.options) == 1 + 12
        assert len(app.prompt_choice.options) == 1 + 4
        choose(app.resource_choice, "twin · cities")
        wait(app)
        assert "on twin" in app.resource_output.value
        app.server_filter.value = "twin"
        assert {r["server"] for i in [v for _, v in app.resource_choice.options][1:]
                for r in [app.resource_rows[i]]} == {"twin"}
        assert app.resource_choice.value is not None, "the choice survives a filter that keeps it"
        assert "6 of 12 resources and templates" in app.resources_note.value
        app.search.value = "PNG"
        assert [label for label, _ in app.resource_choice.options][1:] == [
            "twin · swatch  (beyond://swatch.png)"]
        assert app.resource_choice.value is None, "a filtered-out choice is dropped"
        assert [label for label, _ in app.prompt_choice.options] == ["(choose a prompt)"]
        assert "0 of 4 prompts" in app.prompts_note.value and app.prompt_table.value == ""
        app.search.value = ""
        app.server_filter.value = ""
        bench.disconnect("twin")
        app.refresh_button.click()  # the top refresh lists the opened sections again
        wait(app)
        assert "twin" not in app.prompts_note.value + app.prompt_table.value
        assert len(app.prompt_choice.options) == 1 + 2
    finally:
        app.close()


def test_a_bench_without_resources_or_prompts_explains_its_empty_tabs(app: Explorer) -> None:
    open_section(app, RESOURCES)
    note = app.resources_note.value
    assert "No resources here" in note and "<code>{variables}</code>" in note
    assert "<code>mem</code>: lists no resources" in note
    assert "<code>ledger</code>: server &#x27;ledger&#x27; (toolbox) offers tools only" in note
    assert app.resource_table.value == "" and len(app.resource_choice.options) == 1
    assert app.read() is None and "choose a resource" in app.resource_output.value
    open_section(app, PROMPTS)
    assert "No prompts here" in app.prompts_note.value
    assert "<code>mem</code>: lists no prompts" in app.prompts_note.value
    assert app.get_prompt() is None
    open_section(app, LOG)
    assert "No log messages" in app.log.value


LOGGED = 250


def hostile_beyond() -> MCPServer:
    """Resources, templates, prompts and log lines whose every string is markup."""
    srv = MCPServer("hostile-beyond")
    srv.add_resource(TextResource(uri="evil://note", name=HOSTILE, title=IMG,
                                  description=HOSTILE + BIG, mime_type="text/html",
                                  text=HOSTILE + BIG))

    @srv.resource("evil://{x}/item", name=SCRIPT, title=IMG, description=HOSTILE,
                  mime_type=IMG)
    def item(x: str) -> str:
        return HOSTILE + x

    @srv.prompt(name=SCRIPT, title=IMG, description=HOSTILE + BIG)
    def shout(who: str) -> list[Message]:
        return [UserMessage(HOSTILE + who + BIG), AssistantMessage(IMG)]

    srv.add_prompt(Prompt(name="odd_arguments", description=IMG, fn=lambda: [],
                          arguments=[PromptArgument(name=HOSTILE, description=SCRIPT,
                                                    required=True)]))

    @srv.tool()
    async def flood(ctx: Context) -> str:
        for n in range(LOGGED):
            with warnings.catch_warnings():  # logging is deprecated on 2026-07-28
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                sending = ctx.session.send_log_message(
                    level="warning", data=f"{n} {HOSTILE}{BIG[:20_000]}", logger=HOSTILE,
                    related_request_id=ctx.request_id)
            await sending
        return "flooded"

    return srv


def test_hostile_resources_prompts_and_logs_are_escaped_and_capped(bench: tb.Bench) -> None:
    bench.connect("evil", hostile_beyond())
    app = explorer(bench)
    try:
        open_section(app, RESOURCES)
        shown = [app.resources_note.value, app.resource_table.value]
        assert "&lt;script&gt;" in app.resource_table.value
        choose(app.resource_choice, "evil://note")
        wait(app)
        shown += [app.resource_info.value, app.resource_output.value]
        assert "&lt;img src=x onerror=alert(1)&gt;" in app.resource_output.value
        choose(app.resource_choice, "[template]")
        shown.append(app.resource_info.value)
        app.resource_uri.value = f"evil://{SCRIPT}/item"
        app.read()
        wait(app)
        shown.append(app.resource_output.value)

        open_section(app, PROMPTS)
        shown += [app.prompts_note.value, app.prompt_table.value]
        choose(app.prompt_choice, "odd_arguments")
        label = app.prompt_form.fields[HOSTILE].row.children[0].value
        shown += [app.prompt_info.value, label]
        assert "&lt;script&gt;" in label
        choose(app.prompt_choice, "evil-<script>")
        app.prompt_form["who"].value = IMG
        app.get_prompt()
        wait(app)
        shown += [app.prompt_info.value, app.prompt_output.value]
        assert "&lt;script&gt;alert(&#x27;xss&#x27;)&lt;/script&gt;" in app.prompt_output.value

        bench.call("evil-flood")
        open_section(app, LOG)
        shown.append(app.log.value)
        assert f"showing {LOG_ROWS} of {LOGGED} rows" in app.log.value
        assert f"{LOGGED - 1} &lt;script&gt;" in app.log.value  # the newest comes first
        shown.append(app.history.value)
        for html in shown:
            escaped(html)
            assert len(html) < SMALL
        assert BIG[:1000] not in str(app._repr_mimebundle_())
    finally:
        app.close()


def test_a_slow_read_keeps_the_kernel_free_and_the_button_busy(bench: tb.Bench) -> None:
    srv = MCPServer("slow")

    @srv.resource("slow://gate", name="gate")
    async def slow() -> str:
        opened = await anyio.to_thread.run_sync(gate.wait, WAIT)
        return "opened" if opened else "timed out"

    bench.connect("slow", srv)
    gate.clear()
    app = explorer(bench)
    try:
        open_section(app, RESOURCES)
        choose(app.resource_choice, "slow://gate")
        # Were the read done in this thread, the gate (opened below) would never open.
        assert app.read_button.disabled and "running" in app.read_busy.value
        assert app.read() is None  # a second press while busy does nothing
        gate.set()
        wait(app)
        assert "opened" in app.resource_output.value and not app.read_button.disabled
    finally:
        gate.set()
        app.close()


def test_listing_and_display_failures_are_shown_not_raised(
        beyond_bench: tb.Bench, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = beyond_bench

    async def broken(server: str | None = None, search: str | None = None) -> Any:
        raise RuntimeError(f"listing broke on {server} {SCRIPT}")

    monkeypatch.setattr(bench, "aprompts", broken)
    app = explorer(bench)
    try:
        open_section(app, PROMPTS)
        note = app.prompts_note.value
        assert "<code>beyond</code>: RuntimeError: listing broke on beyond" in note
        escaped(note)
        open_section(app, RESOURCES)
        app.resource_rows.append({"kind": "resource"})  # a row without a name or server
        app.show_resources()  # must not raise
        assert "KeyError" in app.resources_note.value
        monkeypatch.setattr(type(bench), "logs", property(lambda _: 1 / 0))
        app.show_log()
        assert "log unavailable (ZeroDivisionError)" in app.log.value
    finally:
        app.close()


def test_a_closed_bench_turns_the_new_sections_off(beyond_bench: tb.Bench) -> None:
    bench = beyond_bench
    app = explorer(bench)
    try:
        open_section(app, RESOURCES)
        bench.close()
        assert app.load_resources() is None and app.load_prompts() is None
        assert "This bench is closed" in app.resources_note.value
        choose(app.resource_choice, "cities")
        assert app.last_future is None and "This bench is closed" in app.resource_output.value
        for button in (app.resources_button, app.read_button, app.prompts_button,
                       app.prompt_button, app.log_button):
            assert button.disabled, button.description
        assert "This bench is closed" in app.prompt_output.value
    finally:
        app.close()


def test_new_buttons_and_lists_do_not_clash_with_the_page_s_tool_list(app: Explorer) -> None:
    """A page finds the tool list as the explorer's one Select, and the Call, Compare and
    History controls by name; the new sections must not add look-alikes."""

    def walk(widget: Any) -> Iterator[Any]:
        yield widget
        for child in getattr(widget, "children", ()):
            yield from walk(child)

    every = list(walk(app.widget))
    assert [w for w in every if isinstance(w, widgets.Select)] == [app.tool_list]
    names = [w.description.lower() for w in every if isinstance(w, widgets.Button)]
    for word in ("call", "compare"):
        assert sum(word in name for name in names) == 1, names
    assert list(app.sections.titles) == list(SECTIONS)
    assert list(app.tabs.titles) == ["Call", "Compare", "History"]


def test_call_shows_the_tools_mcp_app_view_above_its_result() -> None:
    """DESIGN.md, "MCP Apps": the explorer's Call shows the view; the description has a
    ``ui`` badge; the next call's result replaces (and closes) the previous view."""
    from test_bridge import app_server

    from toolbench._notebook.apps.view import AppView

    with tb.Bench() as bench:
        bench.connect("app", app_server(), protocol_mode="legacy")
        app = explorer(bench)
        try:
            app.tool_list.value = "app-clock"
            assert "class='toolbench-ui'" in app.description.value
            assert "ui://clock/view.html" in app.description.value
            app.call_button.click()
            wait(app)
            (view,) = app.app_box.children
            assert isinstance(view, AppView) and view.uri == "ui://clock/view.html"
            assert "12:00 UTC" in app.result.value
            assert bench.records.iloc[-1]["call_id"] == app.last_result.call_id
            app.tool_list.value = "app-caps"  # no view: the old one goes
            assert "toolbench-ui" not in app.description.value
            app.call_button.click()
            wait(app)
            assert app.app_box.children == ()
            assert view.comm is None  # closed, so its front end tears the frame down
        finally:
            app.close()
