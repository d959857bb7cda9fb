"""A SQLite (WAL) file that holds every call's outcome, and the intents of calls in flight.

Why intents: a call in flight when the process is killed would otherwise leave no trace, and
a later ``map(..., resume=True)`` would run it again without anyone knowing. The intent is on
disk before a byte of the call is sent: appended to the session's intent log (see
``toolbench._intent_log``: one ``write(2)``, about 20 µs a call, where waiting for a SQLite
commit cost about 200), and committed to SQLite with the outcomes. The outcome (the full
record) replaces it. Reopening the file turns an intent whose process is gone, in SQLite or
in a dead session's log, into an ``in_doubt`` record.

Why one writer thread: SQLite may wait (a lock held by another process, a slow disk), and the
shared event loop must never wait on it. Every commit happens on one thread, which commits
everything that is ready in one transaction (group commit). While calls come, it looks for
work every LINGER_S by itself, so a stream of calls costs it no wake-ups. Without an intent
log (it could not be created, or a write failed), a call waits for its intent's commit,
bounded, as before.

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
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import queue
import re
import sqlite3
import struct
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from toolbench._intent_log import (
    COMPACT_BYTES,
    IntentLog,
    dead_logs,
    intent_line,
    proc_tag,
    process_alive,
    started_text,
)
from toolbench._records import COLUMNS, Record

APPLICATION_ID = 0x74624A4C
"""``PRAGMA application_id`` of a toolbench journal ("tbJL"): how a journal is recognised."""
SCHEMA_VERSION = 2
"""``PRAGMA user_version``. 1 was the unversioned ``calls``-only file (migrated on open);
2 adds the ``intents`` table. A later toolbench migrates from here; this one refuses newer."""
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
ACTIVE_S = 1.0
"""After work, the writer looks for more every LINGER_S for this long, so a stream of calls
never has to wake it (a wake-up costs the caller more than the commit)."""
"""How long an intent may wait for others while other calls run (group commit in a map)."""
MAX_BATCH = 512
"""Outcomes waiting beyond this many are committed without waiting for company."""
OPEN_BUSY_S = 5.0
"""How long opening waits for a lock when the file must be created or migrated."""
CLOSE_WAIT_S = 10.0
"""The most close() waits for the writer to commit what is queued."""

_LEGACY_TABLES = frozenset({"calls", "sqlite_sequence"})
_TABLES = frozenset({"calls", "intents"})
_DISPOSITIONS = frozenset({"landed", "in_doubt", "did_not_happen"})
INTENT_COLUMNS = ("call_id", "session", "pid", "proc", "batch", "started", "server", "tool",
                  "name", "arguments", "provenance")
_CALLS_DDL = (
    "CREATE TABLE IF NOT EXISTS calls (seq INTEGER PRIMARY KEY, "
    + ", ".join(f"{c} {'INTEGER' if c == 'ok' else 'REAL' if c == 'latency_ms' else 'TEXT'}"
                for c in COLUMNS)
    + ")"
)
_INTENTS_DDL = (  # only calls in flight live here: tiny, keyed by call, no rowid
    "CREATE TABLE IF NOT EXISTS intents (call_id TEXT PRIMARY KEY, "
    + ", ".join(f"{c} {'INTEGER' if c == 'pid' else 'TEXT'}" for c in INTENT_COLUMNS[1:])
    + ") WITHOUT ROWID"
)
_INSERT_CALL = (f"INSERT INTO calls ({', '.join(COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(COLUMNS))})")
_INSERT_INTENT = (f"INSERT OR REPLACE INTO intents ({', '.join(INTENT_COLUMNS)}) "
                  f"VALUES ({', '.join('?' * len(INTENT_COLUMNS))})")
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)


def _encode_with(make: Any) -> Callable[[Any], str]:
    """JSON text without JSONEncoder's per-call setup (a third of a journaled map's writer
    time went there); the same output as ``_ENCODER.encode``."""
    if make is None:
        return _ENCODER.encode
    encoder = make(None, str, json.encoder.encode_basestring, None, ": ", ", ", False, False,
                   True)

    def encode(value: Any) -> str:
        return "".join(encoder(value, 0))

    return encode


_encode = _encode_with(_C_ENCODER)

ORPHAN_ERROR = ("the process ended while the call was in flight (pid {pid}); found on "
                "reopening the journal, so whether the tool ran is unknown")


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


_SURROGATE = re.compile("[\ud800-\udfff]")


def _dump(value: Any) -> str | None:
    """JSON text; a value that cannot be encoded (a cycle) is kept as its repr, not lost."""
    if value is None:
        return None
    try:
        text = _encode(value)
    except (ValueError, TypeError, RecursionError):
        text = _encode({"_unencodable": repr(value)[:2000]})
    if not text.isascii() and _SURROGATE.search(text):
        # SQLite takes UTF-8 only: one lone surrogate (a refused argument, a server's
        # "\udc80") would fail the whole commit, good records included. ASCII escapes keep it.
        text = json.dumps(json.loads(text), ensure_ascii=True)
    return text


def _utf8(value: Any) -> Any:
    """A text column's value SQLite can store: lone surrogates become backslash escapes."""
    if isinstance(value, str) and not value.isascii() and _SURROGATE.search(value):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


_LIVE_SESSIONS: set[str] = set()
"""Sessions of journals open in this process: their intents are in flight, not orphans."""


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


@dataclass(slots=True)
class _Marker:
    kind: str  # "flush" or "close"
    tag: str | None = None
    waiter: Any = None


@dataclass(frozen=True, slots=True)
class Inspection:
    """What opening found: the records, the orphans, and anything skipped."""

    records: list[Record]
    orphans: list[Record]
    damaged_rows: int
    damaged_file: str | None
    log_orphans: tuple[Record, ...] = ()  # in dead sessions' intent logs only
    dead_logs: tuple[str, ...] = ()  # those logs, removed once their orphans are committed


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
        found = _inspect(self.path)
        self._records = found.records + found.orphans + list(found.log_orphans)
        self.problem: str | None = None
        """Why records are not being written, when they are not (None when healthy)."""
        self._db: sqlite3.Connection | None = None
        damage = found.damaged_file
        if damage is None:
            self._db, damage = _open_for_writing(self.path)
        if damage is not None:
            self.problem = (f"the file is damaged ({damage}); nothing more is written to "
                            "it. Move it aside to journal again")
        _LIVE_SESSIONS.add(self.session)
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
        """Hand over the full record; it replaces its intent, in the next commit.

        It does not wake the writer (which commits it with the next intent, or LINGER_S
        later), so a stream of calls costs one commit per call.
        """
        with self._lock:
            if self._closed:  # too late for the file: counted, so the operation says so
                self._unqueued[tag] = self._unqueued.get(tag, 0) + 1
                self.problem = self.problem or "it was closed before they were written"
                return
            if not self._outs:
                self._outs_since = time.monotonic()
            self._outs.append(_Outcome(record, tag))
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
            top = max((intent.seq for intent in intents), default=0)
            if top:  # all intents up to this one are in SQLite (earlier batches were too)
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
        if marker.kind == "close":
            return sum(1 for o in self._deferred.values() if not o.orphan)
        return sum(1 for o in self._deferred.values() if o.tag == marker.tag and not o.orphan)

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
                intent_rows.append((*row[:5], row[5].isoformat(), *row[6:9], _dump(row[9]),
                                    _dump(row[10])))
            call_rows = []
            deletes = []
            orphans = []
            logged: list[tuple[Any, ...]] = []
            for outcome in outcomes:
                r = outcome.record
                known = inflight.get(r.call_id)
                if known is not None:  # written with its intent already: reuse the text
                    deletes.append((r.call_id,))
                    started, args_json, prov_json = known
                else:
                    started = r.started.isoformat()
                    args_json, prov_json = _dump(r.arguments), _dump(r.provenance)
                row = (r.call_id, r.batch, started, r.server, r.tool, r.name,
                       args_json, int(r.ok), r.disposition, r.error_type, _utf8(r.error),
                       r.latency_ms, _utf8(r.text), _dump(r.structured), _dump(r.content),
                       prov_json)
                if outcome.logged:
                    logged.append(row)
                elif outcome.orphan:
                    orphans.append(row)
                else:
                    call_rows.append(row)
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
        _LIVE_SESSIONS.discard(self.session)
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


# -- opening --------------------------------------------------------------------------------
def _refuse(path: str, why: str) -> ValueError:
    return ValueError(f"journal {path!r} {why}")


def _inspect(path: str) -> Inspection:
    """Read what is there without writing a byte: classify the file, load its rows."""
    if os.path.isdir(path):
        raise _refuse(path, "is a directory; give a file path such as 'calls.sqlite'")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise _refuse(path, f"cannot be created: the folder {parent!r} does not exist")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return Inspection([], [], 0, None)
    uri = "file:" + _uri_path(path) + "?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise _refuse(path, f"cannot be opened: {exc}") from exc
    try:
        # A truncated file is still readable up to the damage with this set; it changes
        # nothing on disk (the connection is read-only).
        db.execute("PRAGMA writable_schema=ON")
        try:
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = {name: [c[1] for c in db.execute(f"PRAGMA table_info({_quote(name)})")]
                      for (name,) in db.execute(
                          "SELECT name FROM sqlite_master WHERE type = 'table'")}
            others = [n for (n,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type != 'table'")]
        except sqlite3.DatabaseError as exc:
            raise _refuse(path, f"is not a toolbench journal (not a readable SQLite "
                                f"database: {exc}); it was left untouched") from exc
        _classify(path, app_id, version, tables, others)
        if not tables:
            return Inspection([], [], 0, None)
        records, bad, damage = _load_calls(db, path)
        orphans: list[Record] = []
        if "intents" in tables:
            orphans, bad_intents, intent_damage = _load_orphans(db)
            bad += bad_intents
            damage = damage or intent_damage
        logs = dead_logs(path, _LIVE_SESSIONS)
        log_orphans: list[Record] = []
        if logs:
            known = {r.call_id for r in records}
            known.update(r.call_id for r in orphans)
            for log in logs:
                found, bad_lines = _decode(log.rows, functools.partial(_log_orphan,
                                                                       pid=log.pid))
                bad += bad_lines + log.damaged
                for record in found:
                    if record.call_id not in known:
                        known.add(record.call_id)
                        log_orphans.append(record)
        return Inspection(records, orphans, bad, damage, tuple(log_orphans),
                          tuple(log.path for log in logs))
    finally:
        db.close()


def _log_orphan(row: Sequence[Any], pid: int) -> Record:
    """An intent from a dead session's log, as the in_doubt record that replaces it."""
    call_id, batch, started, server, tool, name, args, prov = row
    return _record((call_id, batch, started_text(started), server, tool, name, _dump(args), 0,
                    "in_doubt", "TimedOut", ORPHAN_ERROR.format(pid=pid), None, None, None,
                    None, _dump(prov)))


def _uri_path(path: str) -> str:
    from urllib.parse import quote

    return quote(os.path.abspath(path))


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _classify(path: str, app_id: int, version: int, tables: Mapping[str, list[str]],
              others: list[str]) -> None:
    """Refuse anything that is not a toolbench journal (or an empty database)."""
    names = set(tables)
    if app_id == APPLICATION_ID:
        if version > SCHEMA_VERSION:
            raise _refuse(path, f"was written by a newer toolbench (journal schema version "
                                f"{version}; this toolbench reads up to {SCHEMA_VERSION}); "
                                "it was left untouched")
        missing = [c for c in COLUMNS if c not in tables.get("calls", [])]
        if missing or "intents" not in names:
            state = "present" if "intents" in names else "missing"
            raise _refuse(path, f"is a toolbench journal without its tables (calls lacks "
                                f"{missing}, intents {state}); it was left untouched")
        return
    if app_id == 0 and version == 0 and not names and not others:
        return  # an empty database: nothing to lose, it becomes a journal
    if (app_id == 0 and version == 0 and "calls" in names and names <= _LEGACY_TABLES
            and all(c in tables["calls"] for c in COLUMNS) and not others):
        return  # a journal from before schema versions: migrated when opened for writing
    what = (f"application_id {app_id:#x}" if app_id else
            f"tables {sorted(names)}" if names else f"schema objects {sorted(others)}")
    raise _refuse(path, f"is a SQLite database but not a toolbench journal ({what}); it was "
                        "left untouched. Give a new file name for the journal")


def _open_for_writing(path: str) -> tuple[sqlite3.Connection | None, str | None]:
    """The writer's connection (WAL; schema created or migrated under the write lock).

    A file SQLite finds damaged gives ``(None, why)``: its records were loaded, but nothing
    is written into a damaged file.
    """
    try:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None,
                             timeout=OPEN_BUSY_S)
    except sqlite3.Error as exc:
        raise _refuse(path, f"cannot be opened: {exc}") from exc
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        if app_id != APPLICATION_ID or version != SCHEMA_VERSION:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("BEGIN IMMEDIATE")
            # Checked again under the lock: another process may have set it up meanwhile,
            # or put something else there since we looked.
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            names = {n for (n,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if app_id not in (0, APPLICATION_ID) or not names <= _LEGACY_TABLES | _TABLES:
                db.execute("ROLLBACK")
                raise _refuse(path, "changed while it was being opened; it was left untouched")
            db.execute(_CALLS_DDL)
            db.execute(_INTENTS_DDL)
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA busy_timeout={int(BUSY_S * 1000)}")
    except ValueError:
        db.close()
        raise
    except sqlite3.DatabaseError as exc:
        db.close()
        if (exc.sqlite_errorcode & 0xFF) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return None, str(exc)
        raise _refuse(path, f"cannot be written: {exc}") from exc
    return db, None


# -- reading rows ---------------------------------------------------------------------------
def _scan(db: sqlite3.Connection, table: str,
          columns: Sequence[str]) -> tuple[list[tuple[Any, ...]], str | None]:
    """Every readable row of ``table`` (``seq`` first), in order, past any damaged page.

    A damaged page stops a scan; the next readable row is found by probing further on, so
    one bad page costs the rows on it, not the rest of the file.
    """
    select = f"SELECT seq, {', '.join(columns)} FROM {table} WHERE seq > ? ORDER BY seq"
    rows: list[tuple[Any, ...]] = []
    after = -1
    damage: str | None = None
    while True:
        start = after
        try:
            for row in db.execute(select, (after,)):
                rows.append(row)
                after = row[0]
            return rows, damage
        except sqlite3.DatabaseError as exc:
            damage = damage or str(exc)
        resume = _next_readable(db, table, select, max(after, start + 1))
        if resume is None:
            return rows, damage
        after = resume - 1


def _next_readable(db: sqlite3.Connection, table: str, select: str, after: int) -> int | None:
    for step in (2 ** k for k in range(48)):
        try:
            row = db.execute(f"SELECT seq FROM {table} WHERE seq > ? ORDER BY seq LIMIT 1",
                             (after + step,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        if row is None:
            return None
        try:  # the row itself must be readable, not only its key
            db.execute(select + " LIMIT 1", (row[0] - 1,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        return int(row[0])
    return None


def _object(text: Any, kind: type) -> Any:
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, kind):
        raise ValueError(f"expected a JSON {kind.__name__}")
    return value


def _text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError("expected text")
    return value


def _when(value: Any) -> datetime:
    started = datetime.fromisoformat(value)
    if started.tzinfo is None:
        raise ValueError("a time without a zone")
    return started


def _record(row: Sequence[Any]) -> Record:
    (call_id, batch, started, server, tool, name, arguments, ok, disposition, error_type,
     error, latency_ms, text, structured, content, provenance) = row
    if not all(isinstance(v, str) and v for v in (call_id, server, tool, name)):
        raise ValueError("identity columns must be text")
    if ok not in (0, 1) or disposition not in _DISPOSITIONS:
        raise ValueError("bad outcome")
    if latency_ms is not None and (isinstance(latency_ms, bool)
                                   or not isinstance(latency_ms, (int, float))):
        raise ValueError("bad latency")
    blocks = _object(content, list) or []
    if not all(isinstance(b, dict) for b in blocks):
        raise ValueError("content blocks must be objects")
    args = _object(arguments, dict)
    return Record(
        call_id=call_id, batch=_text(batch), started=_when(started), server=server,
        tool=tool, name=name, arguments={} if args is None else args, ok=bool(ok),
        disposition=disposition, error_type=_text(error_type), error=_text(error),
        latency_ms=None if latency_ms is None else float(latency_ms), text=_text(text),
        structured=_object(structured, dict), content=blocks,
        provenance=_object(provenance, dict),
    )


def _decode(rows: Iterable[Sequence[Any]],
            decode: Callable[[Sequence[Any]], Any]) -> tuple[list[Any], int]:
    good, bad = [], 0
    for row in rows:
        try:
            good.append(decode(row))
        except (ValueError, TypeError, KeyError, RecursionError):
            bad += 1
    return good, bad


def _load_calls(db: sqlite3.Connection, path: str) -> tuple[list[Record], int, str | None]:
    rows, damage = _scan(db, "calls", COLUMNS)
    if damage is not None:
        # The B-tree is broken (a truncated file loses the pages that lead to its rows):
        # read the surviving leaf pages directly, as SQLite's own recovery does.
        seen = {row[0] for row in rows}
        try:
            extra = [row for row in _leaf_rows(path, len(COLUMNS) + 1) if row[0] not in seen]
        except (OSError, ValueError, IndexError):
            extra = []
        rows = sorted([*rows, *extra], key=lambda row: row[0])
        known = {row[0] for row in rows}
        top = max(known, default=0)
        lost = top - len(known)  # calls are append-only: seq runs 1, 2, 3, ... without gaps
        damage = (f"{damage}; {lost} record{'s' * (lost != 1)} before #{top} could not be "
                  f"read, nor any after it")
    records, bad = _decode(rows, lambda row: _record(row[1:]))
    return records, bad, damage


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9


_FIXED = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8}


def _leaf_rows(path: str, width: int) -> list[tuple[Any, ...]]:
    """``(rowid, col1, ...)`` of every table-leaf cell with ``width`` columns in the file.

    Reads the file format directly (https://sqlite.org/fileformat2.html): page size and
    reserved bytes from the header, then each table-leaf page's cells, following overflow
    chains while they last. A cell whose bytes are gone is skipped.
    """
    with open(path, "rb") as f:
        data = f.read()
    if data[:16] != b"SQLite format 3\x00":
        return []
    page_size = int.from_bytes(data[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    usable = page_size - data[20]
    pages = len(data) // page_size
    out: list[tuple[Any, ...]] = []
    for number in range(1, pages + 1):
        base = (number - 1) * page_size
        head = base + (100 if number == 1 else 0)
        if data[head] != 0x0D:  # not a table leaf
            continue
        cells = int.from_bytes(data[head + 3:head + 5], "big")
        for i in range(cells):
            try:
                at = base + int.from_bytes(data[head + 8 + 2 * i:head + 10 + 2 * i], "big")
                size, at = _varint(data, at)
                rowid, at = _varint(data, at)
                payload = _payload(data, at, size, usable, page_size)
                row = _decode_record(payload, width)
            except (IndexError, ValueError, UnicodeDecodeError):
                continue
            if row is not None:
                out.append((rowid, *row[1:]))
    return out


def _payload(data: bytes, at: int, size: int, usable: int, page_size: int) -> bytes:
    most = usable - 35
    if size <= most:
        return data[at:at + size]
    least = (usable - 12) * 32 // 255 - 23
    local = least + (size - least) % (usable - 4)
    local = local if local <= most else least
    parts = [data[at:at + local]]
    remaining = size - local
    page = int.from_bytes(data[at + local:at + local + 4], "big")
    while remaining > 0:
        if page < 1 or page * page_size > len(data):
            raise ValueError("overflow page lost")
        base = (page - 1) * page_size
        take = min(remaining, usable - 4)
        parts.append(data[base + 4:base + 4 + take])
        remaining -= take
        page = int.from_bytes(data[base:base + 4], "big")
    return b"".join(parts)


def _decode_record(payload: bytes, width: int) -> list[Any] | None:
    header, at = _varint(payload, 0)
    types = []
    while at < header:
        kind, at = _varint(payload, at)
        types.append(kind)
    if len(types) != width:
        return None
    values: list[Any] = []
    at = header
    for kind in types:
        if kind == 0:
            values.append(None)
        elif kind in (8, 9):
            values.append(kind - 8)
        elif kind == 7:
            values.append(struct.unpack(">d", payload[at:at + 8])[0])
            at += 8
        elif kind in _FIXED:
            n = _FIXED[kind]
            values.append(int.from_bytes(payload[at:at + n], "big", signed=True))
            at += n
        elif kind >= 12:
            n = (kind - 12) // 2
            chunk = payload[at:at + n]
            if len(chunk) != n:
                raise ValueError("record cut short")
            values.append(chunk.decode() if kind % 2 else chunk)
            at += n
        else:
            raise ValueError("reserved serial type")
    return values


def _load_orphans(db: sqlite3.Connection) -> tuple[list[Record], int, str | None]:
    """Intents whose process is gone, as the in_doubt records that replace them."""
    try:  # a small table (only calls in flight): read whole, or not at all
        rows = db.execute(f"SELECT {', '.join(INTENT_COLUMNS)} FROM intents "
                          "ORDER BY started").fetchall()
    except sqlite3.DatabaseError as exc:
        return [], 0, str(exc)
    live: dict[tuple[int, str | None], bool] = {}
    me = os.getpid()

    def decode(row: Sequence[Any]) -> Record | None:
        call_id, session, pid, proc, batch, started, server, tool, name, args, prov = row
        if not isinstance(pid, int) or not isinstance(session, str):
            raise ValueError("bad owner")
        if pid == me:
            if session in _LIVE_SESSIONS:
                return None
        else:
            key = (pid, _text(proc))
            if key not in live:
                live[key] = process_alive(pid, key[1])
            if live[key]:
                return None  # another process's call, still in flight
        return _record((call_id, batch, started, server, tool, name, args, 0, "in_doubt",
                        "TimedOut", ORPHAN_ERROR.format(pid=pid), None, None, None, None,
                        prov))

    found, bad = _decode(rows, decode)
    return [f for f in found if f is not None], bad, None
