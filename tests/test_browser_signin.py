"""The sign-in card in a real JupyterLab, driven through headless Chromium, both ways.

A cell runs a plain blocking sign-in against the bundled protected demo server (a real
authorization server and protected MCP server over HTTP on 127.0.0.1). The card appears in
that cell while it blocks; a person clicks the link, and:

(a) **loopback**: the new tab follows the authorization server's redirect to the kernel's
    loopback listener, which takes the code; the tab says it can be closed;
(b) **pasted**: the browser cannot reach the kernel's loopback (as on Binder, JupyterHub,
    SSH: here the redirect URI's port is held by a socket that never listens, so nothing
    answers there and the loopback listener cannot start), so the tab ends on an error
    page; the person copies its address and types it, key by key, into
    the card's box: a wrong-state address first (refused, the card says why), then the right
    one.

Either way the blocked cell completes, the call after sign-in succeeds, and the card says
"signed in" and disables itself. Modeled on tests/test_browser_ask.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, kept_on_failure, serve_lab

NAME = "signin-{way}.ipynb"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason=f"Debian's chromium is not installed at {CHROMIUM} "
                              "(apt-get install -y chromium; .ci/run installs it)"),
]

START = ("import socket, subprocess, sys\nimport toolbench as tb\n"
         "proc = subprocess.Popen([sys.executable, '-m', 'toolbench.demo.protected', '--port', "
         "'0'], stdout=subprocess.PIPE, text=True)\n"
         "URL = proc.stdout.readline().split()[1]\n"
         "print('READY', sys.prefix)")
BLOCKED = {  # the redirect URI's port: free (loopback), or held by a socket that never listens
    "loopback": "s = socket.socket(); s.bind(('127.0.0.1', 0)); PORT = s.getsockname()[1]; "
                "s.close()\n",
    "pasted": "s = socket.socket(); s.bind(('127.0.0.1', 0)); PORT = s.getsockname()[1]\n",
}
CONNECT = ("bench = tb.Bench(timeout=120)\n"
           "bench.connect('protected', URL, auth=tb.OAuth(timeout=120, store='memory', "
           "redirect_uri=f'http://127.0.0.1:{PORT}/callback'))\n"
           "print('CALLED', bench.call('protected-whoami').data)")
AFTER = "print('AFTER', 1 + 1)\nproc.terminate()"


def write_notebooks(folder: Path) -> None:
    import nbformat

    for way, blocked in BLOCKED.items():
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(s)
                          for s in (START, blocked + CONNECT, AFTER)]
        notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                           "display_name": "Python 3 (ipykernel)"}
        nbformat.write(notebook, str(folder / NAME.format(way=way)))


REPEAT = int(os.environ.get("TOOLBENCH_BROWSER_REPEAT", "1"))
"""Runs of each way (a load loop sets more; one Lab serves them all)."""


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with serve_lab(write_notebooks, "toolbench-lab-signin-") as url:
        yield url


SHUT_DOWN = """async () => {
  const found = document.cookie.match(/_xsrf=([^;]+)/);
  const headers = found ? {'X-XSRFToken': decodeURIComponent(found[1])} : {};
  const sessions = await (await fetch('/api/sessions')).json();
  for (const s of sessions) await fetch('/api/sessions/' + s.id, {method: 'DELETE', headers});
  return sessions.length;
}"""
"""Shut the page's sessions (and their kernels) down, as Lab's own requests do (with the
page's XSRF cookie)."""


@pytest.fixture
def fresh_lab(lab: str) -> Iterator[str]:
    """The module's Lab; each run ends with its kernels shut down (checked here), so the next
    run opens the notebook on a new kernel and no process outlives its test."""
    yield lab
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{lab}/api/kernels", timeout=10) as response:
            if not json.load(response):
                return
        time.sleep(0.25)
    raise AssertionError("the run's kernel was not shut down within 30 s")


@pytest.mark.timeout(300)  # the first run also starts Lab (up to 60 s on a busy box)
@pytest.mark.parametrize("run", range(REPEAT))
@pytest.mark.parametrize("way", ["loopback", "pasted"])
def test_signin_card_during_a_blocking_connect_in_jupyterlab(fresh_lab: str, way: str,
                                                             run: int) -> None:
    lab = fresh_lab
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            try:
                with kept_on_failure(page, f"signin-{way}"):
                    _drive(context, page, lab, way)
            finally:
                with contextlib.suppress(Exception):
                    page.evaluate(SHUT_DOWN)
        finally:
            browser.close()


def _drive(context: Any, page: Any, lab: str, way: str) -> None:
    from playwright.sync_api import expect

    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    blocked: list[str] = []  # where the new tab was sent back to (the redirect)
    context.on("request", lambda r: blocked.append(r.url) if "/callback?" in r.url else None)

    page.goto(f"{lab}/lab/tree/{NAME.format(way=way)}?reset", timeout=60_000)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    ready = page.locator(".jp-OutputArea-output", has_text="READY")
    expect(ready).to_be_visible(timeout=60_000)
    assert f"READY {sys.prefix}" in ready.inner_text()

    # The card appears while the cell is still blocked in its synchronous sign-in.
    card = page.locator(".toolbench-signin")
    expect(card).to_be_visible(timeout=60_000)
    expect(page.locator(".jp-InputPrompt", has_text="[*]").first).to_be_visible()
    expect(page.locator(".jp-OutputArea-output", has_text="CALLED")).to_have_count(0)
    link = card.locator("a[target=_blank]")
    expect(link).to_have_count(1)
    assert "/authorize?" in (link.get_attribute("href") or "")

    with context.expect_page(timeout=30_000) as opened:
        link.click()
    tab = opened.value
    if way == "loopback":
        expect(tab.get_by_text("You can close this tab")).to_be_visible(timeout=30_000)
        assert "/callback?" in tab.url
        expect(card).to_contain_text("signed in (your browser came back to toolbench)",
                                     timeout=60_000)
    else:
        for _ in range(300):
            if blocked:
                break
            tab.wait_for_timeout(100)
        assert blocked, "the tab was never sent back to the redirect URI"
        ended_on = blocked[0]
        assert "code=" in ended_on and "state=" in ended_on
        box = card.locator(".toolbench-signin-paste input")
        use = card.get_by_role("button", name="Use this address")
        wrong = ended_on.replace("state=", "state=x", 1)
        box.press_sequentially(wrong, delay=5)
        refused_box = box.element_handle()
        use.click()
        expect(card).to_contain_text("belongs to another sign-in", timeout=30_000)
        expect(card).to_contain_text("Paste again")
        # The card offers a fresh box for the next try: type once the refused one is gone.
        page.wait_for_function("el => !el.isConnected", arg=refused_box, timeout=30_000)
        expect(box).to_have_value("", timeout=30_000)  # no box keeps the code
        box.press_sequentially(ended_on, delay=5)
        use.click()
        expect(card).to_contain_text("signed in (the pasted address)", timeout=60_000)

    called = page.locator(".jp-OutputArea-output", has_text="CALLED")
    expect(called).to_be_visible(timeout=60_000)
    assert "demo-user" in called.inner_text()
    expect(page.locator(".jp-OutputArea-output", has_text="AFTER 2")).to_be_visible(
        timeout=60_000)
    expect(card.locator(".toolbench-signin-paste input")).to_be_disabled()
    expect(card.get_by_role("button", name="Use this address")).to_be_disabled()
    code = ended_code(blocked[0]) if blocked else None
    if code is not None:
        assert code not in card.inner_text()
    page.screenshot(path=str(ARTIFACTS / f"signin-{way}.png"), full_page=True)
    assert dialogs == [], f"a script ran in the page: {dialogs}"


def ended_code(url: str) -> str | None:
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(url).query).get("code", [None])[0]
