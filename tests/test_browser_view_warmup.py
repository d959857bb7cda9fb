"""The first MCP App view's warm-up in a real JupyterLab (headless Chromium; issue 46,
``toolbench._notebook.view_warmup``): connecting servers with views warms the page once and
invisibly, and the first view after it still renders and its clicks still reach
``bench.records``. (Its speed is measured in ``benchmarks/bench_apps_lab.py``, not here.)

The real ``server-basic-vanillajs`` (npm, pinned) over stdio, as in ``test_browser_apps.py``.
Each cell is run on its own and waited for, so each check sees what the cells before left.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from test_apps_servers import server_command
from test_browser import BROWSER_MARKS, in_chromium, serve_lab, write_cells

NAME = "warm.ipynb"
IDLE = "Python 3 (ipykernel) | Idle"
WAIT_MS = 60_000

pytestmark = BROWSER_MARKS


def cells(command: list[str]) -> list[str]:
    count = ("from ipywidgets.widgets.widget import _instances  # the kernel's live widgets\n"
             "from toolbench._notebook.apps.view import ViewWarmUp\n"
             "made = sum(isinstance(w, ViewWarmUp) for w in list(_instances.values()))\n")
    return [
        # Two benches, three servers with views: one warm-up for the kernel.
        "# connect\nimport toolbench as tb\n"
        "from toolbench._notebook.view_warmup import warm_views\n"
        "bench = tb.Bench(timeout=60)\n"
        f"bench.connect('basic', {command!r})\n"
        f"bench.connect('again', {command!r})\n"
        "other = tb.Bench(timeout=60)\n"
        f"other.connect('third', {command!r})\n"
        "ended = warm_views.done.wait(60)\n"
        f"{count}"
        "print('WARM', warm_views.state, ended, made)",
        "# view\nresult = bench.call('basic-get-time')\nresult",
        "# records\n"
        "apps = bench.records[bench.records['provenance'].map(\n"
        "    lambda p: isinstance(p, dict) and 'app' in p)]\n"
        "print('FROM VIEW', len(apps), list(apps['tool']), bool(apps['ok'].all()))\n"
        "print('OPENED BY', apps['provenance'].iloc[-1]['app']['opened_by'] == result.call_id)\n"
        f"{count}"
        "print('STILL', warm_views.state, made)\n"
        "other.close()\nbench.close()",
    ]


@pytest.fixture
def lab() -> Iterator[str]:
    command = server_command("server-basic-vanillajs")
    with serve_lab(lambda served: write_cells(served / NAME, cells(command)),
                   "toolbench-lab-warm-") as url:
        yield url


def _run(page: Any, mark: str) -> Any:
    """Runs the cell whose first line is ``# mark`` alone; returns it. A click can land
    while the view above resizes (or while the view's frame has the focus), so the cell is
    checked to be the active one, and to have started, before going on (a few tries)."""
    from playwright.sync_api import expect

    cell = page.locator(".jp-Cell", has_text=f"# {mark}")
    prompt = cell.locator(".jp-InputPrompt")
    for _ in range(5):
        cell.locator(".jp-InputArea-editor").click()
        try:
            expect(cell).to_have_class(re.compile(r"(^|\s)jp-mod-active(\s|$)"),
                                       timeout=5_000)
        except AssertionError:
            continue
        page.keyboard.press("Control+Enter")
        try:
            expect(prompt).not_to_have_text(re.compile(r"^\s*\[ \]:\s*$"), timeout=10_000)
        except AssertionError:
            continue
        return cell
    raise AssertionError(f"the cell '# {mark}' could not be run")


@pytest.mark.timeout(300)
def test_the_warm_up_is_once_and_invisible_and_the_first_view_still_works(lab: str) -> None:
    in_chromium("apps-warm", lambda page: _drive(page, lab))


def _drive(page: Any, lab: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{lab}/lab/tree/{NAME}?reset", timeout=WAIT_MS)
    idle = page.get_by_text(IDLE)
    expect(idle).to_be_visible(timeout=WAIT_MS)

    # Three servers with views in two benches: the kernel warmed once, with one widget...
    connect = _run(page, "connect")
    out = connect.locator(".jp-OutputArea-output")
    expect(out).to_contain_text("WARM warm True 1", timeout=WAIT_MS)
    expect(idle).to_be_visible(timeout=WAIT_MS)
    # ... that shows nothing: the cell's only output is its print, no widget anywhere.
    expect(out).to_have_count(1)
    assert page.locator(".jp-OutputArea-output .jupyter-widgets").count() == 0
    # The page keeps one hidden frame, empty, of toolbench's own; nothing of the server's.
    warm = page.locator(".toolbench-app-warm")
    expect(warm).to_have_count(1, timeout=WAIT_MS)
    expect(warm.locator("iframe")).to_have_count(1)
    expect(warm).to_be_hidden()
    expect(warm.locator("iframe")).to_be_hidden()
    frame = warm.locator("iframe")
    assert frame.get_attribute("sandbox") == "allow-scripts"
    srcdoc = frame.get_attribute("srcdoc") or ""
    assert "toolbench warm-up" in srcdoc and "default-src 'none'" in srcdoc
    assert not re.search(r"basic|get-time|<script", srcdoc, re.IGNORECASE), srcdoc
    assert page.locator('iframe[title="MCP App view"]').count() == 0  # no view before a call

    # The first view renders, in its cell, and a click in it reaches the server.
    view = _run(page, "view")
    view_el = view.locator('.jp-OutputArea-output iframe[title="MCP App view"]')
    expect(view_el).to_have_count(1, timeout=WAIT_MS)
    inner = view_el.content_frame
    time_text = inner.locator("#server-time")
    expect(time_text).not_to_have_text("Loading...", timeout=WAIT_MS)
    before = time_text.inner_text()
    expect(idle).to_be_visible(timeout=WAIT_MS)
    page.wait_for_timeout(1100)  # the server's time has a new second to show
    inner.locator("#get-time-btn").click()
    expect(time_text).not_to_have_text(before, timeout=WAIT_MS)

    # The click is in bench.records, from the view; still one warm-up, one hidden frame.
    records = _run(page, "records").locator(".jp-OutputArea-output")
    expect(records).to_contain_text("FROM VIEW 1 ['get-time'] True", timeout=WAIT_MS)
    expect(records).to_contain_text("OPENED BY True")
    expect(records).to_contain_text("STILL warm 1")
    expect(page.locator(".toolbench-app-warm")).to_have_count(1)
    print(records.all_inner_texts(), file=sys.stderr)
