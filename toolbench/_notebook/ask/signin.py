"""The sign-in card: a person signs in to an OAuth-protected server from a notebook cell.

When a sign-in needs a person (``bench.connect(..., auth="oauth")`` with no ``authorize=``),
the flow calls the registered authorizer, :func:`notebook_authorizer` in a kernel. It shows a
card in the cell:

- a link that opens the authorization page in a new tab (``safe_link``: http(s) only, never
  opened for the person);
- a text box "paste the address your browser ended on" and a button: the way in when the
  kernel runs elsewhere (Binder, JupyterHub, SSH) and the browser's redirect to
  ``http://127.0.0.1:<port>/callback`` lands on an error page. A pasted address from another
  host, with another ``state`` or without a code is refused on the card, which says why, and
  the person can paste again;
- meanwhile the loopback listener (:mod:`toolbench._transports.auth.loopback`) waits on the
  shared loop for that redirect, for a browser on the kernel's machine.

Whichever comes first wins; the card then says the address was received (or shows the
authorization server's error) and disables itself. It says "signed in" only once the flow has
checked the address and exchanged its code for tokens (the flow's
:class:`~toolbench._transports.auth.signin.SignInOutcome`); if that fails, the card shows why.
The card is an ``"ask"`` question (kind ``"signin"``) of :mod:`toolbench._notebook.ask.ask`, so
it works during a plain blocking ``bench.connect`` through the cell-side pump. The wait is
bounded by the flow's ``timeout`` (``tb.OAuth(timeout=)``). The text box is emptied as soon
as an address is read, so no code stays in the widget's state; the card never shows the
pasted address. Outside a kernel (or without ipywidgets) the terminal's way is used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from toolbench._bench.progress.kernel_thread import running_kernel
from toolbench._core import html as _html
from toolbench._notebook.ask import ask as _ask
from toolbench._notebook.ask import widgets as _widgets
from toolbench._transports.auth.callback import CallbackRefused, callback_error, check_callback
from toolbench._transports.auth.signin import (
    current_outcome,
    terminal_authorizer,
    wait_for_redirect,
)
from toolbench._transports.auth.state import register_authorizer

KIND = "signin"
logger = logging.getLogger(__name__)
_GREEN = "color:#1b5e20"


@dataclass
class SignInRequest:
    """One sign-in waiting for a person; ``outcome`` is set on the shared loop when it ends
    (the card reads it on the main thread)."""

    authorization_url: str
    redirect_uri: str
    timeout: float
    outcome: str | None = None
    failed: bool = False
    notes: list[str] = field(default_factory=list)
    how: str = ""  # how the address came: "loopback" or "pasted"
    card: Any = None  # the SignInCard, once shown (main thread)

    @property
    def where(self) -> str:
        try:
            return urlsplit(self.authorization_url).netloc or "the authorization server"
        except ValueError:
            return "the authorization server"


class SignInCard(_widgets.AskWidget):
    """The card: the link, the paste box and its button, a status line."""

    def __init__(self, server: str, request: SignInRequest, answer: _widgets.Answer) -> None:
        import ipywidgets as widgets

        super().__init__(answer)
        self.request = request
        self.message = widgets.HTML(
            f"<div><b>Sign in</b> at {_html.escape(request.where[:100])} to connect: "
            f"{_widgets.safe_link(request.authorization_url)} "
            "<small>(opens in a new tab)</small></div>"
            "<div><small>When the sign-in is done, the page your browser ends on may show an "
            "error (the kernel runs on another machine): copy that page's whole address from "
            f"the address bar and paste it here. Waiting at most {request.timeout:g} s."
            "</small></div>")
        self.use = widgets.Button(description="Use this address", button_style="primary")
        self.use.add_class("toolbench-signin-use")
        self.use.on_click(lambda _b: self._guarded(self._pasted))
        self.buttons.append(self.use)
        self.box = self._new_box()
        self.row = widgets.HBox([self.box, self.use])
        self.widget = widgets.VBox([self.message, self.row, self.status])
        self.widget.add_class("toolbench-signin")
        request.card = self

    @staticmethod
    def _new_box() -> Any:
        """A fresh text box. One per attempt: during a blocking cell the front end sends a
        widget's *second* change only after the kernel reports idle for the first (ipywidgets'
        message throttle), which the cell-side pump does not report; a new box's first change
        always goes through. It syncs on Enter or leaving the box, not per keystroke."""
        import ipywidgets as widgets

        box = widgets.Text(placeholder="paste the address your browser ended on",
                           continuous_update=False, layout=widgets.Layout(width="70%"))
        box.add_class("toolbench-signin-paste")
        return box

    def _pasted(self) -> None:
        text, self.box.value = self.box.value, ""  # no code stays in the widget's state
        try:
            url = check_callback(text, self.request.authorization_url,
                                 self.request.redirect_uri)
        except CallbackRefused as exc:
            old, self.box = self.box, self._new_box()
            self.row.children = (self.box, self.use)
            old.close()
            self.status.value = (f"<span style='{_widgets.RED}'>Not taken: "
                                 f"{_html.escape(_html.shorten(str(exc), 400))}. "
                                 "Paste again.</span>")
            return
        error = callback_error(url)
        self.finish(url, f"the authorization server refused: {error}" if error else
                    RECEIVED.format(how="the pasted address"))

    def finish(self, value: Any, note: str) -> None:
        self.box.disabled = True
        super().finish(value, note)

    def settle(self, error: str | None) -> None:
        """The flow went on after the address came: signed in (tokens came), or why not.
        Main thread."""
        how = HOW.get(self.request.how, self.request.how)
        text = f"signed in ({how})" if error is None else f"sign-in failed: {error}"
        self.answered = text
        self.box.disabled = True
        for button in self.buttons:
            button.disabled = True
        style = _GREEN if error is None else _widgets.RED
        self.status.value = f"<b style='{style}'>{_html.escape(_html.shorten(text, 400))}</b>"

    def expire(self, why: str) -> None:
        """The sign-in ended another way: the loopback won, it timed out, or was stopped."""
        if self.answered is not None:
            return
        self.box.disabled = True
        outcome = self.request.outcome
        if outcome is None:
            super().expire("this sign-in ended before it was finished (it timed out, was "
                           "interrupted, or the connect gave up)")
            return
        self.answered = outcome
        for button in self.buttons:
            button.disabled = True
        style = _widgets.RED if self.request.failed else _GREEN
        self.status.value = f"<b style='{style}'>{_html.escape(_html.shorten(outcome, 300))}</b>"


_ask.KINDS[KIND] = SignInCard

HOW = {"loopback": "your browser came back to toolbench", "pasted": "the pasted address"}
RECEIVED = "received {how}; finishing the sign-in..."


async def notebook_authorizer(authorization_url: str, redirect_uri: str, timeout: float, *,
                              asker: _ask.NotebookAsker | None = None) -> str:
    """The default authorizer in a kernel: the sign-in card and the loopback listener, the
    first to bring the redirect wins; elsewhere :func:`terminal_authorizer`."""
    asker = asker if asker is not None else _ask.ASKER
    if asker.available() is not None:
        return await terminal_authorizer(authorization_url, redirect_uri, timeout)
    request = SignInRequest(authorization_url, redirect_uri, timeout)
    card = asyncio.get_running_loop().create_task(
        asker.ask(KIND, request.where, request))
    taken = False

    async def pasted() -> str:
        nonlocal taken
        if taken:  # the card answers once; a refused answer cannot come back
            await asyncio.Event().wait()
        taken = True
        try:
            return str(await asyncio.shield(card))
        except Exception:  # the card could not be shown: the loopback may still come
            logger.warning("the sign-in card failed; waiting for the browser's redirect only",
                           exc_info=True)
            await asyncio.Event().wait()
            raise

    def received(url: str, how: str) -> None:
        error = callback_error(url)
        request.failed, request.how = error is not None, how
        request.outcome = (f"the authorization server refused: {error}" if error else
                           RECEIVED.format(how=HOW[how]))

    def settled(error: str | None) -> None:  # the flow went on (shared loop)
        def show() -> None:
            if request.card is not None and not request.failed:
                request.card.settle(error)
        asker.on_main(show)

    outcome = current_outcome()
    if outcome is not None:
        outcome.listen(settled)

    try:
        url, _how = await wait_for_redirect(authorization_url, redirect_uri, timeout,
                                            paste=pasted, listening=request.notes.append,
                                            received=received)
    except BaseException as exc:
        request.failed = True
        request.outcome = (f"no sign-in within {timeout:g} s" if isinstance(exc, TimeoutError)
                           else "this sign-in was stopped")
        raise
    finally:
        if not card.done():
            card.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(card), 1)
    return url


def register() -> None:
    """Make :func:`notebook_authorizer` the default authorizer; in a kernel, let blocking
    calls wait through the pump from now on (a sign-in can start in any ``connect``)."""
    if running_kernel() is not None:
        _ask.ASKER.prepare()
    register_authorizer(notebook_authorizer)


register()
