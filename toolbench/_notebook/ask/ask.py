"""``"ask"``: a person answers a server's sampling or elicitation request in a notebook widget.

**The hard part: the cell-side pump.** ``bench.call`` in a cell blocks the kernel's main
thread until the call ends, and the kernel reads widget (comm) messages on that same thread.
So a form shown during a synchronous call could never be answered: the click waits for the
cell, and the cell waits for the click. We name the design *the cell-side pump*:

1. The request arrives on toolbench's shared loop (another thread). The :class:`NotebookAsker`
   queues it and waits, bounded, on a future.
2. The main thread is inside ``SharedLoop.run``, which waits through the hook this module
   installs (``toolbench._loop.set_wait_hook``) once a bench is made with ``"ask"``. Instead
   of one blocking acquire, the hook waits in slices (``IDLE_SLICE_S``, ``BUSY_SLICE_S``). Between
   slices, still on the main thread and in the cell's own context (so ``display`` lands in the
   cell's output), it builds and shows the widgets of queued requests and, while one is open,
   pumps the kernel: :class:`~toolbench._notebook.ask.pump.KernelPump` reads at most
   ``MAX_EVENTS`` pending shell messages off the kernel's own socket, answers comm messages
   (widget updates and clicks) at once *as the kernel does* (status busy/idle and the echo
   parented to the message: ipywidgets' front end sends a widget's next change only after
   that idle), and re-queues every other message (the next cell's ``execute_request``,
   completions) on the kernel's event loop, in order, so the kernel runs them after this
   cell exactly as it would have.
3. The click's handler checks the answer and resolves the future; the shared loop replies to
   the server; the call ends; the hook returns.

A ``KeyboardInterrupt`` (the interrupt button) can arrive in any slice: it leaves the hook, so
``SharedLoop.run`` cancels the call as always; the cancelled ask marks its widget expired; a
message read off the socket is re-queued in a ``finally`` before the interrupt goes on.

Why not ``jupyter-ui-poll``: checked here with ipykernel 7.4, its pump calls
``kernel.do_one_iteration()``, which ipykernel 7 no longer has, and swallows the
``AttributeError``: a click sent while a cell polled was never seen (20 s), while this pump saw
it within 0.6 s and ran the queued next cell afterwards. ipykernel 7 itself dispatches comm
messages during an *awaiting* cell, so ``await bench.acall(...)`` needs no pump, only the
busy/idle ipykernel leaves out there (:func:`~toolbench._notebook.ask.pump.answer_comm_status`,
installed with the hook); there the widget is shown through the kernel's event loop
(:meth:`NotebookAsker.wake`).

**Where a form shows.** In the cell that waits (blocked or awaiting), or in the last cell
that ran. A server's request carries nothing that names the call it belongs to, so the
explorer's Call button says where its call's questions go: :meth:`NotebookAsker.route` sends a
server's asks to a place of the caller's (the explorer's Call tab) while that call runs.

A form's text boxes send every key (``form.py`` says why); the sampling reply box sends when
it loses focus, as clicking Send makes it do. A value sent just before a click is not always
handled first: while a cell awaits, ipykernel runs each widget message as a task of its own,
and the click's task can run before the value's (seen in Chromium: the corrected value
arrived, but Accept had already judged the old one). So Send and Accept *settle*: the
click is decided ``SETTLE_S`` later, between pump slices in a blocked cell or
by the kernel's event loop otherwise, and reads the form then; clicks meanwhile are ignored.

What a person sees (the widgets, escaped and capped) is :mod:`~toolbench._notebook.ask.widgets`;
this module is the asker: the queue, the pump's wait hook, and where a form shows.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import mcp_types as types

from toolbench import _loop
from toolbench._bench.progress.kernel_thread import running_kernel
from toolbench._core import html as _html
from toolbench._notebook.ask.pump import MAX_EVENTS, KernelPump, PumpUnavailable, answer_comm_status
from toolbench._notebook.ask.widgets import Answer, AskWidget, ElicitationAsk, SamplingAsk
from toolbench._transports import server_requests as _requests
from toolbench._transports.server_requests import HandlerError

logger = logging.getLogger(__name__)

IDLE_SLICE_S = 0.1
"""While no ask is open, how often a waiting cell looks for a new one."""
BUSY_SLICE_S = 0.02
"""While an ask is open, how often the waiting cell pumps the kernel's messages."""
SETTLE_S = 0.3
"""Send and Accept decide this long after their click arrives, reading the form then."""
ENDED = ("this request ended before it was answered (the call timed out, was interrupted, or "
         "the server gave up)")


KINDS: dict[str, Callable[[str, Any, Answer], AskWidget]] = {}
"""Widgets of further kinds of question, by kind (the sign-in card adds ``"signin"``)."""


# -- the asker ------------------------------------------------------------------------------
class _Pending:
    """One question: who asks, what, the widget once shown, and where the answer goes."""

    def __init__(self, kind: str, server: str, params: Any) -> None:
        self.kind, self.server, self.params = kind, server, params
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.view: AskWidget | None = None
        self.expired: str | None = None
        self.show: Callable[[Any], None] | None = None  # a route's, else the cell's display

    def answer(self, value: Any) -> None:
        if not self.future.done():
            self.future.set_result(value)


class NotebookAsker:
    """The ``Asker`` the notebook layer registers; widgets are only ever touched on the
    kernel's main thread (:meth:`service`), answers cross to the shared loop by future."""

    def __init__(self, *, display: Callable[[Any], None] | None = None,
                 kernel: Callable[[], Any | None] = running_kernel) -> None:
        self._display = display
        self._kernel = kernel
        self._lock = threading.Lock()
        self._queue: list[_Pending] = []  # asked, not yet shown
        self._open: list[_Pending] = []  # shown, waiting for a person
        self._waiting = 0  # cells waiting in the hook right now
        self._pumps: dict[int, KernelPump | None] = {}
        self._deferred: list[tuple[float, Callable[[], None]]] = []  # (due, settling click)
        self._following = False
        self._cell_parent: dict[str, Any] | None = None
        self._routes: dict[str, list[Callable[[Any], None]]] = {}

    # the Asker protocol
    def available(self) -> str | None:
        if self._display is not None:
            return None
        if self._kernel() is None:
            return "this process is not a Jupyter kernel"
        try:
            import ipywidgets  # noqa: F401
        except ImportError:
            return "ipywidgets is not installed (pip install 'toolbench[lab]')"
        return None

    def prepare(self) -> None:
        """A bench will ask: let synchronous calls wait through the pump from now on, and
        follow which cell runs (a form shown through the event loop goes to that cell)."""
        kernel = self._kernel()
        if self._display is not None or kernel is None:
            return
        _loop.set_wait_hook(self.wait)
        try:
            answer_comm_status(kernel)  # an awaiting cell's widget messages get busy/idle
        except Exception:  # the await path then works as ipykernel alone makes it
            logger.debug("could not wrap the kernel's dispatch_shell", exc_info=True)
        shell = getattr(kernel, "shell", None)
        if shell is not None and not self._following:
            self._following = True
            self._remember_cell()
            shell.events.register("pre_run_cell", self._remember_cell)

    def _remember_cell(self, *_info: Any) -> None:
        """Runs in the cell's own context (main thread): note its request, for ``display``."""
        kernel = self._kernel()
        with contextlib.suppress(Exception):
            self._cell_parent = kernel.get_parent("shell") if kernel is not None else None

    async def sampling(self, server: str, params: types.CreateMessageRequestParams,
                       timeout: float) -> Any:
        return await self.ask("sampling", server, params)

    async def elicitation(self, server: str, params: types.ElicitRequestParams,
                          timeout: float) -> Any:
        return await self.ask("elicitation", server, params)

    def route(self, server: str, show: Callable[[Any], None]) -> Callable[[], None]:
        """Show ``server``'s questions with ``show`` (main thread) instead of in a cell, until
        the returned function is called; the latest route of a server wins. The explorer's
        Call button routes its call's server to its Call tab while the call runs."""
        with self._lock:
            self._routes.setdefault(server, []).append(show)

        def unroute() -> None:
            with self._lock:
                shows = self._routes.get(server, [])
                if show in shows:
                    shows.remove(show)
                if not shows:
                    self._routes.pop(server, None)

        return unroute

    async def ask(self, kind: str, server: str, params: Any) -> Any:
        """Ask a person a question of ``kind`` (``sampling``, ``elicitation`` or one of
        ``KINDS``); returns the widget's answer, or raises the ``HandlerError`` it gave."""
        pending = _Pending(kind, server, params)
        with self._lock:
            shows = self._routes.get(server)
            pending.show = shows[-1] if shows else None
            self._queue.append(pending)
        self.wake()
        try:
            value = await asyncio.wrap_future(pending.future)
        except BaseException:
            pending.expired = ENDED
            self.wake()
            raise
        if isinstance(value, HandlerError):
            raise value
        return value

    # the main thread's side
    def wake(self) -> None:
        """Have the main thread look at the queue: a waiting cell will within a slice;
        otherwise (an awaiting or idle kernel) the kernel's event loop runs :meth:`service`."""
        if self._waiting or self._display is not None:
            return
        kernel = self._kernel()
        io_loop = getattr(kernel, "io_loop", None)
        if io_loop is not None:
            io_loop.add_callback(self._service_in_cell, kernel)

    def _service_in_cell(self, kernel: Any) -> None:
        """:meth:`service` from the kernel's event loop, in a context of its own: outputs are
        tied to the last cell that ran (the awaiting one), not to whatever request the
        kernel's fallback context last saw."""
        shell = getattr(kernel, "shell", None)
        if shell is not None and self._cell_parent:
            with contextlib.suppress(Exception):
                shell.set_parent(self._cell_parent)
        self.service()

    def service(self) -> int:
        """Show queued questions and settle ended ones; main thread only. Returns how many
        are open."""
        with self._lock:
            new, self._queue = self._queue, []
        # Open first, then build: an interrupt while a widget is built or shown must not
        # lose the question (its widget is then settled by a later service).
        self._open.extend(new)
        for pending in new:
            if pending.expired is not None or pending.future.done():
                continue
            try:
                pending.view = self._build(pending)
                self._show(pending.view.widget, pending.show)
            except Exception as exc:  # a broken widget must not leave the server waiting
                logger.debug("could not show an ask widget", exc_info=True)
                pending.answer(HandlerError(
                    f"the {pending.kind} widget could not be shown: {type(exc).__name__}: "
                    f"{_html.shorten(str(exc), 200)}"))
        still: list[_Pending] = []
        for pending in self._open:
            if pending.expired is not None or pending.future.cancelled():
                if pending.view is not None:  # (cancelled: the expiry note may lag a moment)
                    pending.view.expire(pending.expired or ENDED)
            elif not pending.future.done():
                still.append(pending)
        self._open = still
        return len(still)

    def _build(self, pending: _Pending) -> AskWidget:
        view: AskWidget
        if pending.kind in KINDS:
            view = KINDS[pending.kind](pending.server, pending.params, pending.answer)
        elif pending.kind == "sampling":
            view = SamplingAsk(pending.server, pending.params, pending.answer)
        else:
            view = ElicitationAsk(pending.server, pending.params, pending.answer)
        view.defer = self.defer
        return view

    def on_main(self, action: Callable[[], None]) -> None:
        """Run ``action`` on the kernel's main thread soon (called from the shared loop): in a
        blocked cell's next pump slice, else through the kernel's event loop; driven by a
        test's own display (no kernel), now."""
        if self._display is not None:
            action()
        elif self._waiting:
            self._deferred.append((0.0, action))
        else:
            io_loop = getattr(self._kernel(), "io_loop", None)
            if io_loop is not None:
                io_loop.add_callback(action)

    def defer(self, action: Callable[[], None]) -> None:
        """Run a settling click ``SETTLE_S`` from now on the main thread: from a blocked
        cell's pump slices, else from the kernel's event loop; with neither, now."""
        if self._waiting:
            self._deferred.append((time.monotonic() + SETTLE_S, action))
            return
        io_loop = getattr(self._kernel(), "io_loop", None) if self._display is None else None
        if io_loop is None:
            action()
            return
        io_loop.call_later(SETTLE_S, action)

    def run_deferred(self, now: float | None = None) -> int:
        """Run the settling clicks that are due (main thread); returns how many ran."""
        now = time.monotonic() if now is None else now
        due = [action for when, action in self._deferred if when <= now]
        self._deferred = [(when, action) for when, action in self._deferred if when > now]
        for action in due:
            action()
        return len(due)

    def _show(self, widget: Any, show: Callable[[Any], None] | None = None) -> None:
        if show is not None:
            show(widget)
            return
        if self._display is not None:
            self._display(widget)
            return
        from IPython.display import display

        display(widget)  # type: ignore[no-untyped-call]

    @property
    def open_views(self) -> list[AskWidget]:
        """The widgets waiting for a person (tests and the explorer read them)."""
        return [p.view for p in self._open if p.view is not None]

    def wait(self, done: threading.Lock) -> None:
        """The shared loop's wait hook: block on ``done``, serving asks in bounded slices."""
        kernel = self._kernel()
        if kernel is None or threading.current_thread() is not threading.main_thread():
            _loop.wait_in_slices(done)
            return
        try:
            with self.pumping():
                while not done.acquire(timeout=BUSY_SLICE_S if self._open else IDLE_SLICE_S):
                    self._slice(kernel)
        finally:
            with contextlib.suppress(Exception):
                self.service()  # settle what ended with the call (an expired form)
                if not self._waiting:  # no slices to wait for: a late click decides now
                    self.run_deferred(now=float("inf"))

    @contextlib.contextmanager
    def pumping(self) -> Iterator[None]:
        """While a cell waits in the hook: settling clicks and :meth:`on_main` actions wait
        for its pump slices (a test plays a blocked cell with it)."""
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1

    def _slice(self, kernel: Any) -> None:
        _loop.run_slice_work()
        try:
            if self._queue or self._open:
                self.service()
            if self._open:
                pump = self._pump(kernel)
                if pump is not None:
                    pump(MAX_EVENTS)
            if self._deferred:
                self.run_deferred()
        except Exception:  # the wait goes on; a pump failure must not fail the call
            logger.debug("ask pump slice failed", exc_info=True)

    def _pump(self, kernel: Any) -> KernelPump | None:
        key = id(kernel)
        if key not in self._pumps:
            try:
                self._pumps[key] = KernelPump(kernel)
            except PumpUnavailable as exc:
                logger.warning("toolbench cannot take widget events during a blocking call "
                               "in this kernel (%s); use `await bench.acall(...)`", exc)
                self._pumps[key] = None
        return self._pumps[key]


def wait_answered(asker: NotebookAsker, count: int = 1, timeout: float = 10.0) -> list[Any]:
    """Serve ``asker`` (as the main thread would) until ``count`` widgets are open; for tests
    and scripts that drive the widgets themselves. Bounded by ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        asker.service()
        if len(asker.open_views) >= count:
            return asker.open_views
        time.sleep(0.01)
    raise TimeoutError(f"{count} ask widget(s) did not appear within {timeout:g} s")


ASKER = NotebookAsker()
"""The process's asker; ``import toolbench`` registers it for ``"ask"``."""
_requests.register_asker(ASKER)
