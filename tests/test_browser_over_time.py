"""``notebooks/07_over_time.ipynb`` in a real JupyterLab, driven through headless Chromium.

tests/test_notebooks.py runs the notebook with nbclient; this runs it the way a reader does
(Run All Cells from Lab's menu) and checks what the page shows and what Lab saved: every
cell ran, no error and nothing on stderr, the restart's diff and the pin refusal are on the
page. Then it uses the explorer's **Changes** tab on the notebook's own pins file: two cells
appended to the served copy connect the *original* ``geo_precise`` to a bench using the pins
the notebook approved for version 2, so its ``distance`` is changed again; a click on
Approve must flip the pin (the page's summary, the catalog's ``pin`` column in a re-run cell)
and let the call through.

The notebook is copied into a temporary folder Lab serves; tests/test_browser.py's
``serve_lab`` runs Lab.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_browser import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    kept_on_failure,
    run_all,
    serve_lab,
)

NOTEBOOK = ROOT / "notebooks" / "07_over_time.ipynb"
NAME = NOTEBOOK.name
TOOL = "geo_precise-distance"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason=f"Debian's chromium is not installed at {CHROMIUM} "
                              "(apt-get install -y chromium; .ci/run installs it)"),
]

ADDED = [
    # The original geo_precise, against the pins that now hold its version 2: changed again.
    "import os\n"
    "v1 = demo.config()['mcpServers']['geo_precise']\n"
    "check = tb.Bench(pins=pins)\n"
    "with warnings.catch_warnings(record=True) as again:\n"
    "    warnings.simplefilter('always')\n"
    "    check.connect('geo_precise', [v1['command'], *v1['args']], env=v1['env'])\n"
    "print('REPINNED', [w.category.__name__ for w in again], sys.prefix,\n"
    "      os.path.dirname(os.path.dirname(tb.__file__)))\n"
    "app = check.explore()\n"
    "app",
    # Run by Run All (before the click) and again by the test (after it).
    "try:\n"
    f"    answer = repr(check.call({TOOL!r}, from_city='London', to_city='Paris', unit='km')"
    ".data)\n"
    "except tb.Refused as exc:\n"
    "    answer = f'{type(exc).__name__} ({exc.disposition.value})'\n"
    f"print('STATE', check.catalog().set_index('name').loc[{TOOL!r}, 'pin'], '|', answer)",
]


def put_notebook(served: Path, into: list[Path]) -> None:
    """The notebook with the two cells above appended (the repo's copy is never touched)."""
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in ADDED]
    nbformat.write(notebook, str(served / NAME))
    into.append(served / NAME)


@pytest.fixture
def lab() -> Iterator[tuple[str, Path]]:
    """A JupyterLab serving a temporary copy of the notebook; yields its URL and the copy."""
    where: list[Path] = []
    with serve_lab(lambda served: put_notebook(served, where), "toolbench-lab-07-") as url:
        yield url, where[0]


@pytest.mark.timeout(480)  # a Lab start and a 33-cell notebook with five servers, under load
def test_07_runs_clean_in_jupyterlab_and_approves_in_the_changes_tab(
        lab: tuple[str, Path]) -> None:
    from playwright.sync_api import sync_playwright

    url, copy = lab
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "over-time"):
                _drive(page, url, copy)
        finally:
            browser.close()


def _drive(page: Any, url: str, copy: Path) -> None:
    from playwright.sync_api import expect

    dialogs = run_all(page, url, NAME)

    cells = page.locator(".jp-Notebook .jp-Cell.jp-CodeCell")

    def stdout(text: str) -> Any:
        return page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter."
                            "stdout']", has_text=text)

    # The last cell prints the pin state: Run All reached the end (each cell waits for the
    # one before, so every cell of the notebook ran by then).
    expect(stdout("STATE")).to_have_count(1, timeout=240_000)
    state = stdout("STATE")
    assert state.inner_text().strip() == "STATE changed | Refused (did_not_happen)"
    repinned = stdout("REPINNED").inner_text()
    # The venv's kernel, running the toolbench under test.
    assert f"REPINNED ['PinWarning'] {sys.prefix} {ROOT}" in repinned
    # Nothing went wrong anywhere: no traceback, no warning, nothing on stderr.
    expect(page.locator("[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
    expect(page.locator(".jp-InputPrompt", has_text="[*]")).to_have_count(0)

    # What the notebook is about, as the page shows it: the restart's PinWarning, the refused
    # call, the diff (the description's words struck out and added), the renamed parameter.
    expect(stdout("PinWarning: server 'geo_precise': 1 pinned tool changed ('distance')")
           ).to_have_count(1)
    expect(stdout("parameter removed: unit; parameter added: units")).to_have_count(1)
    expect(stdout("Refused (did_not_happen)")).to_have_count(2)  # the notebook's and ours
    show = cells.nth(_code_index(copy, "changes.tb.show()"))
    expect(show.locator(".jp-OutputArea-output del").first).to_be_attached()
    expect(show.locator(".jp-OutputArea-output ins").first).to_be_attached()
    expect(show.locator(".jp-OutputArea-output")).to_contain_text("units")
    expect(stdout("not recorded")).to_have_count(1)  # the offline bench's plain refusal
    expect(page.locator(".jp-OutputArea-output img")).to_have_count(1)  # the drift plot

    # The explorer's Changes tab: the changed tool, its diff, an Approve button.
    explorer = page.locator(".toolbench-explorer")
    expect(explorer).to_have_count(1)
    explorer.scroll_into_view_if_needed()
    explorer.get_by_role("tab", name="Changes").click()
    expect(explorer).to_contain_text("geo_precise/distance (tool) changed since it was pinned",
                                     timeout=30_000)
    expect(explorer).to_contain_text("1 changed")
    approve = explorer.get_by_role("button", name="Approve")
    expect(approve).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "over-time-changes.png"), full_page=True)
    approve.click()
    expect(explorer).to_contain_text(f"approved {TOOL}", timeout=30_000)
    expect(explorer).to_contain_text("0 changed")
    expect(explorer.get_by_role("button", name="Approve")).to_have_count(0)

    # The kernel agrees: the last cell, run again, sees the pin and the call goes through.
    last = cells.nth(cells.count() - 1)
    last.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")  # run in place (Shift+Enter would add a cell)
    expect(state).to_contain_text("STATE pinned |", timeout=60_000)
    kilometres = re.search(r"\| .*?(\d+\.\d+)", state.inner_text())
    assert kilometres and 330 < float(kilometres[1]) < 360, state.inner_text()  # about 344
    expect(page.locator("[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "over-time-approved.png"), full_page=True)
    assert dialogs == [], f"a script ran in the page: {dialogs}"

    # What Lab saves is what ran: every code cell counted, no error output in the file.
    page.keyboard.press("Control+s")
    _saved_clean(copy)


def _code_index(copy: Path, start: str) -> int:
    """The index among code cells of the one whose source starts with ``start``."""
    import nbformat

    code = [c for c in nbformat.read(copy, as_version=4).cells if c.cell_type == "code"]
    return next(i for i, c in enumerate(code) if c.source.startswith(start))


def _saved_clean(copy: Path) -> None:
    import time

    import nbformat

    deadline = time.monotonic() + 30
    while True:  # the save is asynchronous: wait for a file whose every cell has run
        notebook = nbformat.read(copy, as_version=4)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        if all(c.execution_count for c in code) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert all(c.execution_count for c in code), [c.source[:40] for c in code
                                                   if not c.execution_count]
    bad = [(c.source[:40], o.get("ename") or o.get("name")) for c in code for o in c.outputs
           if o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")]
    assert bad == [], bad
