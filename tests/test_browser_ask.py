"""``elicitation="ask"`` in a real JupyterLab, driven through headless Chromium.

The one thing only a browser can show: a cell blocked in a plain synchronous ``bench.call``
still gets the form on the page, the person's typing and click reach the kernel (through the
cell-side pump, toolbench/_notebook/ask.py), and the call completes with the answer in the
same cell's output. The notebook is written here, to a temporary folder Lab serves; the
server is the bundled ``beyond`` demo over real stdio. Modeled on tests/test_browser.py,
whose Lab and browser helpers it uses.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, kept_on_failure, serve_lab

NAME = "ask.ipynb"
HINT = "<img src=x onerror=alert(1)>"
ANSWER = ("ANSWER {'action': 'accept', 'content': {'destination': 'Lima', 'nights': 4, "
          "'budget': 1234.5, 'travel_class': 'business', 'insurance': True}}")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason=f"Debian's chromium is not installed at {CHROMIUM} "
                              "(apt-get install -y chromium; .ci/run installs it)"),
]

CELLS = [
    "import sys\nimport toolbench as tb\n"
    "bench = tb.Bench(elicitation='ask', timeout=120)\n"
    "bench.connect('beyond', [sys.executable, '-m', 'toolbench.demo.beyond'])\n"
    "print('READY', sys.prefix)",
    # The plain synchronous call that blocks this cell until a person answers the form.
    f"r = bench.call('beyond-ask_user', destination_hint={HINT!r})\nprint('ANSWER', r.data)",
    "print('AFTER', bench.call('beyond-countdown', steps=1, delay_ms=0).text)",
]


def write_notebook(path: Path) -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                       "language": "python"}
    nbformat.write(notebook, str(path))


@pytest.fixture
def lab() -> Iterator[str]:
    """A JupyterLab serving a temporary folder with the notebook; yields its URL."""
    with serve_lab(lambda served: write_notebook(served / NAME), "toolbench-lab-ask-") as url:
        yield url


def test_ask_form_answers_a_blocking_call_in_jupyterlab(lab: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "ask"):
                _drive(page, lab)
        finally:
            browser.close()


def _drive(page: Any, lab: str) -> None:
    from playwright.sync_api import expect

    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{lab}/lab/tree/{NAME}?reset", timeout=60_000)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

    ready = page.locator(".jp-OutputArea-output", has_text="READY")
    expect(ready).to_be_visible(timeout=60_000)
    assert f"READY {sys.prefix}" in ready.inner_text()  # the venv's kernel, not another

    # The form appears while the cell is still running its synchronous call.
    form = page.locator(".toolbench-ask")
    expect(form).to_be_visible(timeout=60_000)
    # (Not the status bar: it follows control-channel replies too, and may read Idle.)
    expect(page.locator(".jp-InputPrompt", has_text="[*]").first).to_be_visible()
    expect(page.locator(".jp-OutputArea-output", has_text="ANSWER")).to_have_count(0)
    # The server's markup is text, not an element.
    expect(form).to_contain_text(HINT)
    assert form.locator("img").count() == 0

    form.locator(".toolbench-field-destination input").fill("Lima")
    nights = form.locator(".toolbench-field-nights input[type=number]")
    nights.fill("4")
    nights.press("Tab")  # IntText commits its value on blur
    budget = form.locator(".toolbench-field-budget input[type=number]")
    budget.fill("1234.5")
    budget.press("Tab")
    form.locator(".toolbench-field-travel_class select").select_option(label="business")
    form.locator(".toolbench-field-insurance input[type=checkbox]").first.check()
    page.screenshot(path=str(ARTIFACTS / "ask-form.png"), full_page=True)
    form.get_by_role("button", name="Accept").click()

    # The blocked call completes with the answer, in its own cell, and the next cell runs.
    answer = page.locator(".jp-OutputArea-output", has_text="ANSWER")
    expect(answer).to_be_visible(timeout=60_000)
    assert ANSWER in answer.inner_text()
    expect(page.locator(".jp-OutputArea-output", has_text="AFTER counted 1 steps")) \
        .to_be_visible(timeout=60_000)
    expect(form).to_contain_text("accepted")
    expect(form.get_by_role("button", name="Accept")).to_be_disabled()
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "ask-answered.png"), full_page=True)
    assert dialogs == [], f"a script ran in the page: {dialogs}"
