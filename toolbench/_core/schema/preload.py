"""jsonschema, imported early on a thread of its own, never inside a call.

Why: where Jupyter is installed, ``import jsonschema`` also imports ``rfc3987_syntax``, which
builds a parser at import: about 2 s of CPU, and 10 s of wall time measured on a busy 2-core
machine. Paid lazily by the first call's argument check, that import ran on the shared loop
(stalling every other connection) and inside the call's timeout (a first call with
``timeout=0.3`` failed as "not sent"). A Bench starts the import when it is created; a call
that comes before it has finished awaits it without holding the loop, and before its own
timeout starts.

Once imported, the import-time heap is frozen (``gc.freeze``): pandas, pydantic, the SDK and
jsonschema leave some 260,000 objects that live as long as the process, and every full pass
of the cyclic collector walked them all again: 70-100 ms here, with every thread stopped, so
a neighbour's call waited out each pass that a big listing's allocations set off. Frozen,
they are skipped (the pass: 103 -> 35 ms after a 10,000-tool connect). Objects freed by their
reference counts are freed as before; only cyclic garbage that exists at that moment is kept.
``TOOLBENCH_GC_FREEZE=0`` leaves the collector alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import os
import sys
import threading
from concurrent.futures import Future, InvalidStateError

WAIT_S = 120.0
"""The most a call waits for the import; past it, the call imports (or fails) by itself."""

_THREAD = "toolbench-preload"
_lock = threading.Lock()
_done: Future[None] | None = None


def start() -> Future[None]:
    """Begin the import (once per process); the future is done when it has finished."""
    global _done
    with _lock:
        if _done is None:
            _done = Future()
            if "jsonschema.validators" in sys.modules and "referencing" in sys.modules:
                _done.set_result(None)
            else:
                threading.Thread(target=_run, args=(_done,), name=_THREAD,
                                 daemon=True).start()
        return _done


def _run(done: Future[None]) -> None:
    try:
        # A failure here is not reported: the import is tried again where it is used,
        # and fails there, with the caller's own traceback.
        with contextlib.suppress(Exception):
            importlib.import_module("jsonschema.exceptions")
            importlib.import_module("jsonschema.validators")
            importlib.import_module("referencing")
        if os.environ.get("TOOLBENCH_GC_FREEZE", "1") != "0":
            gc.freeze()
    finally:
        with contextlib.suppress(InvalidStateError):
            done.set_result(None)


def ready() -> bool:
    """True once the import has finished (a check cheap enough for every call)."""
    return _done is not None and _done.done()


def imported() -> None:
    """Block until the import has finished, if a thread is importing (bounded by WAIT_S).

    Every place in toolbench that imports jsonschema calls this first: a second thread
    importing it meanwhile would find it half initialised ("cannot import name ... from
    partially initialized module").
    """
    done = _done
    if done is not None and not done.done() and threading.current_thread().name != _THREAD:
        with contextlib.suppress(TimeoutError):
            done.result(WAIT_S)


async def wait() -> None:
    """Await the import without blocking the event loop (bounded by WAIT_S)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(WAIT_S):
            await asyncio.shield(asyncio.wrap_future(start()))
