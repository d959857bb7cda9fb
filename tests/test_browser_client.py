"""The rest of the client in a real JupyterLab (headless Chromium): the explorer shows a
server's title and instructions (escaped: its ``<script>`` is text), marks a tool that runs
only as a task, and its prompt form offers the server's completions while a person types
key by key (the suggestions reach the page's datalist; the kernel is never blocked).

Uses ``serve_lab`` from tests/test_browser.py; the notebook is written here, naming the
stdio task server by its absolute path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, kept_on_failure, run_all, serve_lab

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason=f"Debian's chromium is not installed at {CHROMIUM}")]

SERVERS = Path(__file__).resolve().parent / "servers"
NAME = "client_rest.ipynb"

SOURCE = '''import sys
import mcp_types as types
import toolbench as tb
from mcp.server.mcpserver import MCPServer

srv = MCPServer("team", title="Team <b>desk</b>",
                instructions="Ask <script>alert('not run')</script> politely.")
TEAMS = {"Engineering": ["Alice", "Bob", "Charlie"], "Sales": ["David", "Eve"]}


@srv.prompt()
def promote(department: str, name: str) -> str:
    """Promote someone."""
    return f"Promote {name} in {department}"


@srv.completion()
async def complete(ref, argument, context):
    chosen = dict(context.arguments or {}) if context is not None else {}
    if argument.name == "department":
        return types.Completion(values=[d for d in TEAMS if d.startswith(argument.value)])
    return types.Completion(values=[n for n in TEAMS.get(chosen.get("department", ""), [])
                                    if n.startswith(argument.value)])


@srv.tool()
def hello(name: str) -> str:
    """Say hello."""
    return f"hello {name}"


bench = tb.Bench()
bench.connect("team", srv)
bench.connect("tasks", [sys.executable, TASK_SERVER])
app = bench.explore()
app'''


def _notebook(served: Path) -> None:
    source = SOURCE.replace("TASK_SERVER", json.dumps(str(SERVERS / "task_server.py")))
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {},
                     "outputs": [], "source": source}],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                      "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    (served / NAME).write_text(json.dumps(nb))


# Lab, a kernel, a stdio child and Chromium on a machine whose load average was ~20 on two
# cores: runs took 78-140 s there, so the project's 120 s default is too tight for this one.
@pytest.mark.timeout(300)
def test_explorer_shows_about_task_only_and_completions() -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with serve_lab(_notebook, "toolbench-lab-client-") as lab, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            with kept_on_failure(page, "explorer-client"):
                _drive(page, lab)
        finally:
            browser.close()


def _drive(page: Any, lab: str) -> None:
    from playwright.sync_api import expect

    dialogs = run_all(page, lab, NAME)

    explorer = page.locator(".toolbench-explorer")
    expect(explorer).to_be_visible(timeout=60_000)
    tool_list = explorer.locator(".widget-select select")
    expect(tool_list.locator("option")).to_have_count(3, timeout=30_000)

    # The server's title and instructions, escaped: its <script> is text, not markup.
    tool_list.select_option("team-hello")
    about = explorer.locator(".toolbench-server-about")
    expect(about).to_contain_text("Team <b>desk</b>", timeout=30_000)
    about.locator("summary").click()
    expect(about.locator(".toolbench-instructions")).to_contain_text(
        "Ask <script>alert('not run')</script> politely.")
    assert about.locator("script").count() == 0
    expect(explorer.locator(".toolbench-task-only")).to_have_count(0)

    # A tool that runs only as a task is marked.
    tool_list.select_option("tasks-report")
    expect(explorer.locator(".toolbench-task-only")).to_contain_text("task only",
                                                                      timeout=30_000)

    # The prompt form offers completions while a person types, key by key.
    explorer.get_by_role("tab", name="Prompts").click()
    choice = explorer.locator(".widget-dropdown select").last
    expect(choice.locator("option", has_text="team-promote")).to_have_count(1, timeout=30_000)
    choice.select_option(label=choice.locator("option", has_text="team-promote")
                         .inner_text())
    department = explorer.locator(".toolbench-field-department input")
    expect(department).to_be_visible(timeout=30_000)
    department.press_sequentially("En", delay=80)
    options = explorer.locator(".toolbench-field-department datalist option")
    expect(options).to_have_count(1, timeout=30_000)
    assert options.first.get_attribute("value") == "Engineering"
    # The rest of the word, key by key; the page must keep all of it (under load, ipywidgets'
    # front end can drop keystrokes when an echo and a throttled update cross: one run in
    # ten showed "E" after "En" was typed; this waits for the typed value to stand).
    department.press_sequentially("gineering", delay=80)
    department.press("Tab")
    expect(department).to_have_value("Engineering", timeout=10_000)
    expect(options).to_have_count(1, timeout=30_000)
    name = explorer.locator(".toolbench-field-name input")
    name.press_sequentially("B", delay=80)
    names = explorer.locator(".toolbench-field-name datalist option")
    expect(names).to_have_count(1, timeout=30_000)
    assert names.first.get_attribute("value") == "Bob"
    page.screenshot(path=str(ARTIFACTS / "explorer-completions.png"), full_page=True)
    assert dialogs == [], f"a script ran in the page: {dialogs}"
