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

Everything a server sent is escaped and capped: at most ``MAX_SHOWN_MESSAGES`` messages of a
sampling request are shown (the rest are counted), each at most ``MAX_MESSAGE_CHARS``; a URL
request's link is shown (``http``/``https`` only), never opened. An elicitation form is
``form.py``'s, checked by the bounded validator; when the schema cannot be fully checked
here (a remote ``$ref``, a pattern re2 cannot run), the form says why.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types

from toolbench import _loop
from toolbench._bench.progress.kernel_thread import running_kernel
from toolbench._core import html as _html
from toolbench._notebook.ask.pump import MAX_EVENTS, KernelPump, PumpUnavailable, answer_comm_status
from toolbench._transports import server_requests as _requests
from toolbench._transports.server_requests import HandlerError

logger = logging.getLogger(__name__)

IDLE_SLICE_S = 0.1
"""While no ask is open, how often a waiting cell looks for a new one."""
BUSY_SLICE_S = 0.02
"""While an ask is open, how often the waiting cell pumps the kernel's messages."""
MAX_SHOWN_MESSAGES = 20
"""A sampling request's last messages shown; earlier ones are only counted."""
MAX_MESSAGE_CHARS = 2_000
MAX_TEXT_CHARS = 500
"""Caps for a server's message, system prompt, URL and the like."""
SETTLE_S = 0.3
"""Send and Accept decide this long after their click arrives, reading the form then."""
ENDED = ("this request ended before it was answered (the call timed out, was interrupted, or "
         "the server gave up)")
_RED = "color:#b00020"


# -- rendering (pure, bounded, escaped) ----------------------------------------------------
def _text(value: object, limit: int) -> str:
    return _html.escape(_html.shorten(str(value), limit))


def block_html(content: Any) -> str:
    """One content block of a sampling message: text escaped and capped, media described."""
    kind = getattr(content, "type", None)
    if kind == "text":
        text = str(getattr(content, "text", ""))
        return (f"<span style='white-space:pre-wrap'>{_text(text, MAX_MESSAGE_CHARS)}</span>"
                + (f" <small>({len(text):,} characters)</small>"
                   if len(text) > MAX_MESSAGE_CHARS else ""))
    if kind in ("image", "audio"):
        data = str(getattr(content, "data", ""))
        mime = _text(getattr(content, "mime_type", "?"), 80)
        return f"<i>[{kind} {mime}, {len(data) * 3 // 4:,} bytes]</i>"
    if isinstance(content, list):
        return "<br>".join(block_html(c) for c in content[:MAX_SHOWN_MESSAGES])
    return f"<i>[{_text(kind or type(content).__name__, 60)} block]</i>"


def sampling_html(server: str, params: types.CreateMessageRequestParams) -> str:
    """The request as a short transcript: bounded whatever the server sent."""
    messages = list(params.messages)
    shown = messages[-MAX_SHOWN_MESSAGES:]
    parts = [f"<div><b>{_text(server, 80)}</b> asks for a reply (sampling), at most "
             f"{int(params.max_tokens):,} tokens.</div>"]
    if params.system_prompt:
        parts.append(f"<div><small>system:</small> {_text(params.system_prompt, MAX_TEXT_CHARS)}"
                     "</div>")
    if len(messages) > len(shown):
        parts.append(f"<div><i>{len(messages) - len(shown):,} earlier messages not shown "
                     f"({len(messages):,} in all)</i></div>")
    for message in shown:
        parts.append(f"<div><small>{_text(message.role, 20)}:</small> "
                     f"{block_html(message.content)}</div>")
    return "<div class='toolbench-sampling'>" + "".join(parts) + "</div>"


def safe_link(url: str) -> str:
    """An http(s) URL as an escaped link that opens in a new tab only if a person clicks it;
    any other scheme (``javascript:``, ``data:``, ``file:``) is shown as text only."""
    shown = _text(url, MAX_TEXT_CHARS)
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        scheme = ""
    if scheme not in ("http", "https"):
        return f"<code>{shown}</code> <small style='{_RED}'>(not an http(s) link)</small>"
    return (f"<a href=\"{_html.escape(url)}\" target=\"_blank\" "
            f"rel=\"noopener noreferrer nofollow\">{shown}</a>")


# -- the widgets ----------------------------------------------------------------------------
Answer = Callable[[Any], None]
"""Receives the answer: a value for the handler protocol, or a ``HandlerError``."""


class _AskWidget:
    """What both kinds share: a status line, buttons, and answering exactly once."""

    def __init__(self, answer: Answer) -> None:
        import ipywidgets as widgets

        self._answer = answer
        self.answered: str | None = None
        self.status = widgets.HTML("")
        self.buttons: list[Any] = []
        self.widget: Any = None
        # How a settling click is put off (the asker's); None: decided at once.
        self.defer: Callable[[Callable[[], None]], None] | None = None
        self.settling = False

    def _button(self, label: str, style: str, on_click: Callable[[], None],
                settle: bool = False) -> Any:
        import ipywidgets as widgets

        button = widgets.Button(description=label, button_style=style)
        button.add_class("toolbench-ask-" + label.lower())
        button.on_click(lambda _b: self._clicked(on_click, settle))
        self.buttons.append(button)
        return button

    def _clicked(self, action: Callable[[], None], settle: bool) -> None:
        if self.answered is not None or self.settling:
            return
        if not settle or self.defer is None:
            self._guarded(action)
            return
        self.settling = True

        def decide() -> None:
            self.settling = False
            self._guarded(action)

        try:
            self.defer(decide)
        except Exception:  # no way to put it off: decide now
            decide()

    def _guarded(self, action: Callable[[], None]) -> None:
        if self.answered is not None:
            return
        try:
            action()
        except Exception as exc:  # a click handler must never raise into the kernel
            self.status.value = f"<span style='{_RED}'>{_text(exc, 300)}</span>"

    def finish(self, value: Any, note: str) -> None:
        if self.answered is not None:
            return
        self.answered = note
        for button in self.buttons:
            button.disabled = True
        self.status.value = f"<b>{_text(note, 200)}</b>"
        self._answer(value)

    def expire(self, why: str) -> None:
        """The request ended without an answer from here (timeout, interrupt, call over)."""
        if self.answered is not None:
            return
        self.answered = why
        for button in self.buttons:
            button.disabled = True
        self.status.value = f"<span style='{_RED}'>{_text(why, 300)}</span>"


class SamplingAsk(_AskWidget):
    """A sampling request as a transcript, a reply box, and Send / Reject."""

    def __init__(self, server: str, params: types.CreateMessageRequestParams,
                 answer: Answer) -> None:
        import ipywidgets as widgets

        super().__init__(answer)
        self.transcript = widgets.HTML(sampling_html(server, params))
        self.reply = widgets.Textarea(placeholder="the reply the server gets", rows=4,
                                      continuous_update=False,  # sent on blur: see above
                                      layout=widgets.Layout(width="95%"))
        self.send = self._button("Send", "success", self._send, settle=True)
        self.reject = self._button("Reject", "danger", self._reject)
        self.widget = widgets.VBox([self.transcript, self.reply,
                                    widgets.HBox([self.send, self.reject]), self.status])
        self.widget.add_class("toolbench-ask")

    def _send(self) -> None:
        if not self.reply.value.strip():
            self.status.value = f"<span style='{_RED}'>write a reply first (or Reject)</span>"
            return
        self.finish(self.reply.value, "sent")

    def _reject(self) -> None:
        self.finish(HandlerError("the person rejected the sampling request",
                                 code=_requests.USER_REJECTED), "rejected")


class ElicitationAsk(_AskWidget):
    """An elicitation: the schema as a form (or a URL as a link), Accept / Decline / Cancel."""

    def __init__(self, server: str, params: types.ElicitRequestParams, answer: Answer) -> None:
        import ipywidgets as widgets

        from toolbench._notebook.ask.form import build_form

        super().__init__(answer)
        self.params = params
        self.form: Any = None
        head = (f"<div><b>{_text(server, 80)}</b> asks: "
                f"<span style='white-space:pre-wrap'>{_text(params.message, MAX_TEXT_CHARS)}"
                "</span></div>")
        rows: list[Any] = []
        if isinstance(params, types.ElicitRequestURLParams):
            head += (f"<div>It asks you to visit {safe_link(params.url)}; nothing is opened "
                     "for you. Accept once you are done there.</div>")
        else:
            notes = _requests.schema_notes(params.requested_schema)
            if notes:
                shown = "".join(f"<li>{_text(n, 300)}</li>" for n in notes[:5])
                head += (f"<div style='{_RED}'>Your answer is not fully checked here; the "
                         f"server checks it:<ul>{shown}</ul></div>")
            self.form = build_form(params.requested_schema)
            rows.append(self.form.widget)
        self.message = widgets.HTML(head)
        self.accept = self._button("Accept", "success", self._accept, settle=True)
        self.decline = self._button("Decline", "warning", lambda: self.finish(
            {"action": "decline"}, "declined"))
        self.cancel = self._button("Cancel", "", lambda: self.finish(
            {"action": "cancel"}, "cancelled"))
        self.widget = widgets.VBox([self.message, *rows,
                                    widgets.HBox([self.accept, self.decline, self.cancel]),
                                    self.status])
        self.widget.add_class("toolbench-ask")

    def _accept(self) -> None:
        if self.form is None:
            self.finish({"action": "accept"}, "accepted")
            return
        from toolbench._notebook.ask.form import FormError

        try:
            content = self.form.values()  # marks the broken fields, or the checked content
        except FormError:
            self.status.value = (f"<span style='{_RED}'>fix the marked fields; nothing was "
                                 "sent yet</span>")
            return
        try:  # the same check the server's answer gets from a function handler
            _requests.elicit_result({"action": "accept", "content": content}, self.params)
        except HandlerError as exc:
            self.status.value = f"<span style='{_RED}'>{_text(exc.message, 300)}</span>"
            return
        self.finish({"action": "accept", "content": content}, "accepted")


KINDS: dict[str, Callable[[str, Any, Answer], _AskWidget]] = {}
"""Widgets of further kinds of question, by kind (the sign-in card adds ``"signin"``)."""


# -- the asker ------------------------------------------------------------------------------
class _Pending:
    """One question: who asks, what, the widget once shown, and where the answer goes."""

    def __init__(self, kind: str, server: str, params: Any) -> None:
        self.kind, self.server, self.params = kind, server, params
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.view: _AskWidget | None = None
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
        return await self._ask("sampling", server, params)

    async def elicitation(self, server: str, params: types.ElicitRequestParams,
                          timeout: float) -> Any:
        return await self._ask("elicitation", server, params)

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

    async def _ask(self, kind: str, server: str, params: Any) -> Any:
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

    def _build(self, pending: _Pending) -> _AskWidget:
        view: _AskWidget
        if pending.kind in KINDS:
            view = KINDS[pending.kind](pending.server, pending.params, pending.answer)
        elif pending.kind == "sampling":
            view = SamplingAsk(pending.server, pending.params, pending.answer)
        else:
            view = ElicitationAsk(pending.server, pending.params, pending.answer)
        view.defer = self.defer
        return view

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
    def open_views(self) -> list[_AskWidget]:
        """The widgets waiting for a person (tests and the explorer read them)."""
        return [p.view for p in self._open if p.view is not None]

    def wait(self, done: threading.Lock) -> None:
        """The shared loop's wait hook: block on ``done``, serving asks in bounded slices."""
        kernel = self._kernel()
        if kernel is None or threading.current_thread() is not threading.main_thread():
            _loop.wait_in_slices(done)
            return
        self._waiting += 1
        try:
            while not done.acquire(timeout=BUSY_SLICE_S if self._open else IDLE_SLICE_S):
                self._slice(kernel)
        finally:
            self._waiting -= 1
            with contextlib.suppress(Exception):
                self.service()  # settle what ended with the call (an expired form)
                if not self._waiting:  # no slices to wait for: a late click decides now
                    self.run_deferred(now=float("inf"))

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
