"""Snapshots in the journal: the ``snapshots`` table, written off the loop, read back by time.

**The table.** ``snapshots(seq, taken, server, kind, cause, format, items)``: one row per
server and kind each time a listing is applied (``cause``: ``connect``, ``relist``,
``snapshot``), ``items`` the JSON list of that listing's items (see
``toolbench._bench.overtime.snapshots``). It is an extra table in a journal file: the ``calls`` and
``intents`` tables and the schema version are untouched, so an older toolbench still opens
the file (and ignores the table), and this one opens an older file (which has none yet).

**Never on the loop.** A snapshot is handed to one worker thread per bench (its own SQLite
connection, created lazily), like the journal's own writer, so SQLite never blocks the shared
loop. Writing a snapshot does not hold a connect back; ``close()`` waits for what is queued
(bounded) and a failure is one ``JournalWarning``, never an exception.

**Reading** (``load_snapshot``) refuses, with a message naming the file and the rule: a
symlink or anything but a regular file, a file that is not a toolbench journal or whose
tables are not its own (a generated column, a view or a trigger: see
``toolbench._bench.journal.file_checks``, which also stops a statement that runs 5 s without
a row), a journal or snapshot format newer than this toolbench, a single snapshot row larger
than ``MAX_ITEMS_BYTES``, snapshots in force larger than ``MAX_READ_BYTES`` in all, and one
server and kind with more than ``max_items`` items (the item cap, default 10,000 as
``max_tools``; so a read holds at most the item cap x kinds x servers). Sizes are read from
the rows' headers before their text, and items are decoded one by one, so a refused read
costs neither the text nor the objects. A row whose JSON is damaged is skipped and counted
in one warning.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import sqlite3
import threading
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolbench._bench.journal import file_checks
from toolbench._bench.journal.codec import APPLICATION_ID, SCHEMA_VERSION
from toolbench._bench.journal.journal import JournalWarning
from toolbench._transports.wire.limits import DEFAULT_MAX_TOOLS

if TYPE_CHECKING:
    import pandas as pd

SNAPSHOT_FORMAT = 1
"""The ``format`` of a snapshot row this toolbench writes; a newer one is refused on reading."""
MAX_ITEMS_BYTES = 64 * 1024 * 1024
"""The largest snapshot row read back (10,000 tools with big schemas stay well below)."""
MAX_READ_BYTES = 256 * 1024 * 1024
"""The most one read takes of the snapshots in force, in all (``max_bytes=`` for more)."""
WRITE_BUSY_S = 5.0
"""How long a snapshot write waits for another writer's lock (on its own thread)."""
CLOSE_WAIT_S = 10.0
DDL = ("CREATE TABLE IF NOT EXISTS snapshots (seq INTEGER PRIMARY KEY, taken TEXT NOT NULL, "
       "server TEXT NOT NULL, kind TEXT NOT NULL, cause TEXT, format INTEGER NOT NULL, "
       "items TEXT NOT NULL)")


class SnapshotWriter:
    """Stores snapshots in one journal file, on one worker thread of its own."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._pool = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="toolbench-snapshots")
        self._db: sqlite3.Connection | None = None
        self._pending: set[concurrent.futures.Future[None]] = set()
        self._lock = threading.Lock()
        self.failed = 0
        self.problem: str | None = None
        self._closed = False

    def store(self, server: str, kind: str, taken: datetime, cause: str,
              items: Sequence[Mapping[str, Any]]) -> None:
        """Queue one row; returns at once (the caller may be the shared loop)."""
        with self._lock:
            if self._closed:
                return
            future = self._pool.submit(self._write, server, kind, taken, cause, list(items))
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: concurrent.futures.Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)
        exc = future.exception()
        if exc is not None:
            self.failed += 1
            self.problem = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"journal {self.path!r}: a catalog snapshot could not be stored "
                          f"({self.problem}); bench.snapshot() still shows it",
                          JournalWarning, stacklevel=2)

    def _write(self, server: str, kind: str, taken: datetime, cause: str,
               items: list[Mapping[str, Any]]) -> None:
        text = json.dumps(items, ensure_ascii=True, default=repr, separators=(",", ":"))
        db = self._db
        if db is None:
            db = sqlite3.connect(self.path, timeout=WRITE_BUSY_S, isolation_level=None,
                                 check_same_thread=False)
            self._db = db
            db.execute(DDL)
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("INSERT INTO snapshots (taken, server, kind, cause, format, items) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (taken.isoformat(), server, kind, cause, SNAPSHOT_FORMAT, text))
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                db.execute("ROLLBACK")
            raise

    def wait(self, timeout: float = CLOSE_WAIT_S) -> bool:
        """Wait (a worker thread, never the loop) until everything queued is written."""
        with self._lock:
            pending = list(self._pending)
        _, not_done = concurrent.futures.wait(pending, timeout=timeout)
        return not not_done

    def close(self) -> None:
        """Write what is queued (bounded), then close the connection and the thread."""
        with self._lock:
            self._closed = True
        self.wait()

        def shut() -> None:
            if self._db is not None:
                with contextlib.suppress(Exception):
                    self._db.close()
                self._db = None

        with contextlib.suppress(RuntimeError):
            self._pool.submit(shut).result(CLOSE_WAIT_S)
        self._pool.shutdown(wait=False)


# -- reading ----------------------------------------------------------------------------------
def _refuse(path: str, why: str) -> ValueError:
    return ValueError(f"snapshot file {path!r} {why}")


def check_regular_file(path: str, what: str = "snapshot file") -> os.stat_result:
    """The file's lstat; a symlink, FIFO, device or folder is refused, naming the rule."""
    return file_checks.check_regular_file(path, what)


def parse_when(when: datetime | str | None) -> datetime | None:
    """A moment as an aware UTC datetime; a naive one is taken as UTC."""
    if when is None:
        return None
    if isinstance(when, str):
        try:
            when = datetime.fromisoformat(when.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"when={when!r} is not an ISO 8601 time "
                             "(e.g. '2026-01-31T12:00:00+00:00')") from None
    if not isinstance(when, datetime):
        raise TypeError(f"when is a datetime or an ISO string, not {type(when).__name__}")
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def read_snapshot(journal: str | os.PathLike[str], when: datetime | str | None = None, *,
                  max_bytes: int | None = None, max_items: int = DEFAULT_MAX_TOOLS,
                  ) -> list[tuple[str, datetime, dict[str, Any]]]:
    """``(server, taken, item)`` of the snapshot in force at ``when`` (default: the latest).

    For each server and kind, the last listing stored at or before ``when``; at most
    ``max_bytes`` (default ``MAX_READ_BYTES``) in all and ``max_items`` items a server and
    kind.
    """
    path = os.fspath(journal)
    at = parse_when(when)
    check_regular_file(path)
    db = file_checks.connect_read_only(path, "snapshot file")
    try:
        try:
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = {n for (n,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            raise _refuse(path, f"is not a toolbench journal (not a readable SQLite "
                                f"database: {exc})") from exc
        if app_id != APPLICATION_ID:
            raise _refuse(path, "is not a toolbench journal (a journal is made by "
                                "Bench(journal=...))")
        if version > SCHEMA_VERSION:
            raise _refuse(path, f"was written by a newer toolbench (journal schema version "
                                f"{version}; this toolbench reads up to {SCHEMA_VERSION})")
        file_checks.check_tables(db, path, "snapshot file")
        if "snapshots" not in tables:
            raise _refuse(path, "holds no catalog snapshots (a bench with this journal stores "
                                "one on every connect)")
        cap = MAX_READ_BYTES if max_bytes is None else max_bytes
        return _rows_in_force(db, path, at, cap, max_items)
    finally:
        db.close()


def _rows_in_force(db: sqlite3.Connection, path: str, at: datetime | None, max_bytes: int,
                   max_items: int) -> list[tuple[str, datetime, dict[str, Any]]]:
    try:  # not the items: a row's head is read without its (large) last column
        heads = db.execute("SELECT seq, taken, server, kind, format FROM snapshots "
                           "ORDER BY seq").fetchall()
    except sqlite3.DatabaseError as exc:
        raise _refuse(path, f"has a damaged snapshots table: {exc}") from exc
    latest: dict[tuple[str, str], tuple[int, datetime, int]] = {}
    damaged = 0
    for seq, taken_text, server, kind, fmt in heads:
        try:
            taken = parse_when(taken_text)
            if taken is None or not isinstance(server, str) or not isinstance(kind, str):
                raise ValueError("bad row")
        except (ValueError, TypeError):
            damaged += 1
            continue
        if at is not None and taken > at:
            continue
        best = latest.get((server, kind))
        if best is None or (taken, seq) >= (best[1], best[0]):
            latest[(server, kind)] = (seq, taken, fmt)
    chosen = sorted(latest.items())
    for _key, (_seq, _taken, fmt) in chosen:
        if not isinstance(fmt, int) or fmt > SNAPSHOT_FORMAT:
            raise _refuse(path, f"holds a snapshot in format {fmt!r}, written by a newer "
                                f"toolbench; this one reads format {SNAPSHOT_FORMAT}")
    encoding = _CODECS.get(str(db.execute("PRAGMA encoding").fetchone()[0]), "utf-8")
    sizes: dict[int, int | None] = {}
    for (server, _kind), (seq, _taken, _fmt) in chosen:
        size = sizes[seq] = _size(db, seq)
        if size is not None and size > MAX_ITEMS_BYTES:
            raise _refuse(path, f"holds a snapshot of {size:,} bytes (server {server!r}); "
                                f"the most read back is {MAX_ITEMS_BYTES:,}")
    total = sum(size or 0 for size in sizes.values())
    if total > max_bytes:
        raise _refuse(path, f"snapshots in force hold {total:,} bytes in all; the most read "
                            f"back is {max_bytes:,} (give max_bytes= to read more)")
    out: list[tuple[str, datetime, dict[str, Any]]] = []
    for (server, kind), (seq, taken, _fmt) in chosen:
        try:
            if sizes[seq] is None:
                raise ValueError("no text")
            items = _items(_text(db, seq, encoding), max_items)
        except _TooMany:
            raise _refuse(path, f"holds a snapshot of more than {max_items:,} items (server "
                                f"{server!r}, kind {kind!r}); the most read back is "
                                f"{max_items:,} a server and kind, the item cap (give "
                                "max_items= to read more)") from None
        except (ValueError, TypeError, RecursionError, sqlite3.DatabaseError):
            damaged += 1
            continue
        out.extend((server, taken, item) for item in items)
    if damaged:
        warnings.warn(f"snapshot file {path!r}: skipped {damaged} damaged snapshot "
                      f"row{'s' * (damaged != 1)}", JournalWarning, stacklevel=3)
    return out


_CODECS = {"UTF-8": "utf-8", "UTF-16le": "utf-16-le", "UTF-16be": "utf-16-be"}
_SPACE = re.compile(r"[ \t\n\r]*")


class _TooMany(Exception):
    """A snapshot row holds more items than the cap."""


def _size(db: sqlite3.Connection, seq: int) -> int | None:
    """The bytes of a row's ``items``, read from the record's header (not its text); None for
    a value that is not text (a damaged row)."""
    try:
        with db.blobopen("snapshots", "items", seq, readonly=True) as blob:
            return len(blob)
    except sqlite3.Error:
        return None


def _text(db: sqlite3.Connection, seq: int, encoding: str) -> str:
    with db.blobopen("snapshots", "items", seq, readonly=True) as blob:
        return blob.read().decode(encoding)


def _items(text: str, cap: int) -> list[dict[str, Any]]:
    """The JSON list of objects ``text``, decoded one item at a time: past ``cap`` items it
    stops (``_TooMany``) before building the rest."""
    decoder = json.JSONDecoder()
    at = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if text[at:at + 1] != "[":
        raise ValueError("not a list")
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    items: list[dict[str, Any]] = []
    if text[at:at + 1] == "]":
        return items
    while True:
        item, at = decoder.raw_decode(text, at)
        if not isinstance(item, dict):
            raise ValueError("not a list of objects")
        items.append(item)
        if len(items) > cap:
            raise _TooMany
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        mark = text[at:at + 1]
        if mark == "]":
            if text[at + 1:].strip():
                raise ValueError("extra data")
            return items
        if mark != ",":
            raise ValueError("expected , or ]")
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]


def load_snapshot(journal: str | os.PathLike[str], when: datetime | str | None = None, *,
                  max_bytes: int | None = None, max_items: int = DEFAULT_MAX_TOOLS,
                  ) -> pd.DataFrame:
    """Read back a catalog snapshot stored in a journal.

    A bench with a journal stores a snapshot on every connect, re-list and reconnect (and on
    ``bench.snapshot()``); this returns, for every server, the one in force at ``when``.

    Args:
        journal: the journal file (``Bench(journal=...)``).
        when: a ``datetime`` or an ISO 8601 string; the snapshot in force then (the last
            one stored at or before it, per server and kind). ``None``: the latest. A time
            without a zone is taken as UTC.
        max_bytes: the most read, in all (default ``MAX_READ_BYTES``, 256 MiB).
        max_items: the most items of one server and kind (default 10,000, as
            ``max_tools``); give the ``max_tools`` the bench connected with.

    Returns:
        A snapshot frame like ``bench.snapshot()``'s (``server``, ``kind``, ``name``,
        ``fingerprint``, ``taken`` and the declared fields); ``tb.diff`` compares two.

    Raises:
        ValueError: the file is missing, a symlink or not a regular file, not a toolbench
            journal or one whose tables are not its own (a generated column, a view, a
            trigger), from a newer toolbench; it holds no snapshots, one larger than
            ``MAX_ITEMS_BYTES`` or over ``max_items`` items, or more than ``max_bytes`` in
            all; or a statement ran 5 s without a row. Each names the file and the rule.

    Example:
        >>> before = tb.load_snapshot("calls.sqlite", when="2026-01-31T12:00Z")  # doctest: +SKIP
        >>> tb.diff(before, bench.snapshot())                                    # doctest: +SKIP
    """
    from toolbench._bench.overtime.snapshots import snapshot_frame

    return snapshot_frame(read_snapshot(journal, when, max_bytes=max_bytes, max_items=max_items))
