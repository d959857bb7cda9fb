"""``anywidget-mcp`` (PyPI) in a real JupyterLab (headless Chromium): its view gets its
runtime data from results' ``_meta`` (DESIGN.md, "The bridge"), so it renders the widget
instead of "Widget bootstrap returned no runtime data" (its modules load from ``blob:``
URLs, which its CSP may name), and a click in the widget comes back from the server."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, kept_on_failure, serve_lab
from test_browser_hostcontext import open_view_cell

NAME = "anywidget.ipynb"
ROOT = Path(__file__).resolve().parents[1]
COUNTER = [sys.executable, str(ROOT / "tests" / "servers" / "anywidget_counter.py")]

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
            f"bench.connect('aw', {COUNTER!r})\n"
            "result = bench.call('aw-counter')\nresult.app")]
        notebook.metadata["kernelspec"] = {"name": "python3",
                                           "display_name": "Python 3 (ipykernel)",
                                           "language": "python"}
        nbformat.write(notebook, str(served / NAME))

    with serve_lab(put, "toolbench-lab-anywidget-") as url:
        yield url


@pytest.mark.timeout(300)
def test_an_anywidget_mcp_view_renders_its_widget_in_jupyterlab(lab: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "apps-anywidget"):
                frame_el = open_view_cell(page, f"{lab}/lab/tree/{NAME}?reset",
                                          "Python 3 (ipykernel) | Idle")
                inner = frame_el.content_frame
                button = inner.locator("#counter-btn")
                expect(button).to_have_text("count is 0", timeout=60_000)
                assert "no runtime data" not in inner.locator("body").inner_text()
                button.click()
                expect(button).to_have_text("count is 1", timeout=30_000)
        finally:
            browser.close()
