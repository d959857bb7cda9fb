"""Recovering a lost or failed connection: the retry window, and the one reconnect under way.

A ``lost`` or ``failed`` server is reconnected by its next request, not by a timer: nothing
runs while nobody asks. :class:`Recovery` decides *when* and *how many at once*:

- **One attempt at a time.** The first request to find the server ``new``, ``lost`` or
  ``failed`` starts a reconnect in a task of its own (``attempt.spawn``, on the shared loop,
  bounded by ``connect_timeout``); every request meanwhile waits on that same attempt. A
  caller whose own timeout passes first gives up waiting (nothing was sent, ``Unreachable``),
  and the attempt goes on for the next request.
- **A retry window.** After a failed (re)connect, requests fail fast for ``BACKOFF_FIRST_S``,
  the window doubling with each failure up to ``BACKOFF_MAX_S``, and say when the next
  attempt is due; a success closes it.

*What* a reconnect is (retire the old connection, open a new one, say why it failed) is the
lifecycle's (``toolbench._transports.mcp.lifecycle``), which owns the connection and its
status; this object reads them through :class:`Reconnecting` and never changes them.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

import anyio

from toolbench._core.errors import Unreachable
from toolbench._core.html import seconds_text
from toolbench._transports.mcp.attempt import spawn
from toolbench._transports.mcp.session import Status

if TYPE_CHECKING:
    from toolbench._core.ids import ToolId

BACKOFF_FIRST_S = 0.5
"""After a failed (re)connect, calls fail fast this long before the next attempt..."""
BACKOFF_MAX_S = 30.0
"""...and the wait doubles with each failure up to this (a server that is back is found)."""


class Reconnecting(Protocol):
    """The connection a :class:`Recovery` serves (the lifecycle): read, and reconnected."""

    name: str

    @property
    def status(self) -> Status:
        """Where the connection stands."""
        ...

    @property
    def last_error(self) -> str | None:
        """Why it is not connected, if it is not."""
        ...

    def _primitives(self) -> anyio.Lock:
        """The connection's lock, made on (and binding it to) the running loop."""
        ...

    async def _reconnect(self) -> None:
        """One (re)connect, under the lock: its outcome is in ``status`` and ``last_error``."""
        ...


class Recovery:
    """The retry window of one connection, and the reconnect attempt under way (at most one)."""

    def __init__(self, owner: Reconnecting) -> None:
        self._owner = owner
        self._backoff = 0.0  # seconds of the current retry window; 0 after a success
        self._retry_at = 0.0  # loop time before which a failed/lost server is not retried
        self._attempt: anyio.Event | None = None  # set when the reconnect under way ends
        self._task: asyncio.Task[None] | None = None  # kept: asyncio holds tasks weakly

    def failed(self) -> None:
        """Open the retry window: 0.5 s after the first failure, doubling up to 30 s."""
        self._backoff = min(BACKOFF_MAX_S, self._backoff * 2) if self._backoff else BACKOFF_FIRST_S
        self._retry_at = anyio.current_time() + self._backoff

    def succeeded(self) -> None:
        """A connection became ready: the next failure starts the window afresh."""
        self._backoff = self._retry_at = 0.0

    async def recover(self, tool: ToolId | None, deadline: float, limit: float | None) -> None:
        """Wait, until ``deadline``, for the reconnect under way, starting one if none is.

        Raises:
            Unreachable: within the retry window (nothing was sent; it says when the next
                attempt is due), still connecting at ``deadline`` (the attempt goes on), or
                the attempt failed.
        """
        owner = self._owner
        attempt = self._attempt
        if attempt is None:
            wait = self._retry_at - anyio.current_time()
            if owner.status is not Status.NEW and wait > 0:
                why = owner.last_error or "it is not connected"
                raise Unreachable(
                    f"server {owner.name!r} is {owner.status}: {why}\n(nothing was sent; the "
                    f"next reconnect attempt is in {wait:.1f} s)", tool=tool
                )
            attempt = self._attempt = anyio.Event()
            owner._primitives()
            self._task = spawn(self._run(attempt), f"toolbench-reconnect-{owner.name}")
        with anyio.move_on_at(deadline):
            await attempt.wait()
        if not attempt.is_set():
            raise Unreachable(
                f"server {owner.name!r} is still connecting after the call's timeout of "
                f"{seconds_text(limit)} s; nothing was sent (the attempt goes on)", tool=tool
            )
        if owner.status is not Status.CONNECTED:
            why = owner.last_error or f"server {owner.name!r} is {owner.status}"
            raise Unreachable(why, tool=tool)

    async def _run(self, attempt: anyio.Event) -> None:
        """The attempt's own task, so no caller's timeout can cut the reconnect short."""
        try:
            await self._owner._reconnect()
        finally:
            self._attempt = None
            self._task = None
            attempt.set()
