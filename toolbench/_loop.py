"""One background event loop per process, so connections outlive notebook cells.

Jupyter runs each cell in its own asyncio task, and the SDK's cancel scopes must be entered
and exited by one task. So every bench and its connections live on this loop, in a named
daemon thread, and their owner tasks outlive any cell. A bench's coroutines run here; its
public methods hand each one over (``run`` blocks a cell, ``arun`` awaits from any loop).

The loop is asyncio (run by ``anyio.run``, so anyio works on it), and the hops to it are
plain asyncio: the design of anyio's ``BlockingPortal``, without the portal. A sync call
crosses with ``call_soon_threadsafe`` and a lock its task releases (:class:`_Hop`); the
async face and ``submit`` use ``run_coroutine_threadsafe``. The portal's round trip measured
about twice ``run_coroutine_threadsafe``'s, and the lock 0.59 of that (BENCHMARKS.md,
"Per-call cost"); a call's overhead is mostly this hop. On the loop itself, hot paths use
asyncio's primitives directly (``asyncio.timeout``: a few µs cheaper per call than anyio's
backend lookup); everything else uses anyio.

**The caller's OpenTelemetry context travels along** (:func:`carried`): a call made while a
span is current in the cell runs on the loop under that span, so the SDK's request spans
and the bench's own (``toolbench._bench.calls.tracing``) nest under it instead of starting
traces of their own. Only OpenTelemetry's context is carried, never the caller's whole
``contextvars`` context (a notebook's asyncio and anyio state must not reach the loop).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, ParamSpec, Protocol, TypeVar

import anyio

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

THREAD_NAME = "toolbench-loop"
INTERRUPT_GRACE_S = 5.0
"""After an interrupt, how long the sync face waits for the cancelled call to wind down."""
SHUTDOWN_GRACE_S = 10.0
"""At interpreter exit, how long closing every connection may take."""


class Closable(Protocol):
    async def aclose(self) -> None: ...


class SharedLoop:
    """The process's event loop thread; start it with :func:`get_loop`."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread_id: int | None = None
        self._closables: weakref.WeakSet[Any] = weakref.WeakSet()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("toolbench's event loop thread did not start within 30 s")
        if self._failure is not None:
            raise RuntimeError("toolbench's event loop thread failed to start") from self._failure

    def _run(self) -> None:
        try:
            anyio.run(self._main, backend="asyncio")
        except BaseException as exc:  # the thread must never die silently before ready
            self._failure = exc
            self._ready.set()

    async def _main(self) -> None:
        self._thread_id = threading.get_ident()
        self._stop = asyncio.Event()
        self._asyncio_loop = asyncio.get_running_loop()
        self._ready.set()
        await self._stop.wait()  # then anyio.run cancels whatever is left, and closes the loop

    # -- where am I -------------------------------------------------------------------------
    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread_id

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self._stop is not None and not self._stop.is_set()

    def _check_alive(self) -> None:
        if not self.alive:
            raise RuntimeError("toolbench's event loop has shut down (interpreter exit?)")

    def _schedule(self, coroutine: Coroutine[Any, Any, R]) -> Future[R]:
        """Hand a coroutine to the loop thread; cancelling the returned future cancels it."""
        self._check_alive()
        return asyncio.run_coroutine_threadsafe(coroutine, self._asyncio_loop)

    # -- running work -----------------------------------------------------------------------
    def run(self, fn: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs) -> R:
        """Run ``fn`` on the loop and wait; an interrupt cancels it there and is re-raised."""
        if self.in_loop_thread():
            raise RuntimeError(
                "a synchronous toolbench method was called from toolbench's own event loop, "
                "where it would deadlock; await its async twin (the a-prefixed method) instead"
            )
        self._check_alive()
        hop = _Hop(functools.partial(fn, *args, **kwargs))
        hop.context = carried()
        loop = self._asyncio_loop
        try:  # from the hand-off on: an interrupt that lands anywhere here cancels the hop
            loop.call_soon_threadsafe(hop.start, loop)
            # The notebook's hook lets the kernel take widget events meanwhile.
            (_wait_hook or wait_in_slices)(hop.done)
            run_slice_work()  # what the call left for this thread (a bar's last update)
        except KeyboardInterrupt:
            loop.call_soon_threadsafe(hop.cancel)
            # Wait for the cancelled call to wind down (and record itself), unless it was
            # cancelled before it ever started, in which case nothing ran.
            if hop.done.acquire(timeout=0.2) or not hop.started:
                raise
            hop.done.acquire(timeout=INTERRUPT_GRACE_S)
            raise
        if hop.error is not None:
            error, hop.error = hop.error, None  # no reference cycle through the traceback
            if isinstance(error, asyncio.CancelledError):  # as Future.result() reported it
                raise concurrent.futures.CancelledError() from None
            raise error
        value: R = hop.value
        return value

    async def arun(self, fn: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs) -> R:
        """Await ``fn`` on the loop from any event loop (Jupyter's own included)."""
        if self.in_loop_thread():
            return await fn(*args, **kwargs)
        future = self._schedule(_awaited(functools.partial(fn, *args, **kwargs), carried()))
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise

    def submit(self, fn: Callable[[], Awaitable[R]]) -> Future[R]:
        """Start ``fn`` on the loop without waiting (widgets use this to keep the kernel free)."""
        return self._schedule(_awaited(fn))

    # -- shutdown ---------------------------------------------------------------------------
    def track(self, closable: Closable) -> None:
        """Close ``closable`` at interpreter exit if nobody closed it before."""
        self._closables.add(closable)

    def untrack(self, closable: Closable) -> None:
        self._closables.discard(closable)

    def shutdown(self) -> None:
        """Close every tracked object, then stop the loop; bounded, and safe to call twice."""
        if not self.alive or self.in_loop_thread():
            return
        pending = list(self._closables)
        if pending:
            # Exit must go on even if a close fails; children die with their pipes anyway.
            with contextlib.suppress(Exception):
                self.run(_close_all, pending)
        stop = self._stop
        if stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._asyncio_loop.call_soon_threadsafe(stop.set)
        self._thread.join(SHUTDOWN_GRACE_S)


class _Hop:
    """One synchronous call's trip to the loop and back: a lighter future.

    Measured against ``run_coroutine_threadsafe`` + ``Future.result()``: the
    concurrent future's condition variable, its callbacks and asyncio's future chaining
    (one more loop iteration before the caller is told) cost ~20 µs of a ~60 µs bare round
    trip here. This one is a lock the caller blocks on, released by the task itself the
    moment the coroutine returns, before the task's own completion bookkeeping. The caller
    waits in slices (:func:`wait_in_slices`), so the notebook's interrupt always gets through.
    """

    __slots__ = ("_task", "cancelled", "context", "done", "error", "fn", "started", "value")

    def __init__(self, fn: Callable[[], Awaitable[Any]]) -> None:
        self.fn = fn
        self.done = threading.Lock()
        self.done.acquire()
        self.started = False
        self.cancelled = False
        self.value: Any = None
        self.error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self.context: Any = None  # the caller's OpenTelemetry context (:func:`carried`)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self.cancelled:
            self._task = loop.create_task(self._run())

    def cancel(self) -> None:
        self.cancelled = True
        if self._task is not None:
            self._task.cancel()

    # The coroutine is created inside the task, so a task cancelled before it starts leaves
    # no never-awaited coroutine behind.
    async def _run(self) -> None:
        self.started = True
        token = _attach(self.context) if self.context is not None else None
        try:
            self.value = await self.fn()
        except BaseException as exc:  # handed to the caller's thread, re-raised there
            self.error = exc
        finally:
            if token is not None:
                _detach(token)
            self.fn = _gone
            self.done.release()


async def _gone() -> None:
    """What a finished hop holds instead of its call (so the call's objects can go)."""


def carried() -> Any:
    """The caller's OpenTelemetry context when it holds anything (a current span), else
    None: a lookup only, and nothing at all when OpenTelemetry was never imported."""
    context = sys.modules.get("opentelemetry.context")
    if context is None:
        return None
    current = context.get_current()
    return current if current else None


def _attach(context: Any) -> Any:
    """Make ``context`` current in this task (each hop is a task of its own)."""
    return sys.modules["opentelemetry.context"].attach(context)


def _detach(token: Any) -> None:
    with contextlib.suppress(Exception):  # a context that cannot be left is the SDK's log
        sys.modules["opentelemetry.context"].detach(token)


async def _awaited(fn: Callable[[], Awaitable[R]], context: Any = None) -> R:
    if context is None:
        return await fn()
    token = _attach(context)
    try:
        return await fn()
    finally:
        _detach(token)


async def _close_all(closables: list[Closable]) -> None:
    with anyio.move_on_after(SHUTDOWN_GRACE_S):
        async with anyio.create_task_group() as tg:
            for closable in closables:
                tg.start_soon(_close_quietly, closable)


async def _close_quietly(closable: Closable) -> None:
    with contextlib.suppress(Exception):
        await closable.aclose()


WAIT_SLICE_S = 0.05
"""The longest a blocked synchronous call goes without looking for a pending interrupt."""


def wait_in_slices(done: threading.Lock) -> None:
    """Block until ``done`` is acquired, letting a pending SIGINT through within a slice.

    One unbounded ``acquire()`` is interrupted only when the signal wakes the main thread
    itself. A SIGINT that the kernel hands to another thread (any thread of the process may
    take it), or that lands on the main thread just before it goes to sleep in the lock,
    leaves the Python handler pending until the lock is released: a Ctrl-C lost for the
    whole call (a 60 s connect, in the failure that found this). Waking every slice runs the
    pending handler, so the interrupt arrives within ``WAIT_SLICE_S``. A slice's wake-up
    costs a few microseconds, and none while the call finishes inside the first slice.
    """
    while not done.acquire(timeout=WAIT_SLICE_S):
        run_slice_work()


_slice_work: list[Callable[[], None]] = []


def add_slice_work(work: Callable[[], None]) -> None:
    """Have a thread that waits for a synchronous call run ``work`` every slice and once
    the call is done: how the layers above hand widget updates to the kernel's thread
    while a cell blocks (``work`` must be quick, and must not raise)."""
    if work not in _slice_work:
        _slice_work.append(work)


def run_slice_work() -> None:
    """Run what :func:`add_slice_work` registered (wait hooks call this every slice)."""
    for work in _slice_work:
        with contextlib.suppress(Exception):
            work()


WaitHook = Callable[[threading.Lock], None]
_wait_hook: WaitHook | None = None


def set_wait_hook(hook: WaitHook | None) -> None:
    """Replace how a synchronous call waits for its hop (None: :func:`wait_in_slices`).

    The hook must return once it has acquired the lock, bound every slice of its own work,
    and let ``KeyboardInterrupt`` through (the caller then cancels the call). The notebook
    layer installs one (``toolbench._notebook.ask.ask``) so that a person can answer a server's
    question in a widget while a cell blocks in ``bench.call``; this layer cannot import it.
    """
    global _wait_hook
    _wait_hook = hook


_loop: SharedLoop | None = None
_loop_lock = threading.Lock()


def get_loop() -> SharedLoop:
    """The shared loop, started on first use (and again if a previous one was shut down)."""
    global _loop
    loop = _loop
    if loop is not None and loop.alive:
        return loop
    with _loop_lock:
        if _loop is None or not _loop.alive:
            _loop = SharedLoop()
            atexit.register(_loop.shutdown)
        return _loop
