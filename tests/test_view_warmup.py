"""The first MCP App view's warm-up (``toolbench._notebook.view_warmup``, issue 46): asked by
``Apps`` when a server with views connects, done once per kernel, never without a front end,
never raising, carrying nothing of the server's. The browser side (the hidden frame, the
first view after it) is in ``test_browser_view_warmup.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

import toolbench as tb
from tests.test_bridge import app_server
from toolbench._bench.apps import views as views_module
from toolbench._notebook import view_warmup as warm
from toolbench._notebook.apps.view import ViewWarmUp

ROOT = Path(__file__).resolve().parents[1]


def plain_server() -> MCPServer:
    server = MCPServer("plain")

    @server.tool(meta={"note": "not a view"})
    def echo(text: str) -> str:
        """Says it back."""
        return text

    return server


@pytest.fixture
def asked() -> Iterator[list[str]]:
    """Every time ``Apps`` asks the registered warmer, in order (the real warmer is put
    back afterwards)."""
    calls: list[str] = []
    views_module.register_view_warmer(lambda: calls.append(threading.current_thread().name))
    try:
        yield calls
    finally:
        views_module.register_view_warmer(warm.warm_views)


@pytest.fixture
def a_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for a Jupyter kernel's IPython: ``get_ipython()`` is a kernel's shell."""
    class ZMQInteractiveShell:  # how running_kernel() knows a kernel's shell: by its class
        kernel = object()

    shell = ZMQInteractiveShell()
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)


PLAIN_PROCESS = """
import sys, threading
import toolbench as tb
from tests.test_bridge import app_server
from toolbench._notebook.view_warmup import THREAD_NAME, warm_views
with tb.Bench() as bench:
    bench.connect("app", app_server(), protocol_mode="legacy")
    bench.connect("app2", app_server(), protocol_mode="legacy")
    threads = [t.name for t in threading.enumerate() if t.name == THREAD_NAME]
    print(repr(warm_views.state), "anywidget" in sys.modules, threads)
    print(type(bench.call("app-clock").app).__name__)  # the first view imports it, as before
"""


@pytest.mark.slow
def test_nothing_is_warmed_in_a_plain_python_process() -> None:
    """No kernel, no front end: a server with views connects and the warm-up does nothing,
    not even anywidget's import (the first ``result.app`` is what imports it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", PLAIN_PROCESS], capture_output=True,
                         text=True, timeout=90, env=env, cwd=ROOT, check=True)
    assert out.stdout.split("\n")[:2] == ["'no front end' False []", "AppView"], out.stdout


def test_the_warmer_is_asked_once_for_the_first_server_with_views(asked: list[str]) -> None:
    with tb.Bench() as bench:
        bench.connect("plain", plain_server())
        assert asked == []  # no tool declares a view
        bench.connect("app", app_server(), protocol_mode="legacy")
        assert len(asked) == 1
        assert asked[0] != threading.current_thread().name  # on toolbench's loop
        bench.connect("app2", app_server(), protocol_mode="legacy")
        bench.disconnect("app")
        bench.connect("app", app_server(), protocol_mode="legacy")  # anew, same name
        assert len(asked) == 1  # once is enough
    with tb.Bench() as other:  # each bench asks; the warmer itself runs once per kernel
        other.connect("app", app_server(), protocol_mode="legacy")
        assert len(asked) == 2


def test_nothing_is_asked_with_apps_off(asked: list[str]) -> None:
    with tb.Bench(apps=False) as bench:
        bench.connect("app", app_server(), protocol_mode="legacy")
    assert asked == []


def test_a_warmer_that_raises_never_fails_the_connect() -> None:
    def broken() -> None:
        raise RuntimeError("boom")

    views_module.register_view_warmer(broken)
    try:
        with tb.Bench() as bench:
            bench.connect("app", app_server(), protocol_mode="legacy")
            assert bench.call("app-clock").text == "12:00 UTC"
    finally:
        views_module.register_view_warmer(warm.warm_views)


def test_without_a_kernel_the_warm_up_is_skipped_and_stays_skipped() -> None:
    warm_up = warm.WarmUp()
    warm_up()
    warm_up()
    assert warm_up.state == "no front end" and warm_up.done.is_set()
    assert warm_up.widget is None


def test_in_a_kernel_one_hidden_widget_is_made_once(a_kernel: None) -> None:
    warm_up = warm.WarmUp()
    warm_up()
    warm_up()  # a second server with views: nothing more
    assert warm_up.done.wait(30)
    threads = [t for t in threading.enumerate() if t.name == warm.THREAD_NAME]
    assert len(threads) <= 1  # one thread, whether or not it has returned yet
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()
    assert warm_up.state == "warm"
    widget = warm_up.widget
    assert isinstance(widget, ViewWarmUp) and widget.warm is True
    assert "shows nothing" in repr(widget)
    # Only toolbench's own module and the flag travel: nothing a server sent.
    state = widget.get_state()
    assert state["_esm"] == (ROOT / "toolbench" / "_notebook" / "apps" / "view.js").read_text()
    assert {k for k in state if not k.startswith("_")} <= {"warm", "layout", "tabbable",
                                                           "tooltip"}
    widget.close()


def test_a_failed_warm_up_says_why_and_raises_nothing(a_kernel: None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from toolbench._notebook.apps import view

    def unmakeable(*_args: Any) -> None:
        raise OSError("no comm")

    monkeypatch.setattr(view, "ViewWarmUp", unmakeable)
    warm_up = warm.WarmUp()
    warm_up()
    assert warm_up.done.wait(30)
    assert warm_up.state == "failed: OSError" and warm_up.widget is None


def test_the_front_end_test_never_imports_ipython(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert warm.running_kernel() is None
    assert "IPython" not in sys.modules
