"""Shared fixtures: every test must leave no child process and no open connection behind."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

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
    toolbench._core.schema.preload), which would otherwise land in whichever test calls first, and
    make
    its timing depend on test order. tests/test_preload.py covers a fresh process."""
    from toolbench._core.schema import preload as _preload

    _preload.start().result(timeout=_preload.WAIT_S)


_SPAWNS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty",
                     "os.system"})
_spawned: list[str] = []


def _note_spawns(event: str, args: tuple[object, ...]) -> None:
    if event in _SPAWNS:
        _spawned.append(f"{event} {str(args[0])[:100] if args else ''}")


sys.addaudithook(_note_spawns)  # every thread, the shared loop's included


@pytest.fixture(autouse=True)
def slow_if_it_starts_a_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that starts a process (a stdio server, a kernel, a browser) must be marked
    ``slow``, so that ``pytest -m "not slow"`` stays the fast inner loop the README promises."""
    _spawned.clear()
    yield
    if _spawned and request.node.get_closest_marker("slow") is None:
        if os.environ.get("TOOLBENCH_LIST_SPAWNS"):
            with open(os.environ["TOOLBENCH_LIST_SPAWNS"], "a") as f:
                f.write(f"{request.node.nodeid}\t{_spawned[0]}\n")
        else:
            pytest.fail(f"it started a process ({_spawned[0]}) but is not marked "
                        "@pytest.mark.slow", pytrace=False)


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """A SIGINT raises ``KeyboardInterrupt`` during the test, as in a terminal or a kernel.

    A process started in the background by a shell without job control (``.ci/run ... &``)
    inherits SIGINT *ignored* (POSIX), and Python then leaves it ignored: the tests that
    interrupt themselves would wait out their call instead (a CI run found it: a 60 s
    connect). So they set Python's own handler for their duration.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def dask_resource_tracker() -> None:
    """multiprocessing's resource tracker, which Dask's nannies start once and which lives as
    long as this process: started before any cluster test's own fixtures (a wider scope sets
    up first), so ``no_leaked_children`` never counts it as a leaked child."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()


@pytest.fixture
def dask_client(dask_resource_tracker: None) -> Iterator[Any]:
    """A ``dask.distributed.Client`` on a real LocalCluster of 2 worker processes (one thread
    each), closed after the test, so no worker or stdio child outlives it."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
