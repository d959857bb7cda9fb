"""Every record of one bench: kept in memory, and handed to its journal when it has one.

Why above the journal (``toolbench._bench.journal.journal``): the store owns a Journal and
waits on it (an intent committed before a call is sent, outcomes settled before an operation
returns), while the journal only needs a Record (``toolbench._bench.journal.record``), never
the store.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from toolbench._bench.journal.record import Record, arguments_key

if TYPE_CHECKING:
    from toolbench._bench.journal.journal import Journal


def _resume_key(record: Record) -> tuple[str, str, str]:
    return (record.server, record.tool, arguments_key(record.arguments))


INTENT_WAIT_S = 2.0
"""The most a call waits for its intent to be committed before it is sent anyway."""
SETTLE_WAIT_S = 10.0
"""The most an operation waits, before returning, for its records to be committed."""


class RecordStore:
    """Every record of one bench, in memory, and in its journal when it has one.

    Memory is the truth for this process: a record is kept whatever the journal does. The
    journal's failures become counts (see :meth:`settle`), never exceptions.
    """

    def __init__(self, journal: Journal | None = None) -> None:
        self._lock = threading.Lock()
        self._journal = journal
        self._records: list[Record] = journal.load() if journal is not None else []
        # Intents waited on, oldest first, for the one watchdog that bounds every wait (a
        # timer per call cost more than the rest of the loop's share of the journal).
        self._waiting: collections.deque[tuple[float, asyncio.Future[bool]]] = (
            collections.deque())
        self._watchdog: asyncio.TimerHandle | None = None
        # The resume index is built on the first lookup (most benches never resume), then
        # kept up to date; until then appending pays nothing for it. For each argument set:
        # its first success, and its first in_doubt record.
        self._resume: dict[tuple[str, str, str], list[Record | None]] | None = None

    @property
    def journal(self) -> Journal | None:
        return self._journal

    def append(self, record: Record, tag: str | None = None) -> None:
        """Keep the record; queue it for the journal (``tag`` groups it for :meth:`settle`)."""
        with self._lock:
            self._records.append(record)
            if self._resume is not None:
                self._index(record)
        if self._journal is not None:
            self._journal.outcome(record, tag)

    async def intent(self, call_id: str, batch: str | None, started: datetime, server: str,
                     tool: str, name: str, arguments: Mapping[str, Any],
                     provenance: Mapping[str, Any] | None) -> bool:
        """Return once the call's intent is committed: only then may a byte be sent.

        Bounded: a failing journal answers at once, a hung disk after INTENT_WAIT_S; the
        call then goes ahead (False: the intent is not durable) and its record is counted
        as not durable if it stays so.
        """
        journal = self._journal
        if journal is None:
            return True
        loop = asyncio.get_running_loop()
        fut = journal.intent(call_id, batch, started, server, tool, name, arguments,
                             provenance, loop)
        if isinstance(fut, bool):  # durable already (the intent log), or not at all
            return fut
        self._waiting.append((loop.time() + INTENT_WAIT_S, fut))
        if self._watchdog is None:
            self._watchdog = loop.call_later(INTENT_WAIT_S, self._expire, loop)
        return await fut

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        """Let calls whose intent is overdue go ahead (a hung disk; a lock gives up sooner)."""
        self._watchdog = None
        now, waiting = loop.time(), self._waiting
        while waiting and (waiting[0][1].done() or waiting[0][0] <= now):
            _, fut = waiting.popleft()
            if not fut.done():
                fut.set_result(False)
        if waiting:
            self._watchdog = loop.call_later(max(waiting[0][0] - now, 0.01), self._expire,
                                             loop)

    async def settle(self, tag: str | None) -> int:
        """Wait until what was queued is committed; how many ``tag`` records are not."""
        journal = self._journal
        if journal is None:
            return 0
        fut = journal.flush(tag, asyncio.get_running_loop())
        try:
            async with asyncio.timeout(SETTLE_WAIT_S):
                return await asyncio.shield(fut)
        except TimeoutError:
            return -1

    def resume_record(self, server: str, tool: str, arguments: Mapping[str, Any], *,
                      retry_in_doubt: bool = False) -> Record | None:
        """The record that stands in for this call on resume, or None to make the call.

        A success stands in; so does an in_doubt record (it may have run), unless
        ``retry_in_doubt``. A failure that did not happen, or landed as a tool error, runs.
        """
        with self._lock:
            if self._resume is None:
                self._resume = {}
                for record in self._records:
                    self._index(record)
            found = self._resume.get((server, tool, arguments_key(arguments)))
        if found is None:
            return None
        success, in_doubt = found
        if success is not None:
            return success
        return None if retry_in_doubt else in_doubt

    def _index(self, record: Record) -> None:
        assert self._resume is not None
        if record.kind != "tool":  # reads and prompt fetches are idempotent: never skipped
            return
        if record.ok:
            slot = 0
        elif record.disposition == "in_doubt":
            slot = 1
        else:
            return
        entry = self._resume.setdefault(_resume_key(record), [None, None])
        if entry[slot] is None:
            entry[slot] = record

    def __len__(self) -> int:
        return len(self._records)

    def snapshot(self) -> list[Record]:
        with self._lock:
            return list(self._records)

    async def aclose(self) -> int:
        """Close the journal (on its thread); how many records never reached the file."""
        return 0 if self._journal is None else await self._journal.aclose()

    def close(self) -> int:
        return 0 if self._journal is None else self._journal.close()
