"""Work on what a server sends, done beside the shared loop rather than on it.

A server decides how much it sends: a catalog of 10,000 tools costs its reader hundreds of
milliseconds of pure Python (validating, renaming, fingerprinting). Done on the shared loop,
that is hundreds of milliseconds in which no neighbour's call moves (DESIGN, "Bounded work on
what a server or a file sends": a neighbour's worst call stays within 100 ms of alone). Work
sized by the sender goes to a worker thread once it is big; the GIL then passes back to the
loop every switch interval (5 ms), so the loop keeps turning. Small work stays on the loop,
where a thread's hand-off would cost more than the work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

__all__ = ["OFF_LOOP_ITEMS", "off_loop"]

T = TypeVar("T")

OFF_LOOP_ITEMS = 200
"""From this many items on (tools, entries, fingerprints) the work leaves the loop: about
10 ms of it, measured, where the thread's hand-off costs some 0.1 ms."""


async def off_loop(work: Callable[[], T], items: int) -> T:
    """``work()``: on a worker thread when it handles ``items`` >= ``OFF_LOOP_ITEMS``, else
    here. ``work`` must touch no state that the loop changes meanwhile: hand it its inputs."""
    if items < OFF_LOOP_ITEMS:
        return work()
    return await anyio.to_thread.run_sync(work)
