"""The bench's own DataFrames in a real JupyterLab (headless Chromium), issue 37 items 5, 7:
a catalog of the real ``mcp-server-time`` (its output schema has ``$ref``/``$defs``) shows
the dollars as text, never as TeX typeset by MathJax, and ``bench.servers`` of a server that
failed to start has its whole error one click away (a ``<details>``), escaped.

Uses ``serve_lab`` from tests/test_browser.py; the notebook is written here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, kept_on_failure, serve_lab

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"Debian's chromium is not installed at {CHROMIUM}")]

NAME = "frames.ipynb"
TIME = Path(sys.executable).parent / "mcp-server-time"
CELLS = [
    "import toolbench as tb\nbench = tb.Bench()\n"
    "bench.connect('time', [TIME, '--local-timezone', 'UTC'])\n"
    "try:\n    bench.connect('bad', ['/nonexistent/mcp-serve-<b>x</b>', '--flag-one', "
    "'--flag-two', 'end-of-the-error'])\nexcept tb.Unreachable:\n    pass",
    "bench.catalog()[['name', 'output_schema', 'input_schema', 'parameters', 'tool']]",
    "bench.servers",
]


def _notebook(served: Path) -> None:
    cells = [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
              "outputs": [], "source": source.replace("TIME", json.dumps(str(TIME)))}
             for i, source in enumerate(CELLS)]
    nb = {"cells": cells,
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                      "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    (served / NAME).write_text(json.dumps(nb))


@pytest.mark.timeout(300)
def test_bench_frames_show_dollars_as_text_and_failures_in_full() -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with serve_lab(_notebook, "toolbench-frames-") as lab, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "frames"):
                _drive(page, lab)
        finally:
            browser.close()


def _drive(page: Any, lab: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{lab}/lab/tree/{NAME}?reset", timeout=60_000)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

    outputs = page.locator(".jp-OutputArea-output")
    catalog = outputs.filter(has_text="get_current_time")
    expect(catalog.first).to_be_visible(timeout=90_000)
    expect(outputs.filter(has_text="stderr_tail").first).to_be_visible(timeout=60_000)
    page.wait_for_timeout(2_000)  # MathJax typesets a moment after an output is attached

    # Item 7: the schema's "$ref"/"$defs" are text; MathJax typeset nothing.
    assert page.locator(".jp-OutputArea-output mjx-container").count() == 0
    assert page.locator(".jp-OutputArea-output .MathJax").count() == 0
    expect(catalog.first).to_contain_text("$defs")

    failed = outputs.filter(has_text="mcp-serve-")
    expect(failed.first).to_be_visible(timeout=10_000)

    # Item 5: the cut error's whole text is one click away, and escaped (no <b> element).
    details = failed.first.locator("details.toolbench-failure")
    expect(details).to_have_count(1)
    whole = details.locator("pre").first
    expect(whole).not_to_be_visible()
    details.locator("summary").click()
    expect(whole).to_be_visible()
    expect(whole).to_contain_text("end-of-the-error")
    expect(whole).to_contain_text("mcp-serve-<b>x</b>")
    assert failed.first.locator("pre b").count() == 0
