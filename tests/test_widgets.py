"""The explorer driven from Python: real in-process servers, real clicks, real records."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as ServerToolError
from test_display import BIG, HOSTILE, SCRIPT, hostile_server, no_live_markup

import toolbench as tb
from toolbench._notebook.widgets import (
    BUSY_HTML,
    CLOSED_HTML,
    LIST_WIDTH,
    Explorer,
    bench_closed,
    explorer,
)

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
    assert "servers disagree on 1 of 1 case(s)" in html
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
        assert "late" in app.history.value  # records outlive the server
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


def test_description_is_dedented(bench: tb.Bench) -> None:
    bench.connect("ind", indented_server())
    app = explorer(bench)
    try:
        app.tool_list.value = "ind-spaced"
        html = app.description.value
        assert "First line.\n\nSecond paragraph, indented like every docstring\nin a" in html
        assert "\n    " not in html and not html.rstrip("</div>").endswith(" ")
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
