"""Shared fixtures: every test must leave no child process and no open connection behind."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import psutil
import pytest


def _children() -> set[int]:
    try:
        return {p.pid for p in psutil.Process(os.getpid()).children(recursive=True)}
    except psutil.Error:
        return set()


@pytest.fixture(autouse=True)
def no_leaked_children() -> Iterator[None]:
    """Fail a test that leaves a child process running (a stdio server it forgot to close)."""
    before = _children()
    yield
    deadline = time.monotonic() + 5.0
    leaked = _children() - before
    while leaked and time.monotonic() < deadline:
        time.sleep(0.05)
        leaked = {pid for pid in leaked if psutil.pid_exists(pid)} & _children()
    if leaked:
        names = []
        for pid in leaked:
            try:
                names.append(" ".join(psutil.Process(pid).cmdline())[:120])
            except psutil.Error:
                names.append(str(pid))
        for pid in leaked:  # clean up so one leak does not cascade
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
        pytest.fail(f"test left {len(leaked)} child process(es) running: {names}")


@pytest.fixture(scope="session", autouse=True)
def jsonschema_imported() -> None:
    """Import jsonschema once, before any test: seconds on a busy machine (see
    toolbench._preload), which would otherwise land in whichever test calls first, and make
    its timing depend on test order. tests/test_preload.py covers a fresh process."""
    from toolbench import _preload

    _preload.start().result(timeout=_preload.WAIT_S)
