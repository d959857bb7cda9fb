"""Retries that cannot double a call, and the turns a rate gives: the rules of both.

Why only ``Unreachable``: a retry must never run a tool twice, so only a failure that says
nothing ran (``did_not_happen``) may be repeated. Of those, a ``Refused`` (bad arguments, an
unknown method, a blocked tool) would be refused again: retrying it only costs time. What is
left is the server being busy or away: an HTTP 429 or 503 answered before it ran anything
(``toolbench._transports.wire.busy``), a connection refused while reconnecting, a queue
(``max_concurrent`` or a rate) that ran past its wait. ``in_doubt`` is never retried (only
``map(..., retry_in_doubt=True)`` repeats it, and only on resume), ``landed`` never.

The wait before a retry is the server's ``Retry-After`` when it sent one, capped at
``max_retry_wait``; otherwise exponential backoff with full jitter from 0.5 s (AWS's "full
jitter": a uniform draw up to 0.5, 1, 2, 4 ... s, so many callers do not come back at once).
Every wait stays inside the call's own timeout, and so does room for the answer: a retry is
made only when, after its wait, at least twice the failed attempt's time (and never under
``MIN_ATTEMPT_S``) is left. An attempt sent with a few milliseconds to spare would mostly
time out after it was sent, turning a call known not to have happened into one in doubt.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from toolbench._core.checks import is_seconds, is_whole
from toolbench._core.errors import ToolError, Unreachable
from toolbench._core.html import seconds_text
from toolbench._core.rates import Rate, TokenBucket, parse_rate

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from toolbench._bench.servers.servers import Servers
    from toolbench._core.ids import ToolId

MAX_RETRY_WAIT_S = 60.0
"""The longest a retry waits by default, whatever ``Retry-After`` says."""
BACKOFF_BASE_S = 0.5
"""The first backoff's ceiling; each retry doubles it (full jitter below it)."""
MIN_ATTEMPT_S = 0.1
"""The least time left for an attempt's answer, after the wait, for a retry to be made."""
_jitter = random.Random()


def check_retries(value: object) -> int:
    """``retries`` as an int of 0 or more, or ``ValueError`` naming the value and the rule."""
    if not is_whole(value, 0):
        raise ValueError(f"invalid retries {value!r}: a whole number, 0 or more (how many "
                         "times a call that did not happen is tried again; 0: never)")
    return value


def check_max_retry_wait(value: object) -> float:
    if not is_seconds(value):
        raise ValueError(f"invalid max_retry_wait {value!r}: a positive number of seconds "
                         "(finite): the longest wait before a retry")
    return float(value)


def retryable(error: ToolError) -> bool:
    """Whether a retry could help and cannot double the call (see the module's docstring)."""
    return isinstance(error, Unreachable)


def room_for_attempt(after_failed_s: float) -> float:
    """The time an attempt needs left, after its wait, for a retry to be worth sending (see
    the module's docstring): twice what the failed attempt took, at least ``MIN_ATTEMPT_S``."""
    return max(2.0 * after_failed_s, MIN_ATTEMPT_S)


def retry_wait(error: ToolError, attempt: int, max_wait: float) -> float:
    """Seconds to wait before the retry that follows attempt ``attempt`` (1-based)."""
    asked = error.retry_after
    if asked is not None:
        return min(asked, max_wait)
    return _jitter.uniform(0.0, min(max_wait, BACKOFF_BASE_S * 2.0 ** (attempt - 1)))


class Pacing:
    """The token buckets of the bench's servers (``connect(..., rate=)``), made on first use.

    Keyed by the server's row: a server connected again (with another rate, or none) gets
    a new bucket. Touched on the shared loop only.
    """

    def __init__(self, servers: Servers) -> None:
        self._servers = servers
        self._buckets: dict[str, tuple[object, TokenBucket | None]] = {}

    def bucket(self, server: str) -> TokenBucket | None:
        """The server's own bucket, or None when it has no rate."""
        row = self._servers.row(server)
        found = self._buckets.get(server)
        if found is not None and found[0] is row:
            return found[1]
        options: Mapping[str, object] = row.given[1] if row and row.given else {}
        rate = parse_rate(options.get("rate"))
        made = None if rate is None else TokenBucket(rate)
        self._buckets[server] = (row, made)
        return made


def batch_buckets(rate: object, servers: Iterable[str]) -> dict[str, TokenBucket]:
    """A ``map``/``compare`` call's own rate: one bucket per server of the batch."""
    parsed: Rate | None = parse_rate(rate)
    if parsed is None:
        return {}
    return {server: TokenBucket(parsed) for server in servers}


def take_turn(buckets: Iterable[TokenBucket], now: float, deadline: float, server: str,
              tool: ToolId) -> float:
    """Take a turn in every bucket (the server's, the batch's): the seconds to wait for it.

    Not a coroutine: a call whose turn is already there (a rate that does not limit) costs
    a reservation, not a coroutine, a sleep and a pass of the loop; the caller sleeps only
    when there is something to wait for.

    Raises:
        Unreachable: the turn would come after ``deadline`` (the loop's clock); nothing was
            sent, and no turn was taken.
    """
    at = now
    for bucket in buckets:
        wait = bucket.reserve(at, deadline)
        if wait is None:
            raise Unreachable(
                f"not sent: server {server!r} is paced at {bucket.rate.text}, and this call's "
                f"turn would come after its timeout ({seconds_text(max(0.0, deadline - now))}"
                " s left)", tool=tool)
        at += wait
    return at - now
