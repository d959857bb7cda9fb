"""A toolset's lanes, slots and locks, so that one slow backend starves no one.

A *lane* is a backend some requests need, with its own cap on how many of them run at once.
An accepted request first waits for its lane, and only then takes one of the toolset's
``max_concurrent`` slots (:meth:`Lanes.admitted`): a queue on a busy lane therefore never
holds slots that requests for other lanes could use. Both waits are bounded by the request's
timeout, and what runs out there did not happen (``Unreachable``: nothing ran).
:meth:`Lanes.exclusive` runs one block at a time per key, toolset-wide.

The semaphores and locks are anyio primitives, which belong to the event loop they were made
on: a :class:`Lanes` makes them per loop, and refuses a second loop while the first is in use.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel

from toolbench._core import html as _html
from toolbench._core.checks import is_whole
from toolbench._core.errors import Refused, Unreachable
from toolbench._core.ids import ToolId

LaneChoice = str | Callable[[dict[str, Any]], "str | None"] | None
"""A tool's lane: a declared lane's name, a function of the request's data that names one (or
None), or None (no lane)."""


def check_cap(value: object, what: str) -> int | None:
    """A cap (``max_concurrent``): a positive int, or None for no cap."""
    if value is None:
        return None
    if not is_whole(value):
        raise ValueError(
            f"{what} must be a positive int or None (no cap), not {value!r}"
        )
    return value


@dataclass(slots=True)
class _Gates:
    """The semaphores and locks of one event loop (anyio primitives belong to the loop)."""

    loop: object
    slots: anyio.Semaphore | None
    lanes: dict[str, anyio.Semaphore] = field(default_factory=dict)
    locks: dict[Hashable, tuple[anyio.Lock, int]] = field(default_factory=dict)


def _gate(semaphore: anyio.Semaphore | None) -> contextlib.AbstractAsyncContextManager[Any]:
    return semaphore if semaphore is not None else contextlib.nullcontext()


class Lanes:
    """The declared lanes of one toolset, its slots and locks, and the requests in flight."""

    def __init__(self, address: str, max_concurrent: int | None) -> None:
        self._address = address
        self._max_concurrent = max_concurrent
        self._caps: dict[str, int | None] = {}  # lane -> its cap (None: a label only)
        self._gates_now: _Gates | None = None
        self._in_flight = 0

    # -- declaring and choosing -------------------------------------------------------------
    def declare(self, name: str, max_concurrent: int | None) -> None:
        """A new lane: at most ``max_concurrent`` of its requests run at once (None: no cap)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a lane name is a non-empty string, not {name!r}")
        if name in self._caps:
            raise ValueError(f"lane {name!r} is already declared on toolset {self._address!r}")
        self._caps[name] = check_cap(max_concurrent, f"lane {name!r} max_concurrent")

    def names(self) -> list[str]:
        """The declared lanes, sorted."""
        return sorted(self._caps)

    def check_choice(self, tool: str, lane: LaneChoice) -> None:
        """At registration: ``lane`` is a declared lane, a function of the data, or None."""
        if isinstance(lane, str):
            if lane not in self._caps:
                raise ValueError(
                    f"tool {tool!r}: lane {lane!r} is not declared; declare it first with "
                    f"ts.lane({lane!r}, max_concurrent=N) (declared: {self.names()})"
                )
        elif lane is not None and not callable(lane):
            raise TypeError(
                f"tool {tool!r}: lane must be a declared lane name, a function of the data, "
                f"or None, not {lane!r}"
            )

    def choose(self, tool: str, choice: LaneChoice, data: dict[str, Any],
               tid: ToolId | None) -> str | None:
        """The lane of one request: ``choice`` itself, or what its function says of ``data``.

        Raises:
            Refused: the function raised, or named a lane that is not declared (nothing ran).
        """
        if choice is None or isinstance(choice, str):
            return choice
        try:
            lane = choice(data)
        except Exception as exc:
            raise Refused(
                f"the lane function of {tool!r} raised {type(exc).__name__}: "
                f"{_html.shorten(str(exc), 200)}; nothing ran",
                tool=tid,
            ) from exc
        if lane is not None and (not isinstance(lane, str) or lane not in self._caps):
            raise Refused(
                f"the lane function of {tool!r} chose {_html.shorten(repr(lane), 80)}, "
                f"which is not a declared lane (declared: {self.names()}); nothing ran",
                tool=tid,
            )
        return lane

    # -- admitting --------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        """Accepted requests waiting for a lane or slot, or running."""
        return self._in_flight

    @contextlib.asynccontextmanager
    async def admitted(self, tool: str, lane: str | None, tid: ToolId | None,
                       timeout: float | None) -> AsyncIterator[float]:
        """Hold ``lane`` and then a slot while the block runs; gives the request's deadline.

        Raises:
            Unreachable: no lane or slot came free within ``timeout`` (nothing ran).
        """
        gates = self._gates()
        lane_gate: anyio.Semaphore | None = None
        cap = self._caps[lane] if lane is not None else None
        if lane is not None and cap is not None:
            lane_gate = gates.lanes.get(lane)
            if lane_gate is None:
                lane_gate = gates.lanes[lane] = anyio.Semaphore(cap)
        deadline = anyio.current_time() + timeout if timeout is not None else math.inf
        self._in_flight += 1
        try:
            async with contextlib.AsyncExitStack() as held:
                # Waiting for the lane and a slot is before anything runs: a timeout there
                # did not happen (safe to repeat), unlike one while the handler runs.
                with anyio.move_on_at(deadline) as queued:
                    await held.enter_async_context(_gate(lane_gate))
                    await held.enter_async_context(_gate(gates.slots))
                if queued.cancelled_caught:
                    where = f"lane {lane!r} and " if lane_gate is not None else ""
                    raise Unreachable(
                        f"{tool!r} waited {_html.seconds_text(timeout)} s for {where}a free slot "
                        f"on "
                        f"{self._address!r}; nothing ran", tool=tid)
                yield deadline
        finally:
            self._in_flight -= 1

    # -- locks ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def exclusive(self, key: Hashable) -> AsyncIterator[None]:
        """One block at a time per ``key``; the lock is dropped when nobody holds or awaits it."""
        try:
            hash(key)
        except TypeError as exc:
            raise TypeError(f"an exclusive() key must be hashable, not {key!r}") from exc
        locks = self._gates().locks
        lock, users = locks.get(key, (None, 0))
        if lock is None:
            lock = anyio.Lock()
        locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock_now, users_now = locks[key]
            if users_now <= 1:
                del locks[key]
            else:
                locks[key] = (lock_now, users_now - 1)

    def locked_keys(self) -> list[Hashable]:
        """The keys whose lock someone holds or awaits on the current loop's gates."""
        gates = self._gates_now
        return list(gates.locks) if gates is not None else []

    def _gates(self) -> _Gates:
        """This loop's gates; a toolset idle on one loop may move to another (a new notebook
        loop, a new test), but one in use on two loops at once is a mistake we name."""
        loop = anyio.lowlevel.current_token().native_token
        gates = self._gates_now
        if gates is not None and gates.loop is loop:
            return gates
        if gates is not None and (self._in_flight or gates.locks):
            raise RuntimeError(
                f"toolset {self._address!r} is in use on another event loop; use one loop at a "
                "time"
            )
        slots = anyio.Semaphore(self._max_concurrent) if self._max_concurrent else None
        self._gates_now = _Gates(loop, slots)
        return self._gates_now
