"""Issue 43 items 1-5 in a real JupyterLab (headless Chromium): hostile views that try to leave
their frame, each against a counting listener on 127.0.0.1 (TCP and UDP, tests/listening.py),
with ``Bench(egress=...)`` set. The views are tests/servers/hostile_app.py's ``ESCAPES``.

- A view whose document starts with ``"\\u00a0<!DOCTYPE html>"`` still gets its CSP: its
  ``fetch`` and ``img`` to the listener never connect.
- A view that navigates its frame (``location.href``, an injected ``<meta http-equiv=refresh>``,
  ``a.click()``, or a script written after ``document.open()``, which erases every event
  listener of the page) has ended: its frame is removed, a note says so under it,
  ``view.log`` has the row, and the page it navigated to gets no answer from the bridge (no
  ``tick`` reached the server or ``bench.records``, and the page's "I was answered" beacon
  never came). What one
  navigation still sends (the request for that page) is counted and printed.
- A same-document link (``<a href="#x">``, ``location.href = "#x"``) stays in the document.
- A 12 MB message is answered -32600 in the frame itself and never reaches the comm: the
  kernel's websocket stays open and the view's next call is answered.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from listening import Hits, counting_listener
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, kept_on_failure, serve_lab

from toolbench._bench.apps.guards import NAVIGATED

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"Debian's chromium is not installed at {CHROMIUM}")]

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = [sys.executable, str(ROOT / "tests" / "servers" / "hostile_app.py")]
NAVIGATIONS = ("navigate_href", "navigate_refresh", "navigate_click", "navigate_open")
LANDING = b"""<!doctype html><html><body><p>landed</p><script>
const beacon = (what) => { const i = new Image(); i.src = "/answered-" + what; };
window.addEventListener("message", (e) => beacon(String(e.data && e.data.id)));
const post = (m) => window.parent.postMessage(m, "*");
post({jsonrpc: "2.0", id: 1, method: "ui/initialize", params: {protocolVersion: "2026-01-26",
      appInfo: {name: "landed", version: "0"}, appCapabilities: {}}});
post({jsonrpc: "2.0", id: 2, method: "tools/call", params: {name: "tick", arguments: {}}});
setTimeout(() => post({jsonrpc: "2.0", id: 3, method: "tools/call",
                       params: {name: "tick", arguments: {}}}), 500);
</script></body></html>"""
"""The page a navigating view lands on: it tries the bridge at once and again later, and
tells the listener (``/answered-<id>``) if anything answers it."""


def _notebook(names: tuple[str, ...], port: int, final: str) -> Any:
    import nbformat

    setup = ("import json\nimport toolbench as tb\n"
             "from toolbench._bench.apps.guards import NAVIGATED\n"
             "bench = tb.Bench(timeout=60, egress=['example.com'])\n"
             f"bench.connect('hostile', {HOSTILE!r}, env={{'PYTHONPATH': {str(ROOT)!r}, "
             f"'HOSTILE_LEAK_PORT': '{port}'}})\nviews = {{}}")
    cells = [setup] + [f"views[{name!r}] = bench.call('hostile-{name}').app\nviews[{name!r}]"
                       for name in names] + [final]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                       "language": "python"}
    return notebook


REPORT = (
    "runs = globals().get('runs', 0) + 1\n"
    "def rows(view, pick):\n"
    "    log = view.log[['direction', 'method', 'id', 'ok', 'error']]\n"
    "    return [list(r) for r in log.itertuples(index=False) if pick(r)]\n"
    "records = bench.records\n"
    "print(f'REPORT#{runs}', json.dumps({\n"
    "    'navigated': {k: rows(v, lambda r: r[1] == NAVIGATED) for k, v in views.items()},\n"
    "    'refused': {k: rows(v, lambda r: 'not sent to the kernel' in str(r[4]))\n"
    "                for k, v in views.items()},\n"
    "    'ticks': [bool(ok) for ok in records.loc[records['tool'] == 'tick', 'ok']],\n"
    "    'asked': bench.call('hostile-asked').data.get('tick', 0),\n"
    "    'anchor': [str(m) for m in bench.logs.loc[bench.logs['kind'] == 'app', 'message']\n"
    "               if 'anchor still at' in str(m)]}, default=str))"
)


def _open(page: Any, lab: str, name: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{lab}/lab/tree/{name}?reset", timeout=60_000)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()


def _report(page: Any) -> dict[str, Any]:
    """Run the last cell again once Run All has run it (the views have acted by now) and
    return what it printed then. A key press can be lost while Lab re-renders, so it is
    pressed again (bounded) until a second run's output shows."""
    import re

    from playwright.sync_api import Error, expect

    last = page.locator(".jp-Cell").nth(page.locator(".jp-Cell").count() - 1)
    expect(last.locator(".jp-OutputArea-output", has_text="REPORT#1")).to_have_count(
        1, timeout=60_000)
    again = last.locator(".jp-OutputArea-output", has_text=re.compile(r"REPORT#[2-9]"))
    for _ in range(5):
        last.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(again).to_have_count(1, timeout=15_000)
            break
        except (AssertionError, Error):
            continue
    text = again.inner_text()
    print(text, file=sys.stderr)
    found: dict[str, Any] = json.loads(re.split(r"REPORT#\d+", text, maxsplit=1)[1])
    return found


@pytest.mark.timeout(300)
def test_hostile_views_cannot_leave_their_frames() -> None:
    names = ("leading_nbsp", *NAVIGATIONS, "anchor")
    with counting_listener(LANDING) as hits:
        notebook = _notebook(names, hits.port, REPORT)
        with serve_lab(lambda served: _write(notebook, served / "escapes.ipynb"),
                       "toolbench-lab-escapes-") as lab:
            found = _drive_escapes(lab, names, hits)
        time.sleep(0.5)
        counted = {name: hits.paths(f"/leak-{name.split('_')[1]}") for name in NAVIGATIONS}
        print("ONE NAVIGATION SENT", counted, "UDP", hits.udp, "ALL", hits.tcp,
              file=sys.stderr)
        # Item 1: the leading U+00A0 did not switch the CSP off.
        assert hits.paths("/fetch-nbsp") == [] and hits.paths("/img-nbsp") == [], hits.tcp
        # Items 2-3: each navigation sent at most its one request, and the page it reached
        # was never answered: no beacon, no tick at the server or in the records.
        assert all(len(sent) <= 1 for sent in counted.values()), counted
        assert hits.paths("/answered") == [], hits.tcp
        assert found["ticks"] == [] and found["asked"] == 0, found
        for name in NAVIGATIONS:
            assert len(found["navigated"][name]) == 1, found
            direction, method, _, ok, error = found["navigated"][name][0]
            assert (direction, method, ok) == ("in", NAVIGATED, False), found
            assert "frame was removed" in error, found
        assert found["navigated"]["leading_nbsp"] == [] == found["navigated"]["anchor"]
        # Item 4: the anchor view is still its own document, at about:srcdoc#top.
        assert found["anchor"] == ["anchor still at about:srcdoc#top"], found
        assert hits.udp == [], hits.udp
        # A navigation cut short when its frame is removed (or Chromium's spare connection to
        # the host it navigates to) connects and sends nothing: no request line, no data.
        # Each navigation may leave at most two such; anything that sent a line must be its
        # one request.
        empty = [line for line in hits.tcp if line == ""]
        assert len(empty) <= 2 * len(NAVIGATIONS), hits.tcp
        other = [line for line in hits.tcp if line and not any(
            f"/leak-{n.split('_')[1]}" in line for n in NAVIGATIONS)]
        assert other == [], other


def _write(notebook: Any, path: Path) -> None:
    import nbformat

    nbformat.write(notebook, str(path))


def _drive_escapes(lab: str, names: tuple[str, ...], hits: Hits) -> dict[str, Any]:
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "escapes"):
                _open(page, lab, "escapes.ipynb")
                cells = {name: page.locator(".jp-Cell").nth(i + 1)
                         for i, name in enumerate(names)}
                for name in names:  # every view was shown
                    expect(cells[name].locator(".jp-OutputArea-output")).not_to_have_count(
                        0, timeout=60_000)
                for name in NAVIGATIONS:  # each navigating view ended, with a note
                    note = cells[name].locator(".toolbench-app-ended")
                    expect(note).to_have_count(1, timeout=30_000)
                    expect(note).to_contain_text("navigated away")
                    expect(cells[name].locator("iframe")).to_have_count(0)
                for name in ("leading_nbsp", "anchor"):  # these stay
                    frame = cells[name].locator("iframe")
                    expect(frame).to_have_count(1)
                    expect(frame.content_frame.locator("#out")).to_contain_text(
                        "tool-result", timeout=30_000)
                page.wait_for_timeout(2_000)  # the attacks have had their moment
                return _report(page)
        finally:
            browser.close()


@pytest.mark.timeout(300)
def test_a_12_mb_message_is_refused_in_the_front_end() -> None:
    names = ("big_message",)
    with counting_listener() as hits:
        notebook = _notebook(names, hits.port, REPORT)
        with serve_lab(lambda served: _write(notebook, served / "big.ipynb"),
                       "toolbench-lab-big-") as lab:
            found, closed = _drive_big(lab)
    assert closed == [], closed  # the kernel's websocket never closed
    refused = found["refused"]["big_message"]
    assert len(refused) == 1, found
    direction, _, id_, ok, error = refused[0]
    assert (direction, id_, ok) == ("in", "4242", False), found
    assert "4,194,304" in error and "12,5" in error, found
    assert found["ticks"] == [True] and found["asked"] == 1, found


def _drive_big(lab: str) -> tuple[dict[str, Any], list[str]]:
    from playwright.sync_api import expect, sync_playwright

    closed: list[str] = []

    def watch(ws: Any) -> None:
        if "/api/kernels/" in ws.url:
            ws.on("close", lambda _ws: closed.append(ws.url))

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("websocket", watch)
            with kept_on_failure(page, "big-message"):
                _open(page, lab, "big.ipynb")
                frame = page.locator(".jp-Cell").nth(1).locator("iframe")
                expect(frame).to_have_count(1, timeout=60_000)
                out = frame.content_frame.locator("#out")
                expect(out).to_contain_text("-32600", timeout=60_000)
                expect(out).to_contain_text("after the big one: tick answered",
                                            timeout=60_000)
                return _report(page), closed
        finally:
            browser.close()
