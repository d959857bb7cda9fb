"""A view that keeps up with its host, in a real JupyterLab and a real Notebook 7 (headless
Chromium; DESIGN.md, "MCP Apps"): the "loading the view…" placeholder until the view reports
its size, ``host-context-changed`` when Lab switches to its dark theme, fullscreen as the
view asks for it, closed by Escape or the close button, with the frame's document kept (never
reloaded) both ways, and a re-run starting at the view's last known height. The view
(``tests/servers/context_app.py``) keeps every message it gets.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, kept_on_failure, serve_lab

NAME = "context.ipynb"
ROOT = Path(__file__).resolve().parents[1]
CONTEXT_APP = [sys.executable, str(ROOT / "tests" / "servers" / "context_app.py")]
CHANGED = "ui/notifications/host-context-changed"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason=f"Debian's chromium is not installed at {CHROMIUM}"),
]


@pytest.fixture
def lab() -> Iterator[str]:
    import nbformat

    def put(served: Path) -> None:
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(
            "import toolbench as tb\n"
            "bench = tb.Bench(timeout=60)\n"
            f"bench.connect('context', {CONTEXT_APP!r}, env={{'PYTHONPATH': {str(ROOT)!r}}})\n"
            "result = bench.call('context-open_view')\nresult.app")]
        notebook.metadata["kernelspec"] = {"name": "python3",
                                           "display_name": "Python 3 (ipykernel)",
                                           "language": "python"}
        nbformat.write(notebook, str(served / NAME))

    with serve_lab(put, "toolbench-lab-context-") as url:
        yield url


def changes(live: Any) -> list[dict[str, Any]]:
    """The host-context-changed params the view has received so far."""
    found: list[dict[str, Any]] = live.evaluate(
        f"() => window.received.filter((m) => m && m.method === {CHANGED!r})"
        ".map((m) => m.params)")
    return found


def wait_for_change(page: Any, live: Any, key: str, value: Any) -> list[dict[str, Any]]:
    """Polls (bounded) until the view got a host-context-changed with ``key == value`` (for
    ``containerDimensions``, ``value`` is a key it must hold)."""
    def found(change: dict[str, Any]) -> bool:
        if key == "containerDimensions":
            return value in change.get(key, {})
        return bool(change.get(key) == value)

    for _ in range(200):
        seen = changes(live)
        if any(found(c) for c in seen):
            return seen
        page.wait_for_timeout(100)
    raise AssertionError(f"no {CHANGED} with {key}={value!r}: {changes(live)}")


def open_view_cell(page: Any, url: str, idle: str) -> Any:
    """Runs the notebook (menu Run, Run All Cells: Lab's and Notebook 7's) and returns the
    view's frame element, once there."""
    from playwright.sync_api import expect

    page.goto(url, timeout=60_000)
    expect(page.locator(".jp-Notebook")).to_be_visible(timeout=60_000)
    expect(page.get_by_text(idle).first).to_be_attached(timeout=60_000)  # N7: screen reader
    prompt = page.locator(".jp-InputPrompt").first
    accept = page.locator(".jp-Dialog .jp-mod-accept")  # "Select Kernel": take the default
    frame_el = page.locator(".jp-OutputArea-output iframe")
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    asked = 0
    for tick in range(900):  # at most about 90 s: the status text can come before the
        if frame_el.count():  # kernel, and then the run is lost or Lab asks for a kernel
            break
        if accept.count() and accept.first.is_visible():
            accept.first.click()
        elif tick - asked >= 100 and prompt.inner_text().strip() in ("[ ]:", ""):
            asked = tick  # nothing ran in 10 s and nothing asks: run again
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        page.wait_for_timeout(100)
    expect(frame_el).to_have_count(1, timeout=30_000)
    return frame_el


def open_view(page: Any, url: str, idle: str) -> tuple[Any, Any]:
    """:func:`open_view_cell`, then the context view's live document, before ``go()``."""
    from playwright.sync_api import expect

    frame_el = open_view_cell(page, url, idle)
    expect(frame_el.content_frame.locator("#state")).to_have_text("waiting", timeout=30_000)
    live = frame_el.element_handle().content_frame()
    assert live is not None
    return frame_el, live


def check_fullscreen(page: Any, live: Any, close: str) -> None:
    """The view asks for fullscreen, gets it (a panel over the page, most of the window),
    and goes back inline when the person closes it (``close``: Escape or the button); the
    view hears both, and its document is the same one throughout."""
    from playwright.sync_api import expect

    live.evaluate("() => { window.token = 'kept'; }")
    live.evaluate("() => window.ask('fullscreen')")
    panel = page.locator(".toolbench-app-fullscreen")
    expect(panel).to_be_visible(timeout=15_000)
    box = panel.locator("iframe").bounding_box()
    size = page.viewport_size
    assert box is not None and size is not None
    assert box["width"] >= 0.6 * size["width"] and box["height"] >= 0.75 * size["height"], box
    wait_for_change(page, live, "displayMode", "fullscreen")
    wait_for_change(page, live, "containerDimensions", "height")  # the panel's, measured
    if close == "Escape":
        page.keyboard.press("Escape")
    else:
        panel.get_by_role("button", name="Close fullscreen").click()
    expect(panel).to_have_count(0, timeout=15_000)
    expect(page.locator(".jp-OutputArea-output iframe")).to_have_count(1)
    wait_for_change(page, live, "displayMode", "inline")
    assert live.evaluate("() => window.token") == "kept"  # the same document: no reload
    # the view asks for inline itself, after fullscreen again
    live.evaluate("() => window.ask('fullscreen')")
    expect(panel).to_be_visible(timeout=15_000)
    live.evaluate("() => window.ask('inline')")
    expect(panel).to_have_count(0, timeout=15_000)
    assert live.evaluate("() => window.token") == "kept"


def check_placeholder(page: Any, frame_el: Any, live: Any) -> None:
    from playwright.sync_api import expect

    loading = page.locator(".toolbench-app-loading")
    expect(loading).to_be_visible()
    expect(loading).to_have_text("loading the view…")
    live.evaluate("() => window.go()")
    expect(loading).to_have_count(0, timeout=15_000)
    expect(frame_el).to_have_attribute("style", "width: 100%; display: block; border: 0px; "
                                       "height: 300px;", timeout=15_000)


def check_rerun_height(page: Any) -> None:
    """Running the cell again opens a new view at the last height the old one reported
    (300 px), still behind its placeholder until it reports its own."""
    from playwright.sync_api import expect

    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    fresh = page.locator(".jp-OutputArea-output iframe")
    expect(fresh).to_have_count(1, timeout=60_000)
    expect(fresh.content_frame.locator("#state")).to_have_text("waiting", timeout=30_000)
    live = fresh.element_handle().content_frame()
    assert live is not None and live.evaluate("() => window.token") is None  # a new view
    expect(fresh).to_have_attribute("style", "width: 100%; display: block; border: 0px; "
                                    "height: 300px;")
    expect(page.locator(".toolbench-app-loading")).to_be_visible()


@pytest.mark.timeout(300)
def test_placeholder_dark_theme_and_fullscreen_in_jupyterlab(lab: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "apps-context-lab"):
                frame_el, live = open_view(page, f"{lab}/lab/tree/{NAME}?reset",
                                           "Python 3 (ipykernel) | Idle")
                check_placeholder(page, frame_el, live)
                assert changes(live) == []  # nothing changed yet
                # Settings > Theme > JupyterLab Dark
                page.get_by_role("menuitem", name="Settings", exact=True).click()
                page.locator(".lm-Menu-itemLabel:text-is('Theme')").click()
                page.locator(".lm-Menu-itemLabel:text-is('JupyterLab Dark')").click()
                expect(page.locator("body[data-jp-theme-light='false']")).to_have_count(
                    1, timeout=30_000)
                wait_for_change(page, live, "theme", "dark")
                check_fullscreen(page, live, "Escape")
        finally:
            browser.close()


@pytest.mark.timeout(300)
def test_placeholder_fullscreen_and_rerun_height_in_notebook_7(lab: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "apps-context-notebook7"):
                frame_el, live = open_view(page, f"{lab}/notebooks/{NAME}", "Kernel status: Idle")
                check_placeholder(page, frame_el, live)
                check_fullscreen(page, live, "button")
                check_rerun_height(page)
        finally:
            browser.close()
