"""What keeps one view from flooding its host (DESIGN.md, "MCP Apps", "The bridge"; issue 43).

A view is untrusted code that can post as fast as a browser loops. Each of its requests is
answered (JSON-RPC wants a reply), but what the kernel *keeps* for it is bounded:

- **Refusals fold.** The first refusal of a kind (an unknown tool; a tool not visible to
  apps, per tool) is recorded at once; repeats of that kind within ``FOLD_S`` are counted, not
  recorded, and the window ends with one ``Refused`` record that carries the count (in its
  message and in ``provenance["app"]["refused_repeats"]``). On top of that, a token bucket
  caps the refusal records a view may start per second (``RECORDS_PER_S``, burst
  ``RECORDS_BURST``); a refusal over the cap opens a fold instead. A view that floods 2,000
  made-up tool names leaves a handful of records, not 2,000.
- **Queued notifications are capped.** A message from the front end waits on toolbench's
  loop until it is handled; at most ``MAX_QUEUED_NOTIFICATIONS`` notifications per view wait
  at once. Beyond that the newest are dropped and counted, and ``view.log`` says so once when
  dropping starts and once, with the count, when the backlog has drained.

It also takes the front end's own word (``view.js``): a view that left its document has
ended, and a message the front end refused (over ``MAX_MESSAGE_BYTES``) is a row of the log.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from toolbench._core import html as _html
from toolbench._core.errors import Refused

FOLD_S: Final = 1.0
"""How long repeats of one kind of refusal are folded into one record."""
RECORDS_PER_S: Final = 4.0
RECORDS_BURST: Final = 8
"""The token bucket for refusal records a view may start (per second, and at once)."""
MAX_QUEUED_NOTIFICATIONS: Final = 64
"""Notifications from one view waiting to be handled at once; the newest beyond are dropped."""
NAVIGATED: Final = "(navigated away)"
"""``view.log``'s ``method`` for the row that says the view left its document."""
DROPPED: Final = "(notifications dropped)"
"""``view.log``'s ``method`` for the rows about dropped notifications."""
EXAMPLES = 5
"""Tool names a folded record lists (the first few)."""
SLOW_AFTER: Final = 64
SLOW_REPLY_S: Final = 0.02
"""Past ``SLOW_AFTER`` folded repeats in one window, each further refusal is answered after
``SLOW_REPLY_S``: its request keeps one of the view's 16 slots meanwhile, so a flooding view
is slowed to at most 800 refusals a second, and its neighbours keep the loop."""

Note = Callable[[str, Mapping[str, Any], bool | None, str | None], None]
"""``Bridge._note``: one row of ``view.log``."""
Write = Callable[[str, Any, str, int], None]
"""Writes one ``Refused`` record: tool, arguments, why, how many repeats it stands for."""


@dataclass
class _Fold:
    why: str
    tool: str
    arguments: Any
    count: int = 0
    tools: list[str] = field(default_factory=list)


class Refusals:
    """Folds one view's repeated refusals into few records (see the module's docstring)."""

    def __init__(self, write: Write, clock: Callable[[], float] = time.monotonic) -> None:
        self._record = write
        self._clock = clock
        self._open: dict[str, _Fold] = {}
        self._tokens = float(RECORDS_BURST)
        self._stamp = clock()
        self.refused = 0
        """Every refusal, recorded or folded."""

    def refuse(self, kind: str, tool: str, arguments: Any, why: str) -> float:
        """One refusal of ``kind`` (on toolbench's loop): recorded now, or folded. Returns
        how long its answer waits (``SLOW_REPLY_S`` once a flood is folding, else 0)."""
        self.refused += 1
        fold = self._open.get(kind)
        if fold is not None:
            fold.count += 1
            if len(fold.tools) < EXAMPLES and tool not in fold.tools:
                fold.tools.append(tool)
            return SLOW_REPLY_S if fold.count > SLOW_AFTER else 0.0
        fold = _Fold(why, tool, arguments)
        self._open[kind] = fold
        if self._take():
            self._record(tool, arguments, why, 0)
        else:
            fold.count, fold.tools = 1, [tool]
        asyncio.get_running_loop().call_later(FOLD_S, self.flush, kind)
        return 0.0

    def flush(self, kind: str | None = None) -> None:
        """End the fold of ``kind`` (every fold with None): its repeats become one record."""
        for key in [kind] if kind is not None else list(self._open):
            fold = self._open.pop(key, None) if key is not None else None
            if fold is None or fold.count == 0:
                continue
            names = ", ".join(repr(_html.shorten(t, 60)) for t in fold.tools)
            self._record(fold.tools[0] if fold.tools else fold.tool, fold.arguments,
                        f"{fold.why} (refused {fold.count:,} more times within "
                        f"{FOLD_S:g} s, folded into this record; tools: {names})", fold.count)

    def _take(self) -> bool:
        now = self._clock()
        self._tokens = min(float(RECORDS_BURST),
                           self._tokens + (now - self._stamp) * RECORDS_PER_S)
        self._stamp = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


class Backlog:
    """How many of one view's notifications wait on toolbench's loop (kernel thread in, loop
    out): beyond ``MAX_QUEUED_NOTIFICATIONS`` the newest are dropped, counted and noted."""

    def __init__(self, note: Note) -> None:
        self._note = note
        self._lock = threading.Lock()
        self._waiting = 0
        self._dropped = 0
        self.dropped_total = 0

    def admit(self, message: Any) -> bool:
        """Whether ``message`` may wait to be handled (requests always may: each is
        answered, and at most 16 run at once)."""
        if not isinstance(message, Mapping) or "id" in message:
            return True
        with self._lock:
            if self._waiting < MAX_QUEUED_NOTIFICATIONS:
                self._waiting += 1
                return True
            self._dropped += 1
            self.dropped_total += 1
            first = self._dropped == 1
        if first:
            self._note("in", {"method": DROPPED}, False,
                       f"this view sends notifications faster than they are handled: over "
                       f"{MAX_QUEUED_NOTIFICATIONS} wait; the newest are dropped (counted)")
        return False

    def handled(self, message: Any) -> None:
        """One admitted notification is being handled; a drained backlog reports its drops."""
        if not isinstance(message, Mapping) or "id" in message:
            return
        with self._lock:
            self._waiting = max(0, self._waiting - 1)
            dropped = self._dropped if self._waiting == 0 else 0
            if dropped:
                self._dropped = 0
        if dropped:
            self._note("in", {"method": DROPPED}, False,
                       f"{dropped:,} notifications from this view were dropped while over "
                       f"{MAX_QUEUED_NOTIFICATIONS} waited")


class Guarded:
    """The bridge's side of these guards (``Bridge`` inherits it; its ``__init__`` makes
    :attr:`refusals` and :attr:`backlog`)."""

    torn_down: bool
    server: str
    refusals: Refusals
    backlog: Backlog
    _host: Any

    @property
    def provenance(self) -> dict[str, Any]:
        raise NotImplementedError

    def _note(self, direction: str, message: Any, ok: bool | None = None,
              error: str | None = None) -> None:
        raise NotImplementedError

    async def answer(self, message: Any) -> dict[str, Any] | None:
        raise NotImplementedError

    def told_navigated(self, how: Any) -> None:
        """The front end ended a view that left its document (it navigated its frame, or
        replaced its document): the frame is gone, nothing was relayed after it, and from
        now on nothing is answered. A row of ``view.log``."""
        self.torn_down = True
        self._note("in", {"method": NAVIGATED}, False,
                   f"the view left its document ({_html.shorten(str(how), 60)}); its frame "
                   "was removed and nothing more is relayed to or from it")

    def told_refused(self, id_: Any, why: Any) -> None:
        """The front end answered -32600 in the frame itself to a message the comm must not
        carry (over ``MAX_MESSAGE_BYTES``, or not JSON); the kernel sees only this row."""
        shown = id_ if isinstance(id_, str | int) and not isinstance(id_, bool) else None
        self._note("in", {"id": shown}, False, _html.shorten(str(why), 300))

    async def answer_queued(self, message: Any) -> dict[str, Any] | None:
        """``answer`` for a message the front end queued (admitted by :attr:`backlog`)."""
        self.backlog.handled(message)
        return await self.answer(message)

    def _write_refusal(self, tool: str, arguments: Any, why: str, repeats: int) -> None:
        provenance = self.provenance
        if repeats:
            provenance["app"]["refused_repeats"] = repeats
        self._host.refuse(self.server, tool, arguments if isinstance(arguments, Mapping)
                          else {"_invalid": arguments}, provenance, Refused(why))
