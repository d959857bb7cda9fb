"""The journal's writer thread: group commit, retries with backoff, and what stays in memory.

``JournalWriter`` is the base of ``Journal`` (``toolbench._bench.journal.journal``), which opens the
file and takes intents and outcomes from the event loop; everything here runs on the one
writer thread (except ``_settle``, which answers a waiter from wherever it is called). Every
commit happens on that thread, which commits everything that is ready in one transaction
(group commit). While calls come, it looks for work every LINGER_S by itself, so a stream of
calls costs it no wake-ups. A commit that fails (locked, disk full, deleted file) defers its
rows and retries with backoff; a record that cannot become a row is a bug of ours, kept in
memory and counted, never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolbench._bench.journal.codec import INTENT_COLUMNS, dump_json, sqlite_text
from toolbench._bench.journal.file import LIVE_SESSIONS
from toolbench._bench.journal.intent_log import COMPACT_BYTES
from toolbench._bench.journal.record import COLUMNS, Record

if TYPE_CHECKING:
    from toolbench._bench.journal.intent_log import IntentLog

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
INTENT_HOLD_S = 0.1
"""How long an intent that is in the intent log stays out of SQLite, waiting for its outcome
(issue 46). The log already makes it durable; a call that ends within this time (nearly
every call of a map) then costs SQLite one row, not an intent row, its call row and a
delete. An intent held longer, or one while the log is due to be emptied, is committed."""
MAX_BATCH = 512
"""Outcomes waiting beyond this many are committed without waiting for company."""
_INSERT_CALL = (f"INSERT INTO calls ({', '.join(COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(COLUMNS))})")
_INSERT_INTENT = (f"INSERT OR REPLACE INTO intents ({', '.join(INTENT_COLUMNS)}) "
                  f"VALUES ({', '.join('?' * len(INTENT_COLUMNS))})")


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



class JournalWriter:
    """The writer-thread half of ``Journal``: what it commits, when, and what it does when
    it cannot."""

    if TYPE_CHECKING:  # the state Journal.__init__ sets up (shared under ``_lock``)
        path: str
        session: str
        problem: str | None
        degraded: bool
        _db: sqlite3.Connection | None
        _watch: int | None
        _queue: queue.SimpleQueue[None]
        _items: list[_Intent | _Marker]
        _items_since: float
        _waited: int
        _running: int
        _lock: threading.Lock
        _outs: list[_Outcome]
        _outs_since: float
        _idle: bool
        _unqueued: dict[str | None, int]
        _final: dict[str | None, int] | None
        _after_close: list[tuple[str | None, Any]]
        _inflight: dict[str, tuple[str, str | None, str | None, Any]]
        _deferred_intents: dict[str, _Intent]
        _held: dict[str, tuple[_Intent, float]]
        _deferred: dict[str, _Outcome]
        _broken: dict[str, _Outcome]
        _retry_at: float
        _last_attempt: float
        _backoff: float
        _busy_ms: int
        _active_until: float
        _stale_logs: list[str]
        _log: IntentLog | None
        _covered: int
        _log_path: str | None

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
        if self._held and now >= self._held_until():
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
            if self._held:
                held = self._held_until() - now
                wait = held if wait is None else min(wait, held)
            if self.degraded and (self._deferred or self._deferred_intents):
                retry = self._retry_at - now
                wait = retry if wait is None else min(wait, retry)
            self._idle = wait is None
        return wait

    def _held_until(self) -> float:
        """When the oldest held intent is due in SQLite (writer thread only)."""
        return min(since for _, since in self._held.values()) + INTENT_HOLD_S

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
        held = self._held
        released = 0  # the log's place of held intents whose outcome is here
        for call_id in finished:
            found = held.pop(call_id, None)
            if found is not None:
                released = max(released, found[0].seq)
        # An intent whose outcome is here needs no row of its own; one in the intent log
        # waits INTENT_HOLD_S for its outcome (unless the log is due to be emptied).
        log = self._log
        hold = attempt and not closing and log is not None and log.size < COMPACT_BYTES
        to_write = []
        for intent in intents:
            if intent.call_id in finished:
                continue
            if hold and intent.seq and intent.waiter is None:
                held[intent.call_id] = (intent, now)
            else:
                to_write.append(intent)
        if held and (not hold or now >= self._held_until()):
            due = [c for c, (_, since) in held.items() if not hold or now >= since + INTENT_HOLD_S]
            to_write.extend(held.pop(c)[0] for c in due)
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
                      max((outcome.seq for outcome in outcomes), default=0), released)
            if held:  # a held intent's line is not in SQLite: nothing from it on is covered
                top = min(top, min(i.seq for i, _ in held.values()) - 1)
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
            for intent, row in zip(intents, intent_rows, strict=True):
                inflight[row[0]] = (row[5], row[9], row[10], intent.row[10])
            self._running = len(inflight) - sum(1 for o in self._outs
                                                if o.record.call_id in inflight)
        return True

    def _outcome_row(self, r: Record) -> tuple[Any, ...]:
        known = self._inflight.get(r.call_id)
        if known is not None:  # written with its intent already: reuse the text
            started, args_json, prov_json, prov = known
            if r.provenance != prov and (r.provenance or prov):  # added to since (a retry)
                prov_json = dump_json(r.provenance)
        else:
            started = r.started.isoformat()
            args_json, prov_json = dump_json(r.arguments), dump_json(r.provenance)
        return (r.call_id, r.batch, started, r.server, r.tool, r.name,
                args_json, int(r.ok), r.disposition, r.error_type, sqlite_text(r.error),
                r.latency_ms, sqlite_text(r.text), dump_json(r.structured),
                dump_json(r.content), prov_json, r.kind, r.attempts, r.queued_ms)

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
        for intent, _ in self._held.values():
            self._deferred_intents[intent.call_id] = intent
        self._held.clear()
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
