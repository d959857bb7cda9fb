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
symlink or anything but a regular file, a file that is not a toolbench journal, a journal or
snapshot format newer than this toolbench, and a single snapshot row larger than
``MAX_ITEMS_BYTES``. A row whose JSON is damaged is skipped and counted in one warning.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import sqlite3
import stat
import threading
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolbench._bench.journal.codec import APPLICATION_ID, SCHEMA_VERSION
from toolbench._bench.journal.journal import JournalWarning

if TYPE_CHECKING:
    import pandas as pd

SNAPSHOT_FORMAT = 1
"""The ``format`` of a snapshot row this toolbench writes; a newer one is refused on reading."""
MAX_ITEMS_BYTES = 64 * 1024 * 1024
"""The largest snapshot row read back (10,000 tools with big schemas stay well below)."""
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
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise ValueError(f"{what} {path!r} does not exist") from None
    except OSError as exc:
        raise ValueError(f"{what} {path!r} cannot be read: {exc.strerror}") from exc
    if stat.S_ISLNK(info.st_mode):
        raise ValueError(f"{what} {path!r} is a symbolic link; toolbench reads only regular "
                         "files (give the link's target)")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{what} {path!r} is not a regular file (a folder, FIFO or device); "
                         "toolbench reads only regular files")
    return info


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


def read_snapshot(journal: str | os.PathLike[str], when: datetime | str | None = None,
                  ) -> list[tuple[str, datetime, dict[str, Any]]]:
    """``(server, taken, item)`` of the snapshot in force at ``when`` (default: the latest).

    For each server and kind, the last listing stored at or before ``when``.
    """
    path = os.fspath(journal)
    at = parse_when(when)
    check_regular_file(path)
    uri = "file:" + _quoted(path) + "?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise _refuse(path, f"cannot be opened: {exc}") from exc
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
        if "snapshots" not in tables:
            raise _refuse(path, "holds no catalog snapshots (a bench with this journal stores "
                                "one on every connect)")
        return _rows_in_force(db, path, at)
    finally:
        db.close()


def _rows_in_force(db: sqlite3.Connection, path: str, at: datetime | None,
                   ) -> list[tuple[str, datetime, dict[str, Any]]]:
    try:
        heads = db.execute(
            "SELECT seq, taken, server, kind, format, length(items) FROM snapshots "
            "ORDER BY seq").fetchall()
    except sqlite3.DatabaseError as exc:
        raise _refuse(path, f"has a damaged snapshots table: {exc}") from exc
    latest: dict[tuple[str, str], tuple[int, datetime, int, int]] = {}
    damaged = 0
    for seq, taken_text, server, kind, fmt, size in heads:
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
            latest[(server, kind)] = (seq, taken, fmt, size or 0)
    out: list[tuple[str, datetime, dict[str, Any]]] = []
    for (server, _kind), (seq, taken, fmt, size) in sorted(latest.items()):
        if not isinstance(fmt, int) or fmt > SNAPSHOT_FORMAT:
            raise _refuse(path, f"holds a snapshot in format {fmt!r}, written by a newer "
                                f"toolbench; this one reads format {SNAPSHOT_FORMAT}")
        if size > MAX_ITEMS_BYTES:
            raise _refuse(path, f"holds a snapshot of {size:,} bytes (server {server!r}); "
                                f"the most read back is {MAX_ITEMS_BYTES:,}")
        (text,) = db.execute("SELECT items FROM snapshots WHERE seq = ?", (seq,)).fetchone()
        try:
            items = json.loads(text)
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise ValueError("not a list of objects")
        except (ValueError, TypeError, RecursionError):
            damaged += 1
            continue
        out.extend((server, taken, item) for item in items)
    if damaged:
        warnings.warn(f"snapshot file {path!r}: skipped {damaged} damaged snapshot "
                      f"row{'s' * (damaged != 1)}", JournalWarning, stacklevel=3)
    return out


def _quoted(path: str) -> str:
    from urllib.parse import quote

    return quote(os.path.abspath(path))


def load_snapshot(journal: str | os.PathLike[str],
                  when: datetime | str | None = None) -> pd.DataFrame:
    """Read back a catalog snapshot stored in a journal.

    A bench with a journal stores a snapshot on every connect, re-list and reconnect (and on
    ``bench.snapshot()``); this returns, for every server, the one in force at ``when``.

    Args:
        journal: the journal file (``Bench(journal=...)``).
        when: a ``datetime`` or an ISO 8601 string; the snapshot in force then (the last
            one stored at or before it, per server and kind). ``None``: the latest. A time
            without a zone is taken as UTC.

    Returns:
        A snapshot frame like ``bench.snapshot()``'s (``server``, ``kind``, ``name``,
        ``fingerprint``, ``taken`` and the declared fields); ``tb.diff`` compares two.

    Raises:
        ValueError: the file is missing, a symlink or not a regular file, not a toolbench
            journal, from a newer toolbench, holds no snapshots, or one larger than
            ``MAX_ITEMS_BYTES``.

    Example:
        >>> before = tb.load_snapshot("calls.sqlite", when="2026-01-31T12:00Z")  # doctest: +SKIP
        >>> tb.diff(before, bench.snapshot())                                    # doctest: +SKIP
    """
    from toolbench._bench.overtime.snapshots import snapshot_frame

    return snapshot_frame(read_snapshot(journal, when))
