"""The explorer in a real JupyterLab, driven through headless Chromium.

Python-level widget tests cannot show that the front end renders the widgets, that a click
reaches the kernel, or that a result posted from toolbench's loop thread gets back to the
page. This runs Lab on a temporary copy of tests/notebooks/explorer.ipynb and does what a
user does: Run All Cells from the menu, pick a tool, fill the form, press Call.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "tests" / "notebooks" / "explorer.ipynb"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason=f"Debian's chromium is not installed at {CHROMIUM} "
                              "(apt-get install -y chromium; .ci/run installs it)"),
]
"""Every browser test module's ``pytestmark``."""
pytestmark = BROWSER_MARKS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n"
                               f"{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise TimeoutError(f"jupyter lab did not answer {url} within {timeout} s:\n"
                       f"{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop Lab (it shuts its kernels down on SIGTERM); kill whatever is left, bounded."""
    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        family = []
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    _gone, alive = psutil.wait_procs(family, timeout=10)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=5)


@contextlib.contextmanager
def serve_lab(put_notebook: Callable[[Path], None], prefix: str) -> Iterator[str]:
    """A JupyterLab on 127.0.0.1 serving a temporary folder that ``put_notebook`` fills;
    yields its URL. Its settings, runtime and data folders are private to it (no user-level
    kernelspec can shadow the venv's), and it is stopped and removed on exit."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    served = tmp / "served"
    served.mkdir()
    put_notebook(served)
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = dict(os.environ)
    env.update({
        "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    port = _free_port()
    log = tmp / "lab.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
             "--ip=127.0.0.1", f"--port={port}", "--IdentityProvider.token=",
             "--ServerApp.password=", f"--ServerApp.root_dir={served}"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=served,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_ready(f"{url}/api/status", proc, log, timeout=60)
        yield url
    finally:
        _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def lab() -> Iterator[str]:
    """A JupyterLab serving a temporary copy of the notebook; yields its URL."""
    with serve_lab(lambda served: shutil.copy(NOTEBOOK, served / NOTEBOOK.name),
                   "toolbench-lab-") as url:
        yield url


@contextlib.contextmanager
def kept_on_failure(page: Any, name: str) -> Iterator[None]:
    """On failure, save a screenshot and the page's HTML under test-artifacts/ (CI keeps it)."""
    try:
        yield
    except BaseException:
        ARTIFACTS.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        with contextlib.suppress(Exception):
            page.screenshot(path=str(ARTIFACTS / f"{name}-failed-{stamp}.png"), full_page=True)
        with contextlib.suppress(Exception):
            (ARTIFACTS / f"{name}-failed-{stamp}.html").write_text(page.content())
        raise


def in_chromium(name: str, drive: Callable[[Any], None],
                frames_of: Callable[[Any], list[str]] | None = None) -> None:
    """``drive`` a page of a fresh headless Chromium; on failure the page is kept
    (:func:`kept_on_failure`), and with ``frames_of`` the lines it recorded from the page too
    (``test-artifacts/<name>-failed-frames.txt``: a lost key told from a slow one)."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            frames = frames_of(page) if frames_of is not None else None
            try:
                with kept_on_failure(page, name):
                    drive(page)
            except BaseException:
                if frames is not None:
                    (ARTIFACTS / f"{name}-failed-frames.txt").write_text("\n".join(frames))
                raise
        finally:
            browser.close()


def write_cells(path: Path, sources: list[str]) -> None:
    """A notebook of these code cells at ``path``, on the venv's ``python3`` kernel."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                       "language": "python"}
    nbformat.write(notebook, str(path))


def run_all(page: Any, lab: str, notebook: str) -> list[str]:
    """Open ``notebook`` in the Lab at ``lab``, wait for its kernel to be idle and Run All
    Cells; returns the list that every dialog the page opens is noted in (and dismissed):
    a dialog means a script ran in the page."""
    from playwright.sync_api import expect

    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{lab}/lab/tree/{notebook}?reset", timeout=60_000)
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    return dialogs


def test_explorer_in_jupyterlab(lab: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "explorer"):
                _drive_explorer(page, lab)
        finally:
            browser.close()


def _drive_explorer(page: Any, lab: str) -> None:
    from playwright.sync_api import expect

    dialogs = run_all(page, lab, NOTEBOOK.name)

    # The kernel is the venv's python, not some other kernelspec on the machine.
    printed = page.locator(".jp-OutputArea-output", has_text="kernel prefix:")
    expect(printed).to_be_visible(timeout=60_000)
    assert f"kernel prefix: {sys.prefix}\n" in printed.inner_text() + "\n"

    # The servers table rendered, and the explorer with its tool list.
    explorer = page.locator(".toolbench-explorer")
    expect(explorer).to_be_visible(timeout=60_000)
    expect(page.locator(".jp-OutputArea-output", has_text="in-process").first).to_be_visible()
    tool_list = explorer.locator(".widget-select select")
    expect(tool_list.locator("option")).to_have_count(3)

    # A Result shows as toolbench's card (server, latency, content), not as Lab's JSON tree:
    # Lab ranks application/json above text/html, so the bundle must not offer it.
    card = page.locator(".jp-OutputArea-output .toolbench-result", has_text="mem/add")
    expect(card).to_be_visible()
    expect(card).to_contain_text(" ms")
    expect(page.locator(".jp-RenderedJSON")).to_have_count(0)

    list_width = tool_list.bounding_box()["width"]
    tool_list.select_option("mem-greet")

    # The description is shown as text: the server's <script> is not markup.
    description = explorer.locator(".toolbench-description")
    expect(description).to_contain_text("<script>alert('not run')</script>")
    assert description.locator("script").count() == 0

    # Wait for mem-greet's own form: alt-greet's form (shown first) has the same fields, so
    # filling "the name field" before the swap would type into a form that is going away.
    form = explorer.locator(".toolbench-form-mem-greet")
    expect(form).to_be_visible(timeout=30_000)
    form.locator(".toolbench-field-name input").fill("Ada")
    times = form.locator(".toolbench-field-times input")
    times.fill("2")
    times.press("Tab")  # a form's text box sends its value on blur
    explorer.get_by_role("button", name="Call").click()

    result = explorer.locator(".toolbench-result")
    expect(result).to_contain_text("Hello, Ada! Hello, Ada!", timeout=30_000)
    expect(explorer.get_by_role("button", name="Call")).to_be_enabled()
    expect(explorer.locator(".toolbench-busy")).to_have_count(0)

    # The History tab lists the call that was just made.
    explorer.get_by_role("tab", name="History").click()
    expect(explorer.locator(".toolbench-table").first).to_contain_text("mem-greet")
    explorer.get_by_role("tab", name="Call").click()
    page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)

    # Compare runs the same form on both servers offering "greet" and flags the split.
    explorer.get_by_role("tab", name="Compare").click()
    explorer.get_by_role("button", name="Compare").click()
    compare = explorer.locator(".toolbench-compare")
    expect(compare).to_contain_text("Hi Ada Hi Ada", timeout=30_000)
    expect(compare).to_contain_text("Hello, Ada! Hello, Ada!")
    expect(explorer).to_contain_text("servers disagree on 1 of 1 case")
    page.screenshot(path=str(ARTIFACTS / "explorer-compare.png"), full_page=True)
    # The tool list keeps its width whatever the results beside it hold (a long answer
    # without spaces once squeezed it to a quarter of its width).
    assert abs(tool_list.bounding_box()["width"] - list_width) < 1, list_width
    explorer.get_by_role("tab", name="Call").click()
    form.locator(".toolbench-field-name input").fill("W" * 300)
    explorer.get_by_role("button", name="Call").click()
    expect(result).to_contain_text("W" * 100, timeout=30_000)
    assert abs(tool_list.bounding_box()["width"] - list_width) < 1, list_width
    explorer.get_by_role("tab", name="History").click()
    history = explorer.locator(".toolbench-table", has_text="calls of mem-greet (newest first)")
    expect(history).to_contain_text("W" * 40)
    assert abs(tool_list.bounding_box()["width"] - list_width) < 1, list_width
    page.screenshot(path=str(ARTIFACTS / "explorer-history.png"), full_page=True)
    assert dialogs == [], f"a script ran in the page: {dialogs}"
