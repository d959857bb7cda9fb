"""A SQLite (WAL) file that holds every call's outcome, and the intents of calls in flight.

Why intents: a call in flight when the process is killed would otherwise leave no trace, and
a later ``map(..., resume=True)`` would run it again without anyone knowing. The intent is on
disk before a byte of the call is sent: appended to the session's intent log (see
``toolbench._bench.intent_log``: one ``write(2)``, about 20 µs a call, where waiting for a SQLite
commit cost about 200), and committed to SQLite with the outcomes. The outcome (the full
record) replaces it. Reopening the file turns an intent whose process is gone, in SQLite or
in a dead session's log, into an ``in_doubt`` record.

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

Opening, recognising and reading the file is ``toolbench._bench.journal_file``; this module writes.
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
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from toolbench._bench.intent_log import (
    COMPACT_BYTES,
    IntentLog,
    intent_line,
    outcome_line,
    proc_tag,
)
from toolbench._bench.journal_file import (
    INTENT_COLUMNS,
    LIVE_SESSIONS,
    dump_json,
    inspect_file,
    open_for_writing,
    sqlite_text,
)
from toolbench._bench.records import COLUMNS, Record

BUSY_S = 0.2
"""How long one commit waits for another process's write lock before the batch is deferred."""
RETRY_BUSY_S = 0.02
"""The lock wait of a retry: a journal that is known to be stuck must not slow calls down."""
RETRY_FIRST_S, RETRY_MAX_S = 0.25, 30.0
"""Backoff between attempts to write deferred records (doubling from first to max)."""
FORCED_GAP_S = 0.05
"""A flush retries a failing journal at once, but not more often than this."""
LINGER_S = 0.005
"""How long a finished call's outcome may wait for company (the next intent) before it is
committed alone: sequential calls then cost one commit each, not two."""
INTENT_LINGER_S = 0.0005
"""How long an intent may wait for others while other calls run (group commit in a map)."""
ACTIVE_S = 1.0
"""After work, the writer looks for more every LINGER_S for this long, so a stream of calls
never has to wake it (a wake-up costs the caller more than the commit)."""
MAX_BATCH = 512
"""Outcomes waiting beyond this many are committed without waiting for company."""
CLOSE_WAIT_S = 10.0
"""The most close() waits for the writer to commit what is queued."""
_INSERT_CALL = (f"INSERT INTO calls ({', '.join(COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(COLUMNS))})")
_INSERT_INTENT = (f"INSERT OR REPLACE INTO intents ({', '.join(INTENT_COLUMNS)}) "
                  f"VALUES ({', '.join('?' * len(INTENT_COLUMNS))})")


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


@dataclass(slots=True)
class _Intent:
    call_id: str
    row: tuple[Any, ...]
    waiter: Any  # (loop, asyncio future) or concurrent Future or None
    seq: int = 0  # its place in the intent log (0: not in the log, committed before sending)


@dataclass(slots=True)
class _Outcome:
    record: Record
    tag: str | None
    orphan: bool = False  # replaces an orphan intent found on opening
    logged: bool = False  # that intent was in a dead session's intent log, not in SQLite
    seq: int = 0  # its place in the intent log (0: not in the log)


@dataclass(slots=True)
class _Marker:
    kind: str  # "flush" or "close"
    tag: str | None = None
    waiter: Any = None


class Journal:
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
        self._inflight: dict[str, tuple[str, str | None, str | None]] = {}
        self._deferred_intents: dict[str, _Intent] = {}
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

        One write(2) to the intent log (DESIGN: a call that returned is found with its
        answer after a kill -9); SQLite follows in groups. It does not wake the writer
        (which commits it with the next intent, or LINGER_S later), so a stream of calls
        costs one commit per call.
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

    # -- the writer thread ----------------------------------------------------------------
    def _run(self) -> None:
        get, get_nowait = self._queue.get, self._queue.get_nowait
        expect = False  # intents were just committed: their outcomes are on the way
        while True:
            timeout = self._deadline(expect)
            with contextlib.suppress(queue.Empty):  # a deadline passed, or all drained
                get() if timeout is None else get(timeout=max(timeout, 0.0))
                while True:
                    get_nowait()
            with self._lock:
                self._idle = False
                if not self._ready():
                    expect = False
                    continue
                items, self._items, self._waited = self._items, [], 0
                outs, self._outs = self._outs, []
            try:
                done = self._process(items, outs)
            except BaseException as exc:  # never die with callers waiting on us
                done = self._fail_all(items, outs, f"{type(exc).__name__}: {exc}")
            if done:
                return
            expect = bool(self._inflight) and any(isinstance(i, _Intent) for i in items)
            self._active_until = time.monotonic() + ACTIVE_S

    def _ready(self) -> bool:
        """Commit now, or wait for company? (Called under the lock.)

        Group commit. An intent in the log and an outcome wait up to LINGER_S for company:
        nobody waits on them. An intent a call waits on (there is no log) waits at most
        INTENT_LINGER_S while other calls are still running, since each of them will soon
        hand over its outcome and, in a map, the next call's intent; once every call the
        writer knows of is waiting on it, waiting longer gains nothing, so a lone call is
        committed at once.
        """
        now = time.monotonic()
        if self._waited:
            if any(isinstance(item, _Marker) for item in self._items):
                return True  # a flush or close: someone waits for everything
            return self._running <= 0 or now >= self._items_since + INTENT_LINGER_S
        pending = len(self._items) + len(self._outs)
        if pending and (pending >= MAX_BATCH or now >= self._since() + LINGER_S):
            return True
        return (self.degraded and now >= self._retry_at
                and bool(self._deferred or self._deferred_intents))

    def _deadline(self, expect: bool) -> float | None:
        """How long the writer may sleep; None (no deadline) lets the next item wake it."""
        now = time.monotonic()
        wait: float | None = None
        with self._lock:
            if self._waited:
                wait = self._items_since + INTENT_LINGER_S - now
            elif self._items or self._outs:
                wait = self._since() + LINGER_S - now
            elif expect or now < self._active_until:
                wait = LINGER_S
            if self.degraded and (self._deferred or self._deferred_intents):
                retry = self._retry_at - now
                wait = retry if wait is None else min(wait, retry)
            self._idle = wait is None
        return wait

    def _since(self) -> float:
        """When the oldest item or outcome not yet committed came (under the lock)."""
        if self._items and self._outs:
            return min(self._items_since, self._outs_since)
        return self._items_since if self._items else self._outs_since

    def _process(self, items: list[_Intent | _Marker], outs: list[_Outcome]) -> bool:
        intents: list[_Intent] = []
        markers: list[_Marker] = []
        for item in items:
            if isinstance(item, _Intent):
                intents.append(item)
            else:
                markers.append(item)
        outcomes = outs
        closing = any(m.kind == "close" for m in markers)
        now = time.monotonic()
        attempt = self._db is not None and (
            not self.degraded or now >= self._retry_at
            # A flush tries at once (its caller is about to be told what is not durable),
            # but a stuck journal is not hammered by a stream of single calls.
            or (bool(markers) and now - self._last_attempt >= FORCED_GAP_S)
            or closing  # the last chance
        )
        if attempt and (self._deferred_intents or self._deferred):
            intents = [*self._deferred_intents.values(), *intents]
            outcomes = [*self._deferred.values(), *outcomes]
            self._deferred_intents, self._deferred = {}, {}
        finished = {o.record.call_id for o in outcomes}
        # An intent whose outcome is here needs no row of its own.
        to_write = [i for i in intents if i.call_id not in finished]
        ok = False
        if attempt and (to_write or outcomes):
            self._last_attempt = now
            ok = self._attempt(to_write, outcomes)
        elif attempt:
            ok = True  # nothing to write
        if ok:
            if self.degraded:
                self.degraded, self.problem, self._backoff = False, None, RETRY_FIRST_S
                if self._broken:
                    self.problem = self._broken_problem()
            top = max(max((intent.seq for intent in intents), default=0),
                      max((outcome.seq for outcome in outcomes), default=0))
            if top:  # all lines up to this one are in SQLite (earlier batches were too)
                with self._lock:
                    self._covered = max(self._covered, top)
            if self._stale_logs:  # their orphans are committed: the files have done their job
                for path in self._stale_logs:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                self._stale_logs = []
        else:
            for outcome in outcomes:
                self._deferred_intents.pop(outcome.record.call_id, None)
                self._deferred[outcome.record.call_id] = outcome
            for intent in to_write:
                self._deferred_intents[intent.call_id] = intent
        self._settle_intents(intents, ok)
        counts = [(marker.waiter, self._not_durable(marker)) for marker in markers]
        if closing:  # closed before close() returns: the file can be reopened at once
            self._finish()
        for waiter, count in counts:
            self._settle(waiter, count)
        return closing

    def _not_durable(self, marker: _Marker) -> int:
        # An orphan not yet converted is still on disk as an intent: it is not lost.
        kept = [*self._deferred.values(), *self._broken.values()]
        if marker.kind == "close":
            return sum(1 for o in kept if not o.orphan)
        return sum(1 for o in kept if o.tag == marker.tag and not o.orphan)

    def _attempt(self, intents: list[_Intent], outcomes: list[_Outcome]) -> bool:
        """One transaction for everything ready; on failure nothing is half written."""
        db = self._db
        assert db is not None
        inflight = self._inflight
        busy_ms = int((RETRY_BUSY_S if self.degraded else BUSY_S) * 1000)
        intent_rows: list[tuple[Any, ...]] = []
        try:
            # Rows are built before the lock is taken: another process waits less.
            for intent in intents:
                row = intent.row
                intent_rows.append((*row[:5], row[5].isoformat(), *row[6:9], dump_json(row[9]),
                                    dump_json(row[10])))
            call_rows = []
            deletes = []
            orphans = []
            logged: list[tuple[Any, ...]] = []
            for outcome in outcomes:
                try:
                    row = self._outcome_row(outcome.record)
                except Exception as exc:  # not a write failure: retrying cannot help
                    self._set_aside(outcome, exc)
                    continue
                if row[0] in inflight:  # written with its intent already: replace it
                    deletes.append((row[0],))
                if outcome.logged:
                    logged.append(row)
                elif outcome.orphan:
                    orphans.append(row)
                else:
                    call_rows.append(row)
            self._check_linked()
            if busy_ms != self._busy_ms:
                db.execute(f"PRAGMA busy_timeout={busy_ms}")
                self._busy_ms = busy_ms
            db.execute("BEGIN IMMEDIATE")
            try:
                if intent_rows:
                    db.executemany(_INSERT_INTENT, intent_rows)
                for row in orphans:
                    gone = db.execute("DELETE FROM intents WHERE call_id = ?", (row[0],))
                    if gone.rowcount == 1:  # another process may have converted it first
                        db.execute(_INSERT_CALL, row)
                for at in range(0, len(logged), 500):  # from dead intent logs, unless
                    chunk = logged[at:at + 500]  # another process converted them first
                    there = {cid for (cid,) in db.execute(
                        f"SELECT call_id FROM calls WHERE call_id IN "
                        f"({', '.join('?' * len(chunk))})", [row[0] for row in chunk])}
                    db.executemany(_INSERT_CALL, [r for r in chunk if r[0] not in there])
                if call_rows:
                    db.executemany(_INSERT_CALL, call_rows)
                if deletes:
                    db.executemany("DELETE FROM intents WHERE call_id = ?", deletes)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    with contextlib.suppress(Exception):
                        db.execute("ROLLBACK")
                raise
        except Exception as exc:
            self._defer(str(exc) if isinstance(exc, sqlite3.Error)
                        else f"{type(exc).__name__}: {exc}")
            return False
        with self._lock:  # outcome() reads these to count the calls still running
            for outcome in outcomes:
                inflight.pop(outcome.record.call_id, None)
            for row in intent_rows:
                inflight[row[0]] = (row[5], row[9], row[10])
            self._running = len(inflight) - sum(1 for o in self._outs
                                                if o.record.call_id in inflight)
        return True

    def _outcome_row(self, r: Record) -> tuple[Any, ...]:
        known = self._inflight.get(r.call_id)
        if known is not None:  # written with its intent already: reuse the text
            started, args_json, prov_json = known
        else:
            started = r.started.isoformat()
            args_json, prov_json = dump_json(r.arguments), dump_json(r.provenance)
        return (r.call_id, r.batch, started, r.server, r.tool, r.name,
                args_json, int(r.ok), r.disposition, r.error_type, sqlite_text(r.error),
                r.latency_ms, sqlite_text(r.text), dump_json(r.structured),
                dump_json(r.content), prov_json, r.kind)

    def _check_linked(self) -> None:
        """Refuse to commit into a file that was deleted while open: SQLite would go on
        writing to it, and every record would be gone with the last handle."""
        log = self._log
        if log is not None and log.unlinked():  # intents are committed before sending now
            with self._lock:
                self._log = None
            log.close()
        if self._watch is not None and os.fstat(self._watch).st_nlink == 0:
            raise OSError(f"the file {self.path!r} was deleted while the journal was open; "
                          "what was committed since is gone with it")

    def _set_aside(self, outcome: _Outcome, exc: Exception) -> None:
        """A record that cannot become a row is toolbench's bug, not a full disk: it stays in
        memory, is counted as not durable, and is not retried (it would fail forever)."""
        self._broken[outcome.record.call_id] = outcome
        self.problem = self._broken_problem(exc)

    def _broken_problem(self, exc: Exception | None = None) -> str:
        what = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
        count = len(self._broken)
        return (f"{count} record{'s' * (count != 1)} could not be turned into a row{what}; "
                "a toolbench bug, please report it")

    def _defer(self, reason: str) -> None:
        """A failed write: keep everything for later and stop making calls wait."""
        if not self.degraded:
            self._backoff = RETRY_FIRST_S
        self.degraded = True
        self.problem = f"it could not be written ({reason})"
        self._retry_at = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, RETRY_MAX_S)

    def _settle_intents(self, intents: Iterable[_Intent], ok: bool) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[Any]]] = {}
        for intent in intents:
            waiter, intent.waiter = intent.waiter, None
            if waiter is None:
                continue
            if isinstance(waiter, tuple):
                by_loop.setdefault(waiter[0], []).append(waiter[1])
            else:
                self._settle(waiter, ok)
        for loop, futures in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a loop that has gone away
                loop.call_soon_threadsafe(_resolve_all, futures, ok)

    @staticmethod
    def _settle(waiter: Any, value: Any) -> None:
        if waiter is None:
            return
        if isinstance(waiter, tuple):
            with contextlib.suppress(RuntimeError):
                waiter[0].call_soon_threadsafe(_resolve_all, [waiter[1]], value)
        elif not waiter.done():
            waiter.set_result(value)

    def _fail_all(self, items: Sequence[_Intent | _Marker], outs: list[_Outcome],
                  reason: str) -> bool:
        """A bug in the writer: everything is deferred and every waiter answered."""
        self._defer(reason)
        for outcome in outs:
            self._deferred[outcome.record.call_id] = outcome
        for item in items:
            if isinstance(item, _Intent):
                self._settle(item.waiter, False)
                item.waiter = None
                self._deferred_intents[item.call_id] = item  # so close keeps its log line
        closing = any(isinstance(i, _Marker) and i.kind == "close" for i in items)
        counts = [(i.waiter, self._not_durable(i)) for i in items if isinstance(i, _Marker)]
        if closing:
            self._finish()
        for waiter, count in counts:
            self._settle(waiter, count)
        return closing

    def _finish(self) -> None:
        LIVE_SESSIONS.discard(self.session)
        watch, self._watch = self._watch, None
        if watch is not None:
            with contextlib.suppress(OSError):
                os.close(watch)
        if self._db is not None:
            with contextlib.suppress(Exception):
                self._db.close()
            self._db = None
        if self._log_path is not None:
            with self._lock:
                log, self._log = self._log, None
            if log is not None:
                log.close()
            if not self._deferred and not self._deferred_intents:
                # Everything is in SQLite. Otherwise the file stays: reopening turns its
                # intents without a committed outcome into in_doubt records.
                with contextlib.suppress(OSError):
                    os.unlink(self._log_path)
        final: dict[str | None, int] = {}
        for outcome in self._deferred.values():
            if not outcome.orphan:
                final[outcome.tag] = final.get(outcome.tag, 0) + 1
        if self.problem is None and final:
            self.problem = "it was closed before they were written"
        with self._lock:
            self._final = final
            waiting, self._after_close = self._after_close, []
            counts = [(w, final.get(t, 0) + self._unqueued.get(t, 0)) for t, w in waiting]
        for waiter, count in counts:
            self._settle(waiter, count)


def _resolve_all(futures: list[asyncio.Future[Any]], value: Any) -> None:
    for fut in futures:
        if not fut.done():
            fut.set_result(value)
