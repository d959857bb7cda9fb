"""Notebook 04's compare tables in a real JupyterLab (headless Chromium), issue 37 item 16:
``bench.compare(...).tb.show()`` drew a table wider than its output cell (the ``city``
compare: five ``structured.<field>`` headers, each on one line, made it about 970 px in an
848 px cell, so half of it sat behind a sideways scroll). Each compare table must now fit
its output area, in a window the size of a laptop's, with every column in view.

Runs the tutorial itself (a temporary copy), as a reader does: Run All Cells from the menu.
Uses ``serve_lab`` from tests/test_browser.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, kept_on_failure, serve_lab

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"Debian's chromium is not installed at {CHROMIUM}")]

NOTEBOOK = ROOT / "notebooks" / "04_build_your_own.ipynb"
VIEWPORT = {"width": 1280, "height": 900}
"""A laptop's window: Lab's output area is then about 850 px wide."""
NARROW = {"width": 1024, "height": 900}
"""Lab's output area is then about 590 px wide."""

MEASURE = """(table) => {
    const output = table.closest('.jp-OutputArea-output');
    const scroll = table.closest('.toolbench-scroll');
    return {table: table.getBoundingClientRect().width,
            output: output.getBoundingClientRect().width,
            scrollWidth: scroll.scrollWidth, clientWidth: scroll.clientWidth,
            headers: [...table.querySelectorAll('th')].map(th => th.textContent),
            titles: [...table.querySelectorAll('th[title]')].map(th => th.title)};
}"""


@pytest.mark.timeout(300)
def test_notebook_04_compare_tables_fit_their_output_cells() -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with serve_lab(lambda served: shutil.copy(NOTEBOOK, served / NOTEBOOK.name),
                   "toolbench-compare-") as lab, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            with kept_on_failure(page, "compare-width"):
                _drive(page, lab)
        finally:
            browser.close()


def _drive(page: Any, lab: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{lab}/lab/tree/{NOTEBOOK.name}?reset", timeout=60_000)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

    tables = page.locator(".jp-OutputArea-output table.toolbench-compare")
    expect(tables).to_have_count(2, timeout=120_000)
    distance, city = tables.nth(0), tables.nth(1)
    expect(distance).to_contain_text("KeyError")
    expect(city).to_contain_text("Nairobi")
    page.wait_for_timeout(500)  # let Lab settle its layout after the last output
    _fits(page, {"distance": distance, "city": city}, VIEWPORT["width"])
    # A narrower window (a small laptop, or Lab with its side panel open): it still fits,
    # the cells wrapping instead.
    page.set_viewport_size(NARROW)
    page.wait_for_timeout(1_000)
    _fits(page, {"distance": distance, "city": city}, NARROW["width"])

    # The city table still shows every field of the answer, its DataFrame column name one
    # hover away (the display changed, the frame's columns did not).
    found = city.evaluate(MEASURE)
    for field in ("country", "lat", "lon", "name", "population"):
        assert field in found["headers"], found
        assert f"structured.{field}" in found["titles"], found


def _fits(page: Any, tables: dict[str, Any], window: int) -> None:
    """Each table's box lies within its output area's, and its scroller hides nothing."""
    for name, table in tables.items():
        table.scroll_into_view_if_needed()
        box = table.bounding_box()
        output = table.locator("xpath=ancestor::div[contains(@class,"
                               "'jp-OutputArea-output')][1]").bounding_box()
        assert box is not None and output is not None
        found = table.evaluate(MEASURE)
        print(f"window {window} px, {name}: table {box['width']:.1f} px, "
              f"output area {output['width']:.1f} px")
        assert output["width"] > 500, found  # the cell really is a laptop's width
        assert box["width"] <= output["width"], (window, name, found)
        assert box["x"] + box["width"] <= output["x"] + output["width"] + 0.5, (name, found)
        assert found["scrollWidth"] <= found["clientWidth"], (window, name, found)
    page.screenshot(path=str(ARTIFACTS / f"compare-width-{window}.png"), full_page=True)
