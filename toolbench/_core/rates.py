"""A rate of calls (``"10/s"``, ``"600/min"``) and the token bucket that keeps to it.

Why a reservation and not a polling bucket: the shared loop runs every server's calls, so a
call waiting its turn must cost the loop nothing but one timer. :meth:`TokenBucket.reserve`
gives each call the next free moment at once (fair, in arrival order) and says how long to
sleep; a call whose turn would come after its own deadline takes no turn and is told so
(the caller makes that ``Unreachable``: nothing was sent). One bucket per server: a slow
rate on one server never holds a neighbour's calls.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*/\s*([a-z]+)\s*$")
_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0,
          "h": 3600.0, "hour": 3600.0}
RATE_RULE = ('a rate is a text "N/s", "N/min" or "N/h" with N a number above 0, e.g. '
             '"10/s" or "600/min" (None: no limit)')


@dataclass(frozen=True, slots=True)
class Rate:
    """Calls per second, and the text it was given as (for messages)."""

    per_second: float
    text: str


def parse_rate(value: object, what: str = "rate") -> Rate | None:
    """``value`` as a Rate (None stays None), or ``ValueError`` naming the value and the rule."""
    if value is None:
        return None
    if isinstance(value, Rate):
        return value
    found = _RATE_RE.match(value.lower()) if isinstance(value, str) else None
    unit = _UNITS.get(found.group(2).rstrip("s") or "s") if found else None
    if not isinstance(value, str) or found is None or unit is None:
        raise ValueError(f"invalid {what} {value!r}: {RATE_RULE}")
    count = float(found.group(1))
    per_second = count / unit
    if not (count > 0 and math.isfinite(per_second) and per_second > 0):
        raise ValueError(f"invalid {what} {value!r}: {RATE_RULE}")
    return Rate(per_second, value.strip())


class TokenBucket:
    """Turns at ``rate``, one at a time (a burst of one): the calls of one server or batch.

    Touched only on the shared loop, so it needs no lock.
    """

    def __init__(self, rate: Rate) -> None:
        self.rate = rate
        self._interval = 1.0 / rate.per_second
        self._next = -math.inf

    def reserve(self, now: float, deadline: float) -> float | None:
        """Take the next free turn: the seconds to wait for it (0: go now), or None when it
        would come after ``deadline`` (then no turn is taken). ``now`` and ``deadline`` are
        on one clock (the loop's)."""
        at = now if now >= self._next else self._next
        if at > deadline:
            return None
        self._next = at + self._interval
        return at - now
