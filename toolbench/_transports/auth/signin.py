"""The person's step of a sign-in: wait for the browser's redirect, whichever way it comes.

An authorizer (``toolbench._transports.auth.state.register_authorizer``) is
``async (authorization_url, redirect_uri, timeout) -> str``: it returns the URL the browser
came back to. Two ways can bring it, and :func:`wait_for_redirect` runs both at once, the
first one wins:

- the loopback listener (:mod:`toolbench._transports.auth.loopback`), when the browser runs on
  this machine and the redirect URI is a loopback address;
- an address the person pastes (a notebook card's text box, or a line on a terminal's
  stdin), checked by :func:`toolbench._transports.auth.callback.check_callback`; a refused paste
  leaves the wait running, so the person can paste again.

:func:`terminal_authorizer` is the terminal's face: it prints the link and what to do, and
reads pasted lines from stdin when stdin is a terminal. Every wait is bounded by ``timeout``.

**What became of it.** The redirect is not the end of a sign-in: the flow still checks it and
exchanges its code for tokens, and either can fail. While an authorizer runs,
:func:`current_outcome` is that sign-in's :class:`SignInOutcome`; whoever showed "received"
(the notebook card) listens on it, and hears ``None`` once the tokens came, or the reason
the sign-in failed.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import TextIO

import anyio

from toolbench._transports.auth.callback import CallbackRefused, callback_error, check_callback
from toolbench._transports.auth.loopback import Loopback, LoopbackError

logger = logging.getLogger(__name__)

Paste = Callable[[], Awaitable[str]]
"""Returns one pasted text each time it is awaited (a refused one is asked for again)."""
Note = Callable[[str], None]


class SignInOutcome:
    """How one sign-in ended after its redirect came back: ``settle(None)`` once its tokens
    came, ``settle(reason)`` when it failed; each listener hears it once (on the shared
    loop, so a listener hands widget work to the main thread)."""

    def __init__(self) -> None:
        self.error: str | None = None
        self.settled = False
        self._listeners: list[Callable[[str | None], None]] = []

    def listen(self, fn: Callable[[str | None], None]) -> None:
        """Call ``fn(error_or_None)`` when the sign-in settles (at once if it has)."""
        if self.settled:
            fn(self.error)
        else:
            self._listeners.append(fn)

    def settle(self, error: str | None) -> None:
        if self.settled:
            return
        self.settled, self.error = True, error
        listeners, self._listeners = self._listeners, []
        for fn in listeners:
            try:
                fn(error)
            except Exception:  # a listener's failure is not the sign-in's
                logger.debug("a sign-in outcome listener failed", exc_info=True)


OUTCOME: contextvars.ContextVar[SignInOutcome | None] = contextvars.ContextVar(
    "toolbench_sign_in_outcome", default=None)


def current_outcome() -> SignInOutcome | None:
    """The outcome of the sign-in whose authorizer is running (None outside one)."""
    return OUTCOME.get()


class SignInTimeout(TimeoutError):
    """Nobody finished the sign-in within its timeout."""


class SignInUnavailable(RuntimeError):
    """Neither a loopback listener nor a way to paste is available here."""


async def wait_for_redirect(authorization_url: str, redirect_uri: str, timeout: float, *,
                            paste: Paste | None = None, refused: Note | None = None,
                            listening: Note | None = None,
                            received: Callable[[str, str], None] | None = None
                            ) -> tuple[str, str]:
    """The redirect URL and how it came (``"loopback"`` or ``"pasted"``), within ``timeout``.

    ``paste`` yields pasted texts; each refused one is reported to ``refused`` (the message
    names the rule, never the text) and the wait goes on. ``listening`` is told whether the
    loopback listener runs (or why not); ``received`` gets the URL and how it came, before
    the other way is stopped.
    """
    found: list[tuple[str, str]] = []
    async with contextlib.AsyncExitStack() as stack:
        listener: Loopback | None = None
        try:
            listener = await stack.enter_async_context(Loopback(redirect_uri))
        except LoopbackError as exc:
            if listening is not None:
                listening(str(exc))
            if paste is None:
                raise SignInUnavailable(
                    f"nothing can receive this sign-in's redirect ({exc}), and there is no "
                    "way to paste it here; pass `authorize=` instead") from exc
        else:
            if listening is not None:
                listening("")

        async def from_loopback(scope: anyio.CancelScope, running: Loopback) -> None:
            found.append((await running.received(), "loopback"))
            if received is not None:
                received(*found[0])
            scope.cancel()

        async def from_paste(scope: anyio.CancelScope, ask: Paste) -> None:
            while True:
                text = await ask()
                try:
                    url = check_callback(text, authorization_url, redirect_uri)
                except CallbackRefused as exc:
                    if refused is not None:
                        refused(str(exc))
                    continue
                found.append((url, "pasted"))
                if received is not None:
                    received(*found[0])
                scope.cancel()
                return

        with anyio.move_on_after(timeout):
            async with anyio.create_task_group() as group:
                if listener is not None:
                    group.start_soon(from_loopback, group.cancel_scope, listener)
                if paste is not None:
                    group.start_soon(from_paste, group.cancel_scope, paste)
    if found:
        return found[0]
    raise SignInTimeout(f"nobody finished signing in within {timeout:g} s")


def _stdin_lines(stream: TextIO) -> Paste:
    async def read() -> str:
        line = await anyio.to_thread.run_sync(stream.readline, abandon_on_cancel=True)
        if not line:  # end of input: nothing more will be pasted, wait for the loopback
            await anyio.sleep_forever()
        return str(line)

    return read


async def terminal_authorizer(authorization_url: str, redirect_uri: str, timeout: float, *,
                              out: TextIO | None = None, stdin: TextIO | None = None) -> str:
    """The terminal's sign-in: print the link, wait for the loopback redirect or a pasted
    address on stdin (when stdin is a terminal, or ``stdin`` is given), within ``timeout``."""
    out = out if out is not None else sys.stderr
    source = stdin
    if source is None and sys.stdin is not None and sys.stdin.isatty():
        source = sys.stdin

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    def listening(why: str) -> None:
        # The link is shown only once the loopback listener is up (or known to be missing):
        # a browser that follows it at once must not find the redirect address refused.
        say("To sign in, open this address in a browser:\n\n    " + authorization_url + "\n")
        if source is not None:
            say("When the browser shows an address that toolbench cannot reach (another "
                "machine), paste that whole address here and press Enter.")
        say(f"(waiting at most {timeout:g} s)")
        if why:
            say(f"(no loopback listener: {why})")

    url, how = await wait_for_redirect(
        authorization_url, redirect_uri, timeout,
        paste=_stdin_lines(source) if source is not None else None,
        refused=lambda why: say(f"Not taken: {why}. Paste again."),
        listening=listening)
    error = callback_error(url)
    say(f"The authorization server answered: {error}" if error else
        f"Received the sign-in ({'browser redirect' if how == 'loopback' else 'pasted'}).")
    return url
