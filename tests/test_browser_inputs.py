"""VS Code ``${input:id}`` asked in a real JupyterLab (headless Chromium), typed the way a
person types: key by key.

A cell runs a plain blocking ``bench.load_config`` on a VS Code ``mcp.json`` (written here to
the folder Lab serves) whose two servers use two inputs: a password (``"password": true``)
and a plain one, in a stdio server's ``env`` and ``args`` and an HTTP server's ``headers``.
Each input is asked once, in the cell that waits. The person types a few keys into the
password box, deletes them, presses Use on the empty box (refused, with the input named,
nothing sent), types the secret, and presses Use; then the plain one. Both servers connect,
and a probe tool on each answers digests of what it was started with, so the test sees the
values arrived without any result holding them. The password box is masked and emptied once
read, and no page text, page HTML, box, cell output, ``repr`` of the bench, servers table or
records holds the secret. A second config's form is cancelled: the cell ends (no hang) with a
``ConfigError`` naming the input, and nothing of that config started.

``tests/test_ask_inputs.py`` plays the same through the kernel's widget messages; only a
browser shows that typed keys, a blur and a click reach the card in that order.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serving import SERVERS, served_mcp
from test_browser import (
    ARTIFACTS,
    BROWSER_MARKS,
    ROOT,
    in_chromium,
    run_all,
    serve_lab,
    write_cells,
)
from test_browser_ask import record_widget_frames

NAME = "inputs.ipynb"
PROBE = str(SERVERS / "input_probe_server.py")
SECRET = "pw-4471-browser-typed-secret"
REGION = "eu-west-3"
CANCELLED = "zq-cancelled-token-81"
"""Typed into the cancelled form's password box, in part: it must not stay anywhere."""
KEY_DELAY_MS = 25
"""Between keys, as a quick typist: each key is its own browser event."""

pytestmark = BROWSER_MARKS


def digest(value: str) -> str:
    """As ``servers/input_probe_server.py`` reports a value it was given."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def vscode_config(url: str) -> dict[str, Any]:
    """A VS Code ``mcp.json``: a password input and a plain one, each used by both servers
    (asked in the order the servers use them: the token first)."""
    return {
        "inputs": [
            {"type": "promptString", "id": "probe-token", "password": True,
             "description": "Token for the <b>probe</b> servers"},
            {"type": "promptString", "id": "region", "description": "Region to use"}],
        "servers": {
            "local": {"type": "stdio", "command": sys.executable,
                      "env": {"PROBE_TOKEN": "${input:probe-token}"},
                      "args": [PROBE, "--region", "${input:region}"]},
            "remote": {"type": "http", "url": url,
                       "headers": {"Authorization": "Bearer ${input:probe-token}",
                                   "X-Probe-Region": "${input:region}"}}}}


CANCEL_CONFIG = {
    "inputs": [{"type": "promptString", "id": "other-token", "password": True,
                "description": "Token for the other server"}],
    "servers": {"other": {"command": sys.executable, "args": [PROBE],
                          "env": {"PROBE_TOKEN": "${input:other-token}"}}}}

CELLS = [
    "import sys\nimport toolbench as tb\n"
    "bench = tb.Bench(timeout=60, connect_timeout=90)\nprint('READY', sys.prefix, tb.__file__)",
    "table = bench.load_config('.vscode/mcp.json')\n"
    "print('STATUS', sorted(zip(table['name'], table['status'])))",
    "local, remote = bench.call('local-probe').data, bench.call('remote-probe').data\n"
    "print('PROBED', local['env'], local['args'], remote['headers'])",
    # Everything a person may look at, in the page: the secret must be in none of it.
    "print('SHOWN', repr(bench), repr(bench.servers), repr(bench.records))\n"
    "display(bench.servers, bench.records)",
    "try:\n    bench.load_config('cancel.json')\n"
    "finally:\n    print('AFTER', sorted(bench.servers['name']))",
]


@pytest.fixture
def lab() -> Iterator[str]:
    """A JupyterLab serving the notebook and both configs (the HTTP probe server runs for
    the test's length); yields Lab's URL."""
    with served_mcp("input_probe_server.py", "streamable-http") as (url, _proc):
        def put(served: Path) -> None:
            (served / ".vscode").mkdir()
            (served / ".vscode" / "mcp.json").write_text(json.dumps(vscode_config(url)))
            (served / "cancel.json").write_text(json.dumps(CANCEL_CONFIG))
            write_cells(served / NAME, CELLS)

        with serve_lab(put, "toolbench-lab-inputs-") as lab_url:
            yield lab_url


@pytest.mark.timeout(300)
def test_a_person_types_vscode_inputs_into_the_ask_form(lab: str) -> None:
    in_chromium("inputs", lambda page: _drive(page, lab), frames_of=record_widget_frames)


def _keys(page: Any, box: Any, text: str) -> None:
    """Focus ``box`` and type ``text`` one key at a time."""
    box.click()
    page.keyboard.type(text, delay=KEY_DELAY_MS)


def _drive(page: Any, lab: str) -> None:
    from playwright.sync_api import expect

    dialogs = run_all(page, lab, NAME)

    cells = page.locator(".jp-Notebook .jp-Cell")

    def output(cell: int) -> Any:  # the cell's printed text (not a form, not a table)
        return cells.nth(cell).locator(".jp-OutputArea-output[data-mime-type='application/"
                                       "vnd.jupyter.stdout']")

    expect(output(0)).to_be_visible(timeout=60_000)
    # The venv's kernel, running the toolbench under test.
    assert f"READY {sys.prefix} {ROOT}" in output(0).inner_text()

    # 1. The password input, asked in the cell that waits, in a masked box.
    token = cells.nth(1).locator(".toolbench-input").nth(0)
    expect(token).to_be_visible(timeout=60_000)
    expect(cells.nth(1).locator(".jp-InputPrompt", has_text="[*]")).to_be_visible()
    expect(token).to_contain_text("Token for the <b>probe</b> servers")  # text, not markup
    expect(token).to_contain_text("hidden, never kept")
    box = token.locator(".toolbench-input-value input")
    expect(box).to_have_count(1)
    expect(box).to_have_attribute("type", "password")
    # A few keys, sent on blur, then deleted key by key: Use on the empty box is refused.
    _keys(page, box, "oops")
    box.press("Tab")
    box.click()
    box.press("End")
    for _ in "oops":
        page.keyboard.press("Backspace")
    use = token.get_by_role("button", name="Use")
    use.click()
    expect(token).to_contain_text("input 'probe-token' needs a value", timeout=30_000)
    expect(token).to_contain_text("nothing was sent")
    expect(use).to_be_enabled()
    expect(cells.nth(1).locator(".toolbench-input")).to_have_count(1)  # not on to the next
    # Corrected: the whole secret, key by key, then Use.
    _keys(page, box, SECRET)
    use.click()
    expect(token).to_contain_text("received (hidden)", timeout=30_000)
    expect(box).to_have_value("")  # emptied by the kernel once read
    expect(box).to_be_disabled()
    expect(token).not_to_contain_text("needs a value")

    # 2. The plain input, asked once for both servers: a text box.
    region = cells.nth(1).locator(".toolbench-input").nth(1)
    expect(region).to_be_visible(timeout=60_000)
    expect(region).to_contain_text("Region to use")
    plain = region.locator(".toolbench-input-value input")
    expect(plain).to_have_attribute("type", "text")
    _keys(page, plain, REGION)
    region.get_by_role("button", name="Use").click()
    expect(region).to_contain_text("received", timeout=30_000)
    expect(cells.nth(1).locator(".toolbench-input")).to_have_count(2)  # each asked once

    # 3. Both servers connected, with the values (digests only come back).
    expect(output(1)).to_be_visible(timeout=90_000)
    assert "STATUS [('local', 'connected'), ('remote', 'connected')]" in \
        output(1).inner_text()
    expect(output(2)).to_be_visible(timeout=60_000)
    probed = output(2).inner_text()
    assert f"{{'PROBE_TOKEN': '{digest(SECRET)}'}}" in probed, probed  # stdio env
    assert f"['{digest('--region')}', '{digest(REGION)}']" in probed, probed  # stdio args
    assert (f"{{'authorization': '{digest('Bearer ' + SECRET)}', "
            f"'x-probe-region': '{digest(REGION)}'}}") in probed, probed  # HTTP headers
    expect(output(3)).to_be_visible(timeout=60_000)
    expect(output(3)).to_contain_text("local-probe")  # the records are there

    # 4. A cancelled form: the cell ends with a clear error, and nothing of it started.
    other = cells.nth(4).locator(".toolbench-input")
    expect(other).to_be_visible(timeout=60_000)
    expect(other).to_contain_text("Token for the other server")
    other_box = other.locator(".toolbench-input-value input")
    _keys(page, other_box, CANCELLED[:8])
    other.get_by_role("button", name="Cancel").click()
    expect(other).to_contain_text("cancelled", timeout=30_000)
    expect(other_box).to_have_value("")
    failure = cells.nth(4).locator(".jp-OutputArea-output", has_text="ConfigError")
    expect(failure).to_be_visible(timeout=60_000)
    expect(failure).to_contain_text("the person cancelled input 'other-token'")
    expect(failure).to_contain_text("nothing was started")
    expect(output(4)).to_contain_text("AFTER ['local', 'remote']")
    expect(cells.nth(4).locator(".jp-InputPrompt", has_text="[*]")).to_have_count(0)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "inputs-answered.png"), full_page=True)

    # 5. The secrets are nowhere a person or the page can read them.
    boxes = page.eval_on_selector_all("input, textarea", "els => els.map(e => e.value)")
    shown = page.locator("body").inner_text()
    for secret in (SECRET, CANCELLED[:8]):
        assert secret not in shown
        assert secret not in page.content()
        assert all(secret not in value for value in boxes), boxes
    # The plain input is a ${VAR}-like value too: never in servers, records or a repr.
    assert REGION not in shown
    assert dialogs == [], f"a script ran in the page: {dialogs}"
