"""``elicitation="ask"`` and ``sampling="ask"`` in a real JupyterLab, driven through headless
Chromium, the way a person uses the forms.

Only a browser shows what the person's typing does: ipywidgets' front end sends a widget's
next change only after the kernel has answered the previous one (status idle parented to
it), so a kernel that answers wrongly keeps the first key and drops the rest while the page
shows everything. So this test types key by key (``press_sequentially``), edits a field a
second time, changes a dropdown and a checkbox more than once, picks several options of a
multi-select with Ctrl-clicks (one too many, then undone), corrects the values the form
rejected, and checks what the *server* received (its tool result), not only the screen:

- a cell blocked in a plain synchronous ``bench.call`` (the cell-side pump answers the
  widgets), for an elicitation form and a sampling reply;
- a cell in ``await bench.acall(...)`` (ipykernel dispatches the widgets itself), for both;
- the explorer's Call button: the form shows inside the explorer, not under the last cell.

The notebook is written here, to a temporary folder Lab serves; the server is the bundled
``beyond`` demo over real stdio. tests/test_browser.py's ``serve_lab`` runs Lab.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_browser import ARTIFACTS, CHROMIUM, ROOT, in_chromium, run_all, serve_lab

NAME = "ask.ipynb"
HINT = "<img src=x onerror=alert(1)>"
KEY_DELAY_MS = 25
"""Between keys, as a quick typist: each key is its own browser event."""


CHOSEN = ["hiking", "museums", "food"]
"""The activities a person ends with (in the order listed): a fourth is refused, then undone."""


def trip(destination: str) -> str:
    return (f"{{'action': 'accept', 'content': {{'destination': '{destination}', 'nights': 5, "
            f"'budget': 1234.5, 'travel_class': 'business', 'insurance': True, "
            f"'activities': {CHOSEN!r}}}}}")


pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason=f"Debian's chromium is not installed at {CHROMIUM} "
                              "(apt-get install -y chromium; .ci/run installs it)"),
]

CELLS = [
    # The child imports the same toolbench as the kernel (a stdio child gets a minimal
    # environment, so it would otherwise run whichever copy the venv installed).
    "import os, sys\nimport toolbench as tb\n"
    "bench = tb.Bench(elicitation='ask', sampling='ask', timeout=120)\n"
    "source = os.path.dirname(os.path.dirname(tb.__file__))\n"
    "bench.connect('beyond', [sys.executable, '-m', 'toolbench.demo.beyond'],\n"
    "              env={'PYTHONPATH': source})\n"
    "print('READY', sys.prefix, source)",
    # Plain synchronous calls that block their cell until a person answers.
    f"r = bench.call('beyond-ask_user', destination_hint={HINT!r})\nprint('ANSWER', r.data)",
    "r = bench.call('beyond-ask_llm', question='When should I visit Lima?')\n"
    "print('REPLY', repr(r.data['text']))",
    # The same, awaited: ipykernel runs the widget messages itself meanwhile.
    "r = await bench.acall('beyond-ask_user')\nprint('AWAITED', r.data)",
    "r = await bench.acall('beyond-ask_llm', question='And Cusco?')\n"
    "print('AREPLY', repr(r.data['text']))",
    "app = bench.explore()\napp",
    "print('LAST CELL')",  # ran after the explorer: a form must not land here
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


@pytest.mark.timeout(480)  # five forms typed key by key, and a Lab start, on a loaded machine
def test_a_person_types_corrects_and_submits_every_ask_form(lab: str) -> None:
    in_chromium("ask", lambda page: _drive(page, lab), frames_of=record_widget_frames)


def record_widget_frames(page: Any) -> list[str]:
    """A line per widget message and kernel status on the page's kernel websockets."""
    import json
    import struct
    import time

    lines: list[str] = []

    def summary(direction: str, payload: Any) -> None:
        if not isinstance(payload, bytes) or len(payload) < 8:
            return
        try:  # Lab's v1 kernel protocol: part count, offsets, channel, header, parent, ...
            count = struct.unpack_from("<Q", payload)[0]
            offsets = [*struct.unpack_from(f"<{count}Q", payload, 8), len(payload)]
            parts = [payload[offsets[i]:offsets[i + 1]] for i in range(count)]
            header, parent, _meta, content = (json.loads(p) for p in parts[1:5])
        except Exception:
            return
        kind = header.get("msg_type")
        if kind not in ("comm_msg", "status", "execute_request"):
            return
        data = content.get("data") or {}
        what = (content.get("execution_state") or data.get("method") or "") + " " + json.dumps(
            data.get("state") or data.get("content") or "")[:80]
        lines.append(f"{time.monotonic():.3f} {direction} {kind} {header.get('msg_id', '')[:8]}"
                     f" parent={(parent or {}).get('msg_id', '')[:8]} {what}")

    def watch(ws: Any) -> None:
        ws.on("framesent", lambda payload: summary("sent", payload))
        ws.on("framereceived", lambda payload: summary("recv", payload))

    page.on("websocket", watch)
    return lines


def _type(box: Any, text: str) -> None:
    box.press_sequentially(text, delay=KEY_DELAY_MS)


def _append(box: Any, text: str) -> None:
    """Come back to a box already edited (and sent) and type more at its end."""
    box.click()
    box.press("End")
    _type(box, text)


def fill_trip(page: Any, form: Any, destination: str) -> None:
    """Every widget kind of the trip form, each changed the way a person would, then a value
    the form rejects, its correction, and Accept."""
    from playwright.sync_api import expect

    # A dropdown and a checkbox changed more than once: each change after the first waits
    # in the page for the kernel's answer to the one before.
    travel = form.locator(".toolbench-field-travel_class select")
    travel.select_option(label="first")
    travel.select_option(label="business")
    # Issue 37, item 9: each of an optional boolean's two boxes says what it is.
    row = form.locator(".toolbench-field-insurance")
    expect(row.locator(".widget-checkbox", has_text="true")).to_have_count(1)
    expect(row.locator(".widget-checkbox", has_text="send this field")).to_have_count(1)
    expect(row.get_by_label("true", exact=True)).to_have_count(1)
    insurance = form.locator(".toolbench-field-insurance input[type=checkbox]").first
    insurance.check()
    insurance.uncheck()
    insurance.check()
    # Text, sent when the box loses focus, then edited again.
    where = form.locator(".toolbench-field-destination input")
    _type(where, destination[:2])
    where.press("Tab")
    _append(where, destination[2:])
    nights = form.locator(".toolbench-field-nights input")
    expect(nights).to_have_value("")  # empty, not a 0 that breaks the minimum
    expect(nights).to_have_attribute("placeholder", "integer, ≥ 1, ≤ 30")
    _type(nights, "-3")
    budget = form.locator(".toolbench-field-budget input")
    _type(budget, "1234")
    budget.press("Tab")
    _append(budget, ".5")
    # A multi-select (MCP's titled options): a click, then Ctrl-clicks for more; one too many.
    activities = form.locator(".toolbench-field-activities")
    expect(activities).to_contain_text("pick 1–3")
    choose = activities.locator("select")
    choose.locator("option", has_text="Hiking").click()
    for title in ("Museums", "Food and markets", "Beaches"):
        choose.locator("option", has_text=title).click(modifiers=["Control"])
    accept = form.get_by_role("button", name="Accept")
    accept.click()
    # Rejected here, with the rule; nothing sent; the person corrects both and accepts again.
    expect(form.locator(".toolbench-field-nights")).to_contain_text(
        "-3 is less than the minimum of 1", timeout=30_000)
    expect(activities).to_contain_text("4 chosen: choose at most 3")
    expect(form).to_contain_text("nothing was sent")
    nights.click()
    nights.press("End")
    nights.press("Backspace")
    nights.press("Backspace")
    _type(nights, "5")
    choose.locator("option", has_text="Beaches").click(modifiers=["Control"])  # undone
    page.screenshot(path=str(ARTIFACTS / "ask-form.png"), full_page=True)
    accept.click()


def reply(form: Any, text: str) -> None:
    """A sampling reply typed key by key, in two goes (sent on blur, then edited again)."""
    box = form.locator("textarea")
    cut = text.index(" ", 3)
    _type(box, text[:cut])
    box.press("Tab")
    _append(box, text[cut:])
    form.get_by_role("button", name="Send").click()
    from playwright.sync_api import expect

    expect(form).to_contain_text("sent", timeout=60_000)


def _drive(page: Any, lab: str) -> None:
    from playwright.sync_api import expect

    dialogs = run_all(page, lab, NAME)

    cells = page.locator(".jp-Notebook .jp-Cell")
    def output(text: str) -> Any:  # printed text (not a form that mentions the word)
        return page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter."
                            "stdout']", has_text=text)

    ready = output("READY")
    expect(ready).to_be_visible(timeout=60_000)
    # The venv's kernel, not another, running the toolbench under test.
    assert f"READY {sys.prefix} {ROOT}" in ready.inner_text()

    # 1. A blocking bench.call: the form appears in its cell while the cell still runs.
    form = cells.nth(1).locator(".toolbench-ask")
    expect(form).to_be_visible(timeout=60_000)
    # (Not the status bar: it follows control-channel replies too, and may read Idle.)
    expect(cells.nth(1).locator(".jp-InputPrompt", has_text="[*]")).to_be_visible()
    expect(output("ANSWER")).to_have_count(0)
    expect(form).to_contain_text(HINT)  # the server's markup is text, not an element
    assert form.locator("img").count() == 0
    fill_trip(page, form, "Lima")
    expect(form).to_contain_text("accepted", timeout=60_000)
    expect(form.get_by_role("button", name="Accept")).to_be_disabled()
    expect(output("ANSWER")).to_be_visible(timeout=60_000)
    assert f"ANSWER {trip('Lima')}" in output("ANSWER").inner_text()

    # 2. A blocking sampling request: the whole reply reaches the server.
    form = cells.nth(2).locator(".toolbench-ask")
    expect(form).to_be_visible(timeout=60_000)
    expect(form).to_contain_text("When should I visit Lima?")
    reply(form, "Go in May.")
    expect(output("REPLY")).to_be_visible(timeout=60_000)
    assert "REPLY 'Go in May.'" in output("REPLY").inner_text()

    # 3. and 4. The same forms in awaiting cells.
    form = cells.nth(3).locator(".toolbench-ask")
    expect(form).to_be_visible(timeout=60_000)
    fill_trip(page, form, "Cusco")
    expect(form).to_contain_text("accepted", timeout=60_000)
    expect(output("AWAITED")).to_be_visible(timeout=60_000)
    assert f"AWAITED {trip('Cusco')}" in output("AWAITED").inner_text()
    form = cells.nth(4).locator(".toolbench-ask")
    expect(form).to_be_visible(timeout=60_000)
    reply(form, "Go in June, by train.")
    expect(output("AREPLY")).to_be_visible(timeout=60_000)
    assert "AREPLY 'Go in June, by train.'" in output("AREPLY").inner_text()

    # 5. The explorer's Call button: the form shows inside the explorer, not under the last
    # cell that ran (the one below it), and the result card shows what the server got.
    expect(output("LAST CELL")).to_be_visible(timeout=60_000)
    explorer = page.locator(".toolbench-explorer")
    expect(explorer).to_be_visible(timeout=60_000)
    explorer.locator(".widget-select select").select_option("beyond-ask_user")
    tool_form = explorer.locator(".toolbench-form-beyond-ask_user")
    expect(tool_form).to_be_visible(timeout=30_000)
    _type(tool_form.locator(".toolbench-field-destination_hint input"), "Arequipa")
    explorer.get_by_role("button", name="Call").click()
    form = explorer.locator(".toolbench-explorer-ask .toolbench-ask")
    expect(form).to_be_visible(timeout=60_000)
    expect(form).to_contain_text("suggestion: Arequipa")
    expect(page.locator(".toolbench-ask")).to_have_count(5)  # 4 in their cells, 1 here
    expect(cells.nth(6).locator(".toolbench-ask")).to_have_count(0)
    fill_trip(page, form, "Arequipa")
    result = explorer.locator(".toolbench-result")
    expect(result).to_contain_text('"destination": "Arequipa"', timeout=60_000)
    for shown in ('"nights": 5', '"budget": 1234.5', '"travel_class": "business"',
                  '"insurance": true', '"activities"', *(f'"{a}"' for a in CHOSEN)):
        expect(result).to_contain_text(shown)
    expect(result).not_to_contain_text('"beaches"')
    expect(explorer.locator(".toolbench-explorer-ask .toolbench-ask")).to_have_count(0)
    expect(explorer.get_by_role("button", name="Call")).to_be_enabled()
    page.screenshot(path=str(ARTIFACTS / "ask-answered.png"), full_page=True)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=30_000)
    assert dialogs == [], f"a script ran in the page: {dialogs}"
