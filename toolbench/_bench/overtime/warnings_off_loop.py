"""PinWarnings, built off the shared loop: a rug pull's word diff never holds it.

A ``PinWarning`` carries the diff of what changed, and a description's word diff is the one
piece of pin work whose cost a server chooses (a 6,000-word repetitive text). The
``PinGuard`` decides synchronously, on the loop, what is pinned, changed and blocked (so a
call sees a listing's verdict the moment it is applied); only the warning's text and diff
frame are built here, on one worker thread, in the order the listings came, and the warning
is then issued on the loop. :meth:`Warner.warned` lets a connect, a re-list and a snapshot
wait (bounded) for their own warnings, so a caller sees them before it goes on.

It may import ``toolbench._bench.overtime`` (pins, diff, snapshots).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import warnings
from datetime import UTC, datetime
from typing import Any

from toolbench._bench.overtime.diff import diff as _diff
from toolbench._bench.overtime.pins import PinWarning
from toolbench._bench.overtime.snapshots import snapshot_frame
from toolbench._core.html import shorten

_log = logging.getLogger("toolbench.overtime")
_SHOWN = 8
_USES = {"tool": "calls to", "resource": "reads of", "resource_template": "reads through",
         "prompt": "fetches of"}
Pair = tuple[dict[str, Any], dict[str, Any]]
WARNED_WAIT_S = 30.0
"""How long a connect or a re-list waits for its warnings to be built (a backstop: the word
diffs are capped and bounded in time)."""


def _now() -> datetime:
    return datetime.now(UTC)


def _lines(server: str, changed: list[Pair]) -> tuple[list[str], Any]:
    frame = _diff(snapshot_frame((server, _now(), old) for old, _ in changed),
                  snapshot_frame((server, _now(), new) for _, new in changed))
    lines = []
    for row in frame.itertuples():
        shown = row.detail if row.detail else f"{row.old!r} -> {row.new!r}"
        lines.append(f"  {row.name}.{row.field}: {shorten(str(shown), 300)}")  # at a word
    return lines, frame


def listing_warning(server: str, changed: list[Pair], removed: list[str], added: list[str],
                    kind: str = "tool") -> PinWarning:
    """The one PinWarning of a listing: what changed (with the diff), was removed, is new."""
    parts = []
    frame = None
    what = kind.replace("_", " ")
    if changed:
        names = ", ".join(repr(new["name"]) for _, new in changed[:_SHOWN])
        parts.append(f"{len(changed)} pinned {what}{'s' * (len(changed) != 1)} changed "
                     f"({names}); {_USES[kind]} "
                     f"{'them' if len(changed) > 1 else 'it'} are refused until "
                     "bench.approve(name)")
        lines, frame = _lines(server, changed)
        parts.extend(lines)
    if removed:
        parts.append(f"{len(removed)} pinned {what}{'s' * (len(removed) != 1)} removed: "
                     + ", ".join(map(repr, removed[:_SHOWN])))
    if added:
        parts.append(f"{len(added)} new {what}{'s' * (len(added) != 1)} (pinned now): "
                     + ", ".join(map(repr, added[:_SHOWN])))
    return PinWarning(f"server {server!r}: " + "\n".join(parts), frame)


def again_warning(server: str, kind: str, name: str, shown: dict[str, Any],
                  new: dict[str, Any]) -> PinWarning:
    """``approve`` found an item changed again since its last PinWarning: the newer diff."""
    lines, frame = _lines(server, [(shown, new)])
    head = (f"server {server!r}: pinned {kind.replace('_', ' ')} {name!r} changed again "
            "since the last PinWarning about it; nothing was approved. Review this diff, "
            "then bench.approve(name) again (or approve(name, fingerprint=...))")
    return PinWarning("\n".join([head, *lines]), frame)


class Warner:
    """One worker thread that builds PinWarnings in order; each is issued on the loop."""

    def __init__(self, warm: bool = False) -> None:
        """``warm``: import what a diff needs (pandas) now, in the caller's thread: an
        import holds the interpreter for a third of a second, which must not fall on a
        neighbour's call when the first warning is built."""
        if warm:
            import pandas  # noqa: F401

        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._pending: dict[str, set[asyncio.Future[None]]] = {}

    def soon(self, server: str, build: Any, *args: Any) -> None:
        """Build ``build(*args)`` on the worker thread, then warn with it on the loop (in
        the order asked); outside a loop, at once."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            warnings.warn(build(*args), stacklevel=3)
            return
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                1, thread_name_prefix="toolbench-pin-diff")
        future = loop.run_in_executor(self._pool, build, *args)
        # What a caller waits for is the warning *issued*, not only built: a built one whose
        # done callback has not run yet would let ``warned`` return before the warning exists.
        issued: asyncio.Future[None] = loop.create_future()
        pending = self._pending.setdefault(server, set())
        pending.add(issued)

        def issue(done: asyncio.Future[PinWarning]) -> None:
            try:
                if done.cancelled():
                    return
                exc = done.exception()
                if exc is not None:  # a bug building the text must not lose the warning
                    _log.warning("building a PinWarning for %r failed: %r", server, exc)
                    warnings.warn(PinWarning(f"server {server!r}: pinned items changed (the "
                                             f"diff could not be built: {type(exc).__name__})"),
                                  stacklevel=2)
                    return
                warnings.warn(done.result(), stacklevel=2)
            finally:
                pending.discard(issued)
                if not issued.done():
                    issued.set_result(None)

        future.add_done_callback(issue)

    async def now(self, build: Any, *args: Any) -> None:
        """Build one warning on the worker thread and issue it (awaited)."""
        loop = asyncio.get_running_loop()
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                1, thread_name_prefix="toolbench-pin-diff")
        warnings.warn(await loop.run_in_executor(self._pool, build, *args), stacklevel=2)

    async def warned(self, server: str | None = None, timeout: float = WARNED_WAIT_S) -> None:
        """Wait (bounded) until the warnings asked for so far (of ``server``, or all) are
        issued."""
        pending = [f for s, found in self._pending.items() if server in (None, s)
                   for f in found if not f.done()]
        if pending:  # each is done once its warning has been issued
            await asyncio.wait(pending, timeout=timeout)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
