"""MCP Apps in a real JupyterLab, in headless Chromium (DESIGN.md, "MCP Apps"): the real
``server-basic-vanillajs`` (npm, pinned) over stdio, its view framed in the output cell, and
its four buttons clicked as a person would.

Checked: the view renders inside the output cell; the frame's ``sandbox`` is exactly
``allow-scripts``; script in the frame cannot read ``parent.document``; "Get Server Time"
reaches the server and its call is in ``bench.records`` in the next cell with
``provenance["app"]``; "Send Message" and "Send Log" land in ``view.messages`` and
``bench.logs``; "Open Link" shows the URL under the view and opens no page; a ``fetch`` from
the view to a 127.0.0.1 listener its CSP does not declare never connects.

Teardown has its own tests: Clear Output sends ``ui/resource-teardown`` to the live view
document (a probe the test puts into that document reports it, so a reloaded frame would
fail), the app's answer reaches the kernel's ``view.log``, and the hostile view that never
answers is removed after 2 s with the kernel told so.

The cell displays ``result.app`` itself: when this was written, a ``Result``'s own display
showed the card only, not the live view above it (DESIGN asks for both).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_apps_servers import server_command
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, kept_on_failure, serve_lab

from toolbench._bench.apps.bridge import TEARDOWN, TEARDOWN_ID, TEARDOWN_WAIT_S

NAME = "apps.ipynb"
HOSTILE_NAME = "hostile.ipynb"
ROOT = Path(__file__).resolve().parents[1]
HOSTILE = [sys.executable, str(ROOT / "tests" / "servers" / "hostile_app.py")]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason=f"Debian's chromium is not installed at {CHROMIUM}"),
]


def cells(command: list[str]) -> list[str]:
    return [
        "import toolbench as tb\n"
        "bench = tb.Bench(timeout=60)\n"
        f"bench.connect('basic', {command!r})\n"
        "result = bench.call('basic-get-time')\nresult.app",
        "view = result.app\n"
        "apps = bench.records[bench.records['provenance'].map(\n"
        "    lambda p: isinstance(p, dict) and 'app' in p)]\n"
        "print('FROM VIEW', len(apps), list(apps['tool']), apps['ok'].all())\n"
        "print('OPENED BY', apps['provenance'].iloc[-1]['app']['opened_by'] == result.call_id)\n"
        "print('MESSAGES', [m['content'][0]['text'][:40] for m in view.messages])\n"
        "print('APP LOGS', int((bench.logs['kind'] == 'app').sum()))\n"
        "print('LINKS', list(view.links))",
        TEARDOWN_CELL,
    ]


def hostile_cells() -> list[str]:
    return [
        "import toolbench as tb\n"
        "bench = tb.Bench(timeout=60)\n"
        f"bench.connect('hostile', {HOSTILE!r}, env={{'PYTHONPATH': {str(ROOT)!r}}})\n"
        "result = bench.call('hostile-open_view')\nresult.app",
        TEARDOWN_CELL,
    ]


TEARDOWN_CELL = (
    "import json, time\n"
    "view = result.app\n"
    "def teardown_rows():\n"
    "    log = view.log[['direction', 'method', 'id', 'ok', 'error']]\n"
    "    return [list(row) for row in log.itertuples(index=False)\n"
    "            if row[1] == 'ui/resource-teardown']\n"
    "deadline = time.monotonic() + 10  # the view's answer is noted on toolbench's loop\n"
    "while (view.bridge.torn_down and len(teardown_rows()) < 2\n"
    "       and time.monotonic() < deadline):\n"
    "    time.sleep(0.05)\n"
    "log, logs = view.log, bench.logs\n"
    "print('TEARDOWN', json.dumps({'rows': teardown_rows(), 'initialize': int(\n"
    "    ((log['method'] == 'ui/initialize') & (log['direction'] == 'in')).sum()),\n"
    "    'probe': [str(m) for m in logs.loc[logs['kind'] == 'app', 'message']\n"
    "              if 'teardown-probe' in str(m)]}, default=str))"
)
"""The last cell: ``view.log``'s teardown rows (waiting, bounded, for the answer), how often
the view sent ``ui/initialize`` (a reloaded frame sends it again) and what the probe said."""


@pytest.fixture
def lab() -> Iterator[str]:
    import nbformat

    command = server_command("server-basic-vanillajs")

    def put(served: Path) -> None:
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells(command)]
        notebook.metadata["kernelspec"] = {"name": "python3",
                                           "display_name": "Python 3 (ipykernel)",
                                           "language": "python"}
        nbformat.write(notebook, str(served / NAME))
        hostile = nbformat.v4.new_notebook()
        hostile.cells = [nbformat.v4.new_code_cell(source) for source in hostile_cells()]
        hostile.metadata["kernelspec"] = notebook.metadata["kernelspec"]
        nbformat.write(hostile, str(served / HOSTILE_NAME))

    with serve_lab(put, "toolbench-lab-apps-") as url:
        yield url


@pytest.mark.timeout(300)
def test_basic_vanillajs_view_in_jupyterlab(lab: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "apps"):
                _drive(page, lab)
        finally:
            browser.close()


def _drive(page: Any, lab: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{lab}/lab/tree/{NAME}?reset", timeout=60_000)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

    # The view renders inside the first cell's output, sandboxed exactly allow-scripts.
    frame_el = page.locator(".jp-Cell").first.locator(".jp-OutputArea-output iframe")
    expect(frame_el).to_have_count(1, timeout=60_000)
    assert frame_el.get_attribute("sandbox") == "allow-scripts"
    frame = frame_el.content_frame
    button = frame.locator("#get-time-btn")
    expect(button).to_be_visible(timeout=30_000)

    # Script in the frame cannot read the notebook's page.
    handle = frame_el.element_handle()
    inner = handle.content_frame()
    reached = inner.evaluate("() => { try { return String(parent.document.title); }"
                             " catch (e) { return 'blocked ' + e.name; } }")
    assert reached == "blocked SecurityError", reached

    # The four buttons.
    before = frame.locator("#server-time").inner_text()
    button.click()
    expect(frame.locator("#server-time")).not_to_have_text(before, timeout=30_000)
    expect(frame.locator("#server-time")).to_contain_text("20", timeout=30_000)
    frame.locator("#send-message-btn").click()
    frame.locator("#send-log-btn").click()
    pages = len(page.context.pages)
    frame.locator("#open-link-btn").click()
    link = page.locator(".jp-OutputArea-output a", has_text="http")
    expect(link).to_have_count(1, timeout=30_000)
    page.wait_for_timeout(500)
    assert len(page.context.pages) == pages  # shown, never opened

    # The next cell sees the button's call in bench.records, with its provenance.
    second = page.locator(".jp-Cell").nth(1)
    second.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    out = second.locator(".jp-OutputArea-output", has_text="FROM VIEW")
    expect(out).to_contain_text("FROM VIEW 1 ['get-time'] True", timeout=30_000)
    expect(out).to_contain_text("OPENED BY True")
    expect(out).not_to_contain_text("MESSAGES []")
    expect(out).not_to_contain_text("APP LOGS 0")
    expect(out).not_to_contain_text("LINKS []")
    print(out.inner_text(), file=sys.stderr)

    # A fetch from the view to a 127.0.0.1 listener its CSP does not declare never connects.
    with counting_listener() as (port, connections):
        outcome = inner.evaluate(
            f"() => fetch('http://127.0.0.1:{port}/x').then(() => 'fetched',"
            " (e) => 'refused ' + e.name)")
        page.wait_for_timeout(300)
        assert outcome == "refused TypeError", outcome
        assert connections == [], connections


@pytest.mark.timeout(300)
def test_clearing_the_output_tears_down_the_live_view(lab: str) -> None:
    """Clear Output: ``ui/resource-teardown`` reaches the very document that was showing (a
    probe the test put into it answers), the app answers it, and the kernel's ``view.log``
    has both (no second ``ui/initialize``: the frame never reloaded)."""
    found = _clear_and_read(lab, NAME, "apps-teardown", ready="#server-time")
    assert found["rows"] == [["out", TEARDOWN, repr(TEARDOWN_ID), True, None],
                             ["in", TEARDOWN, repr(TEARDOWN_ID), True, None]], found
    assert found["initialize"] == 1, found
    assert found["probe"] == [f"teardown-probe {found['token']} got {TEARDOWN_ID}"], found


@pytest.mark.timeout(300)
def test_a_view_that_never_answers_teardown_is_removed_after_2_s(lab: str) -> None:
    """The hostile view gets the teardown in its live document and never answers: its frame
    is removed after 2 s anyway, and the kernel records that it did not answer."""
    found = _clear_and_read(lab, HOSTILE_NAME, "apps-teardown-hostile", ready="#out")
    assert found["rows"][0] == ["out", TEARDOWN, repr(TEARDOWN_ID), True, None], found
    assert found["rows"][1][:4] == ["in", TEARDOWN, repr(TEARDOWN_ID), False], found
    assert "did not answer" in found["rows"][1][4], found
    assert len(found["rows"]) == 2 and found["initialize"] == 1, found
    assert found["probe"] == [f"teardown-probe {found['token']} got {TEARDOWN_ID}"], found
    assert TEARDOWN_WAIT_S - 0.1 <= found["removed_after"] <= 15, found


PROBE = """(token) => {
  window.addEventListener("message", (event) => {
    const m = event.data;
    if (m && m.method === "ui/resource-teardown") {
      window.parent.postMessage({jsonrpc: "2.0", method: "notifications/message", params: {
        level: "info", logger: "teardown-probe",
        data: "teardown-probe " + token + " got " + m.id}}, "*");
    }
  }, true);  // capture: before the app's own listener, whose answer removes the frame
  return document.readyState;
}"""
"""Put into the live view document: says, through the bridge, that it got the teardown. A
reloaded document would not have it."""


def _clear_and_read(lab: str, name: str, artifact: str, ready: str,
                    ) -> dict[str, Any]:
    """Open ``name``, run it, put the probe into the live view, Clear Output on the view's
    cell, wait (bounded) until the frame has left the page, then run the last cell and
    return what it printed (its ``TEARDOWN`` JSON) plus the probe's token and how long the
    frame outlived the click."""
    from playwright.sync_api import expect, sync_playwright

    token = f"live-{secrets.token_hex(6)}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, artifact):
                page.goto(f"{lab}/lab/tree/{name}?reset", timeout=60_000)
                expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(
                    timeout=60_000)
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                frame_el = page.locator(".jp-Cell").first.locator(
                    ".jp-OutputArea-output iframe")
                expect(frame_el).to_have_count(1, timeout=60_000)
                shown = frame_el.content_frame.locator(ready)
                if ready == "#server-time":  # the tool's result reached the app
                    expect(shown).not_to_have_text("Loading...", timeout=60_000)
                else:  # the hostile view echoes what it gets: tool-result came
                    expect(shown).to_contain_text("tool-result", timeout=60_000)
                live = frame_el.element_handle().content_frame()
                assert live is not None
                assert live.evaluate(PROBE, token) == "complete"
                # Shift+Enter on the last cell adds a new one: it is named by its index.
                last = page.locator(".jp-Cell").nth(page.locator(".jp-Cell").count() - 1)
                expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(
                    timeout=60_000)

                page.locator(".jp-Cell").first.locator(".jp-InputArea-editor").click()
                page.keyboard.press("Escape")  # command mode, cell 1 selected
                page.get_by_role("menuitem", name="Edit", exact=True).click()
                clear = re.compile(r"^Clear (Cell )?Output")
                item = page.get_by_role("menuitem", name=clear).first
                anywhere = page.locator("iframe[title='MCP App view']")
                started = time.monotonic()
                item.click()
                expect(page.locator(".jp-OutputArea-output iframe")).to_have_count(
                    0, timeout=10_000)
                expect(anywhere).to_have_count(0, timeout=15_000)  # answered, or 2 s
                removed_after = time.monotonic() - started

                last.locator(".jp-InputArea-editor").click()
                page.keyboard.press("Shift+Enter")
                told = last.locator(".jp-OutputArea-output", has_text="TEARDOWN")
                expect(told).to_contain_text(TEARDOWN, timeout=30_000)
                text = told.inner_text()
                print(text, file=sys.stderr)
        finally:
            browser.close()
    found: dict[str, Any] = json.loads(text.split("TEARDOWN", 1)[1])
    found["token"], found["removed_after"] = token, removed_after
    return found


@contextlib.contextmanager
def counting_listener() -> Iterator[tuple[int, list[Any]]]:
    """A TCP listener on 127.0.0.1 that records every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.1)
    connections: list[Any] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except OSError:
                continue
            connections.append(peer)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], connections
    finally:
        stop.set()
        thread.join(5)
        server.close()

