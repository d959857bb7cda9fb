"""One connection attempt (``toolbench/_transports/mcp/attempt.py``): what it tells its owner,
the grace a server writing garbage gets, and the owner task's start and context.

tests/test_mcp.py and tests/test_mcp_lifecycle.py run the same through real connections.
"""

from __future__ import annotations

import contextvars

import anyio
import pydantic

from toolbench._transports.mcp.attempt import (
    GARBAGE_GRACE_S,
    SETTLING,
    Conn,
    Started,
    abandon,
    spawn,
)
from toolbench._transports.mcp.session import SEND_CHECK


class Owner:
    def __init__(self) -> None:
        self.told: list[tuple[Conn, str]] = []

    def _lost(self, conn: Conn, why: str) -> None:
        self.told.append((conn, why))


def test_end_of_stream_is_a_loss_only_once_ready_and_not_closing() -> None:
    async def main() -> Owner:
        owner = Owner()
        conn = Conn(owner)
        conn.on_eof()  # still starting: the connect itself reports the failure
        conn.ready = True
        conn.on_eof()
        conn.closing = True
        conn.on_eof()  # we closed it: not a loss
        conn.lose("an oversized message")
        return owner

    owner = anyio.run(main)
    assert [why for _, why in owner.told] == ["the server closed the connection",
                                              "an oversized message"]


def test_garbage_on_stdout_shortens_the_connect_and_is_kept_once() -> None:
    async def main() -> tuple[Conn, float, Conn]:
        conn = Conn(Owner())
        with anyio.CancelScope(deadline=anyio.current_time() + 60) as conn.starting:
            try:  # what the stdio reader hands on for a line that is not JSON-RPC
                pydantic.TypeAdapter(int).validate_python("Loading model...")
            except pydantic.ValidationError as exc:
                conn.on_garbage(exc)
            conn.on_garbage(ValueError("second line"))  # the first one is what is shown
            left = conn.starting.deadline - anyio.current_time()
        other = Conn(Owner())  # not starting: no deadline to shorten
        other.on_garbage(ValueError("two\nlines " + "x" * 500))
        return conn, left, other

    conn, left, other = anyio.run(main)
    assert conn.garbage == "'Loading model...'"  # the offending input, quoted
    assert 0 < left <= GARBAGE_GRACE_S
    assert other.garbage is not None and "\n" not in other.garbage
    assert other.garbage.startswith("two lines") and len(other.garbage) <= 200


def test_started_says_whether_the_owner_got_ready() -> None:
    async def main() -> tuple[bool, bool]:
        ready, ended = Started(), Started()
        ready.started()
        ready.ended()  # too late: it was ready
        ended.ended()
        return await ready.future, await ended.future

    assert anyio.run(main) == (True, False)


def test_a_spawned_task_does_not_inherit_the_callers_check_or_settling() -> None:
    seen: dict[str, object] = {}

    async def owner_task() -> None:
        seen["check"], seen["settling"] = SEND_CHECK.get(), SETTLING.get()
        seen["other"] = OTHER.get()

    async def main() -> None:
        SEND_CHECK.set(lambda: None)
        SETTLING.set(True)
        OTHER.set("kept")
        task = spawn(owner_task(), "toolbench-test")
        assert task.get_name() == "toolbench-test"
        with anyio.fail_after(10):
            await task

    anyio.run(main)
    assert seen == {"check": None, "settling": False, "other": "kept"}


OTHER: contextvars.ContextVar[str] = contextvars.ContextVar("other", default="")


def test_abandon_stops_the_attempt_without_waiting() -> None:
    async def main() -> Conn:
        conn = Conn(Owner())
        abandon(conn)
        return conn

    conn = anyio.run(main)
    assert conn.closing and conn.stop.is_set() and conn.scope.cancel_called
    assert not conn.done.is_set()  # nobody waited for the owner to end
