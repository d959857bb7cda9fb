"""MCP Apps in a real JupyterLab, in headless Chromium (DESIGN.md, "MCP Apps"): the real
``server-basic-vanillajs`` (npm, pinned) over stdio, its view framed in the output cell, and
its four buttons clicked as a person would.

Checked: the view renders inside the output cell; the frame's ``sandbox`` is exactly
``allow-scripts``; script in the frame cannot read ``parent.document``; "Get Server Time"
reaches the server and its call is in ``bench.records`` in the next cell with
``provenance["app"]``; "Send Message" and "Send Log" land in ``view.messages`` and
``bench.logs``; "Open Link" shows the URL under the view and opens no page; a ``fetch`` from
the view to a 127.0.0.1 listener its CSP does not declare never connects.

The teardown check is its own test, expected to fail until the kernel side fixes what it
found (see its xfail reason).

The cell displays ``result.app`` itself: when this was written, a ``Result``'s own display
showed the card only, not the live view above it (DESIGN asks for both).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_apps_servers import server_command
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, kept_on_failure, serve_lab

NAME = "apps.ipynb"

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
        "print('TEARDOWN', [(d, m, i, ok) for d, m, i, ok in\n"
        "    view.log[['direction', 'method', 'id', 'ok']].itertuples(index=False)\n"
        "    if 'teardown' in str(m) + str(i)])",
    ]


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
@pytest.mark.xfail(strict=True, reason=(
    "found by this test: after Clear Output the frame is gone but the kernel never sees the "
    "view's answer to ui/resource-teardown (view.js moves the iframe into a hidden div, and a "
    "moved iframe reloads, so the teardown goes to a fresh document); kernel side to fix"))
def test_closing_the_output_sends_teardown(lab: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "apps-teardown"):
                page.goto(f"{lab}/lab/tree/{NAME}?reset", timeout=60_000)
                expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(
                    timeout=60_000)
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                frame_el = page.locator(".jp-Cell").first.locator(
                    ".jp-OutputArea-output iframe")
                expect(frame_el.content_frame.locator("#get-time-btn")).to_be_visible(
                    timeout=60_000)
                page.locator(".jp-Cell").first.locator(".jp-InputArea-editor").click()
                page.keyboard.press("Escape")  # command mode, cell 1 selected
                page.get_by_role("menuitem", name="Edit", exact=True).click()
                clear = re.compile(r"^Clear (Cell )?Output")
                page.get_by_role("menuitem", name=clear).first.click()
                expect(page.locator(".jp-OutputArea-output iframe")).to_have_count(
                    0, timeout=10_000)
                page.wait_for_timeout(500)
                third = page.locator(".jp-Cell").nth(2)
                third.locator(".jp-InputArea-editor").click()
                page.keyboard.press("Shift+Enter")
                told = third.locator(".jp-OutputArea-output", has_text="TEARDOWN")
                expect(told).to_contain_text("toolbench-teardown", timeout=30_000)
                print(told.inner_text(), file=sys.stderr)
        finally:
            browser.close()


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

