"""The client call, and only it, under one broad catch: what a call, a read and a fetch share.

Only the client's own work runs inside (DESIGN, "A bug is not a doubt"). A ``ToolError`` is
the failure as the client sorted it; running out of time is ``TimedOut``; an exception that
toolbench's own code raised before anything was written to the transport (marked with
``mark_unsent``) propagates as it is, for the caller to record as ``did_not_happen`` and
raise; anything else, from a client that is not ours, is ``TimedOut``: nothing says how far
the call got.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from toolbench._core.errors import TimedOut, ToolError, is_unsent
from toolbench._core.html import seconds_text
from toolbench._core.ids import ToolId

T = TypeVar("T")


async def attempt(run: Callable[[], Awaitable[T]], *, limit: float, bound: float | None,
                  tool: ToolId | None) -> tuple[T | None, ToolError | None]:
    """``run()``'s answer and no error, or no answer and the error it comes to.

    Args:
        run: starts the client call (it bounds itself by the call's timeout).
        limit: the call's timeout, for the message of a ``TimedOut``.
        bound: a backstop in seconds for a client that may not bound itself, or ``None``.
        tool: the tool the error is about, if any.

    Raises:
        Exception: whatever ``run`` raised that :func:`~toolbench._core.errors.is_unsent`
            says is toolbench's own bug before sending; and cancellation.
    """
    error: ToolError
    try:
        if bound is None:
            return await run(), None
        async with asyncio.timeout(bound):
            return await run(), None
    except ToolError as exc:
        return None, exc
    except TimeoutError as exc:  # the router's bound for a plain client, or the backstop
        error = TimedOut(f"no answer within {seconds_text(limit)} s", tool=tool)
        error.__cause__ = exc
    except Exception as exc:
        if is_unsent(exc):
            raise
        error = TimedOut(f"{type(exc).__name__}: {exc}", tool=tool)
        error.__cause__ = exc
    return None, error
