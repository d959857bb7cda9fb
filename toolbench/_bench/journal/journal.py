"""A SQLite (WAL) file that holds every call's outcome, and the intents of calls in flight.

Why intents: a call in flight when the process is killed would otherwise leave no trace, and
a later ``map(..., resume=True)`` would run it again without anyone knowing. The intent is
on disk before a byte of the call is sent: appended to the session's intent log (see
``toolbench._bench.journal.intent_log``: one copy into a mapped file, a few µs a call, where waiting
for a SQLite commit cost about 200), and committed to SQLite with the outcomes. The outcome
(the full record) replaces it. Reopening the file turns an intent whose process is gone, in
SQLite or in a dead session's log, into an ``in_doubt`` record.

Why one writer thread: SQLite may wait (a lock held by another process, a slow disk), and the
shared event loop must never wait on it. Every commit happens on one thread, which commits
everything that is ready in one transaction (group commit). While calls come, it looks for
work every LINGER_S by itself, so a stream of calls costs it no wake-ups. Without an intent
log (it could not be created, or a write failed), a call waits for its intent's commit,
bounded.

Why writing never fails a call: a journal that cannot be written (locked, disk full, closed,
damaged) keeps the record in memory, retries with backoff, and reports how many records are
not durable as one :class:`JournalWarning` per operation. Nothing of SQLite reaches the user.

What "durable before the call returns" means here (DESIGN.md says the record; this is the
precise promise): a call's intent is on disk before the call is sent, so from then on the call
can never be missing. ``map`` and ``compare`` return only once every one of their records is
committed (one wait for the whole batch), and ``close()`` commits the rest. A single ``call``
returns without waiting for its outcome's commit, which follows within LINGER_S: waiting
would double the journal's cost per call, and a process killed in that window leaves the call
``in_doubt``, never lost and never silently retried.

WAL with ``synchronous=NORMAL``, and the intent log's plain writes, survive the process being
killed (a dead kernel); only a power cut could drop the last ones.

The writer thread is ``toolbench._bench.journal.writer``; opening, recognising and reading
the file is ``toolbench._bench.journal.file``; this module opens the journal and takes what
the event loop hands over. What keeps the records and waits on the journal is
``toolbench._bench.journal.store``, above this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import sqlite3
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from datetime import datetime
from typing import Any

from toolbench._bench.journal.file import LIVE_SESSIONS, inspect_file, open_for_writing
from toolbench._bench.journal.intent_log import (
    COMPACT_BYTES,
    IntentLog,
    intent_line,
    outcome_line,
    proc_tag,
)
from toolbench._bench.journal.record import Record
from toolbench._bench.journal.writer import (
    RETRY_FIRST_S,
    JournalWriter,
    _Intent,
    _Marker,
    _Outcome,
)

CLOSE_WAIT_S = 10.0
"""The most close() waits for the writer to commit what is queued."""


class JournalWarning(UserWarning):
    """Records are not (yet) durable, or a journal held rows that could not be read."""


def warn_not_durable(journal: Journal, count: int, of: int, what: str) -> None:
    """The one warning an operation gives when some of its records are not on disk."""
    if count == 0:
        return
    if count < 0:
        told = "its records may not be durable: the journal writer did not answer in time"
    else:
        told = (f"{count} of its {of} record{'s' * (of != 1)} "
                f"{'are' if count != 1 else 'is'} not durable")
    warnings.warn(
        f"{what}: {told}; journal {journal.path!r}: {journal.problem or 'not written'}. "
        "They are kept in memory (bench.records); writing is retried, and close() warns "
        "again if any never reach the file",
        JournalWarning, stacklevel=3,
    )


def warn_unwritten(journal: Journal, count: int) -> None:
    """The warning of a close that leaves records that never reached the file."""
    if count == 0:
        return
    told = (f"{count} record{'s' * (count != 1)} never reached the file" if count > 0 else
            "the writer did not finish in time; the last records may not have reached it")
    warnings.warn(f"journal {journal.path!r} closed: {told} "
                  f"({journal.problem or 'not written'}); they existed only in memory",
                  JournalWarning, stacklevel=3)



class Journal(JournalWriter):
    """The durable side of a RecordStore: intents and outcomes, written off the event loop.

    Opening refuses (``ValueError``) a path that cannot be opened, a file that is not SQLite,
    and a SQLite file that is not a toolbench journal (left byte-for-byte untouched).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.session = uuid.uuid4().hex
        self._pid = os.getpid()
        self._proc = proc_tag(self._pid)
        found = inspect_file(self.path)
        self._records = found.records + found.orphans + list(found.log_orphans)
        self.problem: str | None = None
        """Why records are not being written, when they are not (None when healthy)."""
        self._db: sqlite3.Connection | None = None
        damage = found.damaged_file
        if damage is None:
            self._db, damage = open_for_writing(self.path)
        # Our own handle on the file: its link count tells a file deleted under us.
        self._watch: int | None = None
        if self._db is not None:
            with contextlib.suppress(OSError):
                self._watch = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        if damage is not None:
            self.problem = (f"the file is damaged ({damage}); nothing more is written to "
                            "it. Move it aside to journal again")
        LIVE_SESSIONS.add(self.session)
        # Items go in a list; the queue only wakes the writer, and only when that helps:
        # in a busy map most intents join a batch without a thread switch.
        self._queue: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._items: list[_Intent | _Marker] = []
        self._items_since = 0.0
        self._waited = 0  # items someone awaits (intents not in the log, markers)
        self._running = 0  # calls whose intent is committed and whose outcome has not come
        self._lock = threading.Lock()
        # Under the lock: outcomes waiting for the writer (they do not wake it unless it
        # sleeps without a deadline), records that came after close, what close left.
        self._closed = False
        self._outs: list[_Outcome] = []
        self._outs_since = 0.0
        self._idle = False
        self._unqueued: dict[str | None, int] = {}
        self._final: dict[str | None, int] | None = None
        self._after_close: list[tuple[str | None, Any]] = []
        # Writer-thread state (only that thread touches these).
        self._inflight: dict[str, tuple[str, str | None, str | None, Any]] = {}
        self._deferred_intents: dict[str, _Intent] = {}
        self._held: dict[str, tuple[_Intent, float]] = {}  # the writer's (see INTENT_HOLD_S)
        self._deferred: dict[str, _Outcome] = {}
        self._broken: dict[str, _Outcome] = {}
        """Outcomes whose row could not be built: a bug of ours, kept in memory, not retried."""
        self._retry_at = 0.0
        self._last_attempt = 0.0
        self._backoff = RETRY_FIRST_S
        self._busy_ms = -1
        self._active_until = 0.0
        self._stale_logs = list(found.dead_logs)
        self.degraded = self._db is None
        """True while writes are failing: calls then stop waiting for their intents."""
        # Intents go to this file before sending (one write, no wait); SQLite gets them with
        # the outcomes. Without it (it cannot be created), each intent is committed first.
        self._log: IntentLog | None = None
        self._appended = 0  # intents appended to the log (under the lock)
        self._covered = 0  # every intent up to this one is in SQLite (set by the writer)
        if self._db is not None:
            self._outs = [_Outcome(record, None, orphan=True) for record in found.orphans]
            self._outs += [_Outcome(record, None, orphan=True, logged=True)
                           for record in found.log_orphans]
            self._outs_since = time.monotonic()
            with contextlib.suppress(OSError):
                self._log = IntentLog(self.path, self.session, self._pid, self._proc)
        self._log_path = None if self._log is None else self._log.path
        self._thread = threading.Thread(target=self._run, name="toolbench-journal",
                                        daemon=True)
        self._thread.start()
        problems = []
        if found.damaged_rows:
            problems.append(f"skipped {found.damaged_rows} damaged "
                            f"row{'s' * (found.damaged_rows != 1)} that could not be read")
        if damage is not None:
            problems.append(f"the file is damaged ({damage}); loaded "
                            f"{len(found.records)} records, and new records will be kept in "
                            "memory only. Move the file aside to journal again")
        if problems:
            warnings.warn(f"journal {self.path!r}: " + "; ".join(problems), JournalWarning,
                          stacklevel=3)

    # -- what opening found ---------------------------------------------------------------
    def load(self) -> list[Record]:
        """The records found on opening, orphan intents included as ``in_doubt`` records."""
        return list(self._records)

    # -- the loop's side (cheap, never blocks) -------------------------------------------
    def intent(self, call_id: str, batch: str | None, started: datetime, server: str,
               tool: str, name: str, arguments: Mapping[str, Any],
               provenance: Mapping[str, Any] | None,
               loop: asyncio.AbstractEventLoop | None) -> asyncio.Future[bool] | bool:
        """Make the intent durable before the call is sent, or say it is not.

        ``True``: it is (appended to the intent log). A future: wait for its commit (no log).
        ``False``: it is not, and the call goes ahead (the journal is closed or failing).
        """
        row = (call_id, self.session, self._pid, self._proc, batch, started, server, tool,
               name, arguments, provenance)
        log = self._log
        if log is not None:
            line = intent_line(call_id, batch, started, server, tool, name, arguments,
                               provenance)
            with self._lock:
                if self._closed:
                    return False
                if log.size >= COMPACT_BYTES and self._covered >= self._appended:
                    log.empty()  # all it holds is in SQLite
                if log.append(line):
                    self._appended += 1
                    # No wake-up: the writer looks by itself while calls come, and the
                    # outcome wakes it otherwise. Nobody waits for this commit.
                    self._add(_Intent(call_id, row, None, self._appended), wake=False)
                    return True
                self._log = None  # it failed (a full disk): commit intents before sending
        fut: asyncio.Future[bool] | None = None
        if loop is not None and not self.degraded:
            fut = loop.create_future()
        with self._lock:  # nothing can land behind the close marker
            if self._closed:
                return False
            self._add(_Intent(call_id, row, None if fut is None else (loop, fut)),
                      wake=self._idle or self._running <= 0)
        return False if fut is None else fut

    def _add(self, item: _Intent | _Marker, wake: bool) -> None:
        """Hand an item to the writer (under the lock); wake it only if it would not look.

        A sleeping writer without a deadline must be woken; one with a deadline looks by
        itself; and when no other call is running, nothing else will come to share the
        commit, so it is woken to commit at once.
        """
        if not self._items:
            self._items_since = time.monotonic()
        self._items.append(item)
        if item.waiter is not None:
            self._waited += 1
        if wake:
            self._idle = False
            self._queue.put(None)

    def outcome(self, record: Record, tag: str | None) -> None:
        """Hand over the full record: on disk (the intent log) before this returns, and in
        SQLite, replacing its intent, with the next commit.

        One line copied into the intent log (DESIGN: a call that returned is found with its
        answer after a kill -9); SQLite follows in groups. It does not wake the writer
        (which commits it with the next intent, or LINGER_S later), so a stream of calls
        costs one commit per call.

        A map's calls too (issue 46 had dropped their lines while a line cost a
        ``write(2)``; the writer thread then committed about once per 1,000 calls of a busy
        map, so a kill -9 left that many finished calls ``in_doubt``). A copy into the mapped
        log costs the encoding only.
        """
        log = self._log
        line = None
        if log is not None:
            try:
                line = outcome_line(record)
            except Exception:  # a record that cannot be encoded: SQLite's row will say why
                line = None
        with self._lock:
            if self._closed:  # too late for the file: counted, so the operation says so
                self._unqueued[tag] = self._unqueued.get(tag, 0) + 1
                self.problem = self.problem or "it was closed before they were written"
                return
            seq = 0
            if line is not None and self._log is not None:
                if self._log.append(line):
                    self._appended += 1
                    seq = self._appended
                else:
                    self._log = None  # a full disk: intents are committed before sending
            if not self._outs:
                self._outs_since = time.monotonic()
            self._outs.append(_Outcome(record, tag, seq=seq))
            if record.call_id in self._inflight:
                self._running -= 1
            if self._idle:
                self._idle = False
                self._queue.put(None)

    def flush(self, tag: str | None, loop: asyncio.AbstractEventLoop) -> asyncio.Future[int]:
        """A future for: everything handed over so far is committed (or deferred).

        Its value is how many records handed over under ``tag`` are not durable.
        """
        fut: asyncio.Future[int] = loop.create_future()
        with self._lock:
            if not self._closed:
                self._add(_Marker("flush", tag, (loop, fut)), wake=True)
                return fut
            if self._final is None:  # closing: the writer answers when it is done
                self._after_close.append((tag, (loop, fut)))
                return fut
            count = self._final.get(tag, 0) + self._unqueued.get(tag, 0)
        fut.set_result(count)
        return fut

    def close_soon(self, waiter: Any) -> bool:
        """Ask the writer to commit what is queued, close the file and stop."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            self._add(_Marker("close", None, waiter), wake=True)
            return True

    async def aclose(self) -> int:
        """Close on the writer thread; returns how many records never reached the file."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[int] = loop.create_future()
        if not self.close_soon((loop, fut)):
            return 0
        try:
            async with asyncio.timeout(CLOSE_WAIT_S):
                return await asyncio.shield(fut)
        except TimeoutError:
            return -1

    def close(self) -> int:
        """The blocking close, for a thread that is not the event loop."""
        fut: Future[int] = Future()
        if not self.close_soon(fut):
            return 0
        try:
            return fut.result(CLOSE_WAIT_S)
        except TimeoutError:
            return -1

    @property
    def closed(self) -> bool:
        return self._closed

    def trace(self, callback: Callable[[str], object] | None) -> bool:
        """See every SQL statement the journal runs (``sqlite3``'s trace callback), for tests
        and diagnostics: which thread runs them, what they are. False for a degraded journal,
        which runs none."""
        if self._db is None:
            return False
        self._db.set_trace_callback(callback)
        return True
