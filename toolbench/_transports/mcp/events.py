"""What a connection tells its listeners: a list changed, or it is connected again.

An ``McpClient`` keeps one ``Events`` book. A listener is ``await callback(server_name)``,
registered per kind:

- ``"tools"``, ``"resources"``, ``"prompts"``: the server said that list changed
  (``notifications/*/list_changed`` on a handshake-era connection, an event on the
  ``subscriptions/listen`` stream on a 2026-07-28 one);
- ``"connected"``: a connection became ready, the first connect and every reconnect alike
  (after a loss, a failure or a close); ``McpClient.connects`` counts them. It is the one
  event whoever keeps a copy of the server's lists re-lists on: the pegboard (tools), and the
  bench (tools, resources and prompts, exactly as after a ``list_changed``), so a restarted
  server's catalog follows it. A listener added after a connect hears the next one.

Firing is coalesced per kind (DESIGN.md, "The trust boundary"): while a round of one kind's
listeners runs, further fires only mark one more round as due, so a burst of notifications
costs at most one round in flight plus one pending. Rounds run in the connection's task
group (a listener typically lists again, which needs the loop), and a listener's exception is
logged, never raised into the transport. ``fire`` returns an event that is set once a round
that started after it has ended (or the rounds were cut short): the lifecycle awaits the
``connected`` one, bounded, before the request that reconnected is sent.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Literal, get_args

import anyio
import anyio.abc

logger = logging.getLogger(__name__)

EventKind = Literal["tools", "resources", "prompts", "connected"]
EVENT_KINDS: tuple[EventKind, ...] = get_args(EventKind)
Listener = Callable[[str], Awaitable[None]]


class Events:
    """Listeners per kind, and their coalesced rounds (touched on the loop only)."""

    def __init__(self, server: str,
                 on_fire: Callable[[EventKind], None] | None = None) -> None:
        self.server = server
        self._on_fire = on_fire  # told first, even with no listener (the cache forgets)
        self._listeners: dict[EventKind, list[Listener]] = {kind: [] for kind in EVENT_KINDS}
        self._running: set[EventKind] = set()
        self._pending: set[EventKind] = set()
        self._waiting: dict[EventKind, list[anyio.Event]] = {kind: [] for kind in EVENT_KINDS}
        self.rounds: dict[EventKind, int] = dict.fromkeys(EVENT_KINDS, 0)
        """How many rounds of each kind have started (for tests and benchmarks)."""

    def add(self, kind: EventKind, callback: Listener) -> Callable[[], None]:
        """Register ``callback`` for ``kind``; returns the function that removes it again."""
        if kind not in self._listeners:
            raise ValueError(f"invalid event kind {kind!r}: one of {list(EVENT_KINDS)}")
        if not callable(callback):
            raise TypeError(f"a {kind} listener must be callable, not {callback!r}")
        self._listeners[kind].append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners[kind].remove(callback)

        return remove

    def fire(self, kind: EventKind, task_group: anyio.abc.TaskGroup | None
             ) -> anyio.Event | None:
        """Run ``kind``'s listeners in ``task_group``, coalesced (see the module docstring).

        Returns an event set once a round that started after this call has ended (None when
        there is nothing to run): whoever must not go on before the listeners have, waits on
        it (bounded).
        """
        if self._on_fire is not None:
            self._on_fire(kind)
        if task_group is None or not self._listeners[kind]:
            return None
        done = anyio.Event()
        self._waiting[kind].append(done)
        if kind in self._running:
            self._pending.add(kind)
            return done
        self._running.add(kind)
        task_group.start_soon(self._rounds, kind)
        return done

    async def _rounds(self, kind: EventKind) -> None:
        covered: list[anyio.Event] = []
        try:
            while True:
                self._pending.discard(kind)
                covered, self._waiting[kind] = self._waiting[kind], []
                self.rounds[kind] += 1
                async with anyio.create_task_group() as round_group:
                    for callback in list(self._listeners[kind]):
                        round_group.start_soon(self._run, kind, callback)
                for done in covered:
                    done.set()
                covered = []
                if kind not in self._pending:
                    return
        finally:
            self._running.discard(kind)
            for done in covered + self._waiting[kind]:  # cut short: no round is left
                done.set()
            self._waiting[kind] = []

    async def _run(self, kind: EventKind, callback: Listener) -> None:
        try:
            await callback(self.server)
        except Exception:
            logger.exception("%s listener for %s raised", kind, self.server)
