"""The ``Recovery`` object alone (``toolbench/_transports/mcp/recovery.py``), with a stand-in
connection: one reconnect at a time, a caller's deadline, the retry window and its doubling.

tests/test_recovery.py proves the same on real servers that go away and come back.
"""

from __future__ import annotations

import re

import anyio
import pytest

from toolbench._core.errors import Disposition, Unreachable
from toolbench._transports.mcp.recovery import BACKOFF_FIRST_S, BACKOFF_MAX_S, Recovery
from toolbench._transports.mcp.session import Status

BOUND = 10.0


class Connection:
    """What a ``Recovery`` serves: a status, and one reconnect that waits to be let through."""

    def __init__(self, status: Status = Status.LOST) -> None:
        self.name = "srv"
        self.status = status
        self.last_error: str | None = "gone"
        self.reconnects = 0
        self.let_through = anyio.Event()
        self.comes_back = True
        self.lock = anyio.Lock()

    def _primitives(self) -> anyio.Lock:
        return self.lock

    async def _reconnect(self) -> None:
        self.reconnects += 1
        await self.let_through.wait()
        if self.comes_back:
            self.status, self.last_error = Status.CONNECTED, None
        else:
            self.status, self.last_error = Status.FAILED, "refused again"


def _next_attempt(error: Unreachable) -> float:
    found = re.search(r"next reconnect attempt is in ([0-9.]+) s", error.detail)
    assert found, error.detail
    return float(found.group(1))


def test_requests_meanwhile_wait_on_the_one_attempt() -> None:
    async def main() -> Connection:
        conn = Connection()
        recovery = Recovery(conn)
        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as group:
                for _ in range(5):
                    group.start_soon(recovery.recover, None, anyio.current_time() + BOUND, BOUND)
                await anyio.sleep(0.05)
                conn.let_through.set()
        return conn

    conn = anyio.run(main)
    assert conn.reconnects == 1 and conn.status is Status.CONNECTED


def test_a_caller_past_its_deadline_gives_up_and_the_attempt_goes_on() -> None:
    async def main() -> tuple[Unreachable, Connection]:
        conn = Connection()
        recovery = Recovery(conn)
        with pytest.raises(Unreachable, match="still connecting after") as info:
            await recovery.recover(None, anyio.current_time() + 0.05, 0.05)
        conn.let_through.set()
        with anyio.fail_after(BOUND):  # the next request finds the same attempt, now done
            await recovery.recover(None, anyio.current_time() + BOUND, BOUND)
        return info.value, conn

    error, conn = anyio.run(main)
    assert error.disposition is Disposition.DID_NOT_HAPPEN
    assert "nothing was sent" in error.detail
    assert conn.reconnects == 1 and conn.status is Status.CONNECTED


def test_a_failed_attempt_is_the_callers_error() -> None:
    async def main() -> None:
        conn = Connection()
        conn.comes_back = False
        conn.let_through.set()
        with anyio.fail_after(BOUND), pytest.raises(Unreachable, match="refused again"):
            await Recovery(conn).recover(None, anyio.current_time() + BOUND, BOUND)

    anyio.run(main)


def test_within_the_retry_window_a_request_fails_fast_and_says_when() -> None:
    async def main() -> tuple[list[float], Connection]:
        conn = Connection(Status.FAILED)
        recovery = Recovery(conn)
        waits = []
        for _ in range(8):  # 0.5, 1, 2, ... doubling, up to the cap
            recovery.failed()
            with pytest.raises(Unreachable, match="is failed: gone") as info:
                await recovery.recover(None, anyio.current_time() + BOUND, BOUND)
            waits.append(_next_attempt(info.value))
        recovery.succeeded()  # a connection became ready: the window is closed
        conn.let_through.set()
        with anyio.fail_after(BOUND):
            await recovery.recover(None, anyio.current_time() + BOUND, BOUND)
        return waits, conn

    waits, conn = anyio.run(main)
    assert 0 < waits[0] <= BACKOFF_FIRST_S
    assert BACKOFF_FIRST_S < waits[1] <= 2 * BACKOFF_FIRST_S
    assert waits == sorted(waits) and BACKOFF_MAX_S / 2 < waits[-1] <= BACKOFF_MAX_S
    assert conn.reconnects == 1  # no attempt inside the window


def test_a_new_server_connects_whatever_the_window() -> None:
    async def main() -> Connection:
        conn = Connection(Status.NEW)
        recovery = Recovery(conn)
        recovery.failed()
        conn.let_through.set()
        with anyio.fail_after(BOUND):
            await recovery.recover(None, anyio.current_time() + BOUND, BOUND)
        return conn

    assert anyio.run(main).reconnects == 1
