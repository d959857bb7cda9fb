"""HTTP 429 and 503: a server that answered "not now" before running anything.

Why here: the SDK's streamable HTTP client turns any status of 400 and above into the
JSON-RPC error -32603 "Server returned an error response" (``mcp/client/streamable_http.py``,
``_handle_post_request``), so by the time the caller sees it the one fact that matters, that
the server ran nothing and said when to come back, is gone; toolbench would read it as the
server's own error reply, ``TimedOut``/``in_doubt``. The status is read where it enters: an
``httpx2`` response hook (:meth:`BusyAnswers.note`) remembers, per JSON-RPC request id, the
status and the server's ``Retry-After``; the error mapping (``toolbench._transports.mcp.calls``)
asks :meth:`BusyAnswers.pop` before anything else, and makes it ``Unreachable``.

A ``Retry-After`` is the server's word: seconds or an HTTP date (RFC 9110, 10.2.3). Anything
else (garbage, a negative number, a date in the past) is ignored, and the detail says so; a
very long one is kept as said (the retry logic caps its wait at ``max_retry_wait``).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx2

BUSY_STATUSES = {429: "Too Many Requests", 503: "Service Unavailable"}
"""The statuses that say the server did not run the request, and may later."""
MAX_REMEMBERED = 1024
"""The most busy answers kept unclaimed (a request whose error was never mapped, say)."""
MAX_HEADER_CHARS = 64
"""A ``Retry-After`` longer than this is not read, only noted (it is the server's text)."""


@dataclass(frozen=True, slots=True)
class BusyAnswer:
    """One 429 or 503: its status, and the wait the server asked for (seconds, or None)."""

    status: int
    retry_after: float | None
    note: str | None
    """Why a ``Retry-After`` that was sent is not used, if it is not."""

    def describe(self) -> str:
        """``HTTP 429 Too Many Requests (Retry-After: 2 s)``, for an error's detail."""
        text = f"HTTP {self.status} {BUSY_STATUSES.get(self.status, '')}".rstrip()
        if self.retry_after is not None:
            text += f" (Retry-After: {self.retry_after:.3g} s)"
        elif self.note is not None:
            text += f" ({self.note})"
        return text


def parse_retry_after(value: str | None, now: float) -> tuple[float | None, str | None]:
    """A ``Retry-After`` header as seconds from ``now`` (a POSIX time), and a note when it
    is present but unusable. Never raises: the header is the server's text."""
    if value is None:
        return None, None
    text = value.strip()
    shown = json.dumps(text[:MAX_HEADER_CHARS])
    if not text or len(text) > MAX_HEADER_CHARS:
        return None, f"ignored a Retry-After of {shown}: not seconds or an HTTP date"
    if text.isascii() and text.isdigit():
        return float(int(text)), None
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        if not math.isfinite(number) or number < 0:
            return None, f"ignored a Retry-After of {shown}: not a wait in seconds"
        return number, None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None, f"ignored a Retry-After of {shown}: not seconds or an HTTP date"
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        return None, f"ignored a Retry-After of {shown}: an HTTP date is in GMT"
    wait = when.timestamp() - now
    return max(0.0, wait), None


class BusyAnswers:
    """One connection's unclaimed 429/503 answers, by JSON-RPC request id (on the loop)."""

    def __init__(self) -> None:
        self._answers: dict[str, BusyAnswer] = {}

    async def note(self, response: httpx2.Response) -> None:
        """The HTTP client's response hook: remember a 429 or 503 to a JSON-RPC request."""
        status = response.status_code
        if status not in BUSY_STATUSES:
            return
        request = response.request
        try:
            key = _request_id(request.content if request.method == "POST" else b"")
        except Exception:  # a streamed body, never read: not one of the SDK's requests
            return
        if key is None:
            return
        wait, note = parse_retry_after(response.headers.get("retry-after"), time.time())
        if len(self._answers) >= MAX_REMEMBERED:
            self._answers.pop(next(iter(self._answers)))
        self._answers[key] = BusyAnswer(status, wait, note)

    def pop(self, request_id: str | None) -> BusyAnswer | None:
        """The busy answer to this request, if it got one (claimed once)."""
        if request_id is None or not self._answers:
            return None
        return self._answers.pop(request_id, None)


def _request_id(body: bytes) -> str | None:
    """The id of a JSON-RPC request in a POST body (as the tracker keys it), or None."""
    if not body or len(body) > 1 << 20:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None
    return str(message["id"])
