"""A journal's file: what makes it one, opening it without writing, and reading its rows.

Why apart from the writer (``toolbench._bench.journal.writer``): reading happens once, on
opening, on the caller's thread, and must never change a byte of a file that is not ours
(another application's SQLite file is refused untouched), while writing happens on the
journal's own thread for as long as it is open. Both speak the schema and row format of
``toolbench._bench.journal.codec``. A damaged file is read as far as it can be: rows SQLite
cannot reach are read from the leaf pages directly (``toolbench._bench.journal.sqlite_pages``),
and rows that cannot be decoded are skipped and counted.

Before a row is read, the file must be a regular file (a FIFO or device is refused, not read
as an empty journal) whose tables are its own, and every statement runs under a time limit
(``toolbench._bench.journal.file_checks``). A caller that reads someone else's file (a recording)
caps the total it reads (``max_bytes``); a bench opening its own journal does not.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolbench._bench.journal.codec import (
    ADDED_COLUMNS,
    APPLICATION_ID,
    CALLS_DDL,
    INTENT_COLUMNS,
    INTENTS_DDL,
    LEGACY_TABLES,
    SCHEMA_VERSION,
    TABLES,
    column_type,
    decode_all,
    decode_row,
    log_orphan,
    log_outcome,
    orphan_record,
    text_or_none,
)
from toolbench._bench.journal.file_checks import check_tables, connect_read_only
from toolbench._bench.journal.intent_log import dead_logs, process_alive
from toolbench._bench.journal.record import COLUMNS, Record
from toolbench._bench.journal.sqlite_pages import leaf_rows

OPEN_BUSY_S = 5.0
"""How long opening waits for a lock when the file must be created or migrated."""

LIVE_SESSIONS: set[str] = set()
"""Sessions of journals open in this process: their intents are in flight, not orphans."""


@dataclass(frozen=True, slots=True)
class Inspection:
    """What opening found: the records, the orphans, and anything skipped."""

    records: list[Record]
    orphans: list[Record]
    damaged_rows: int
    damaged_file: str | None
    log_orphans: tuple[Record, ...] = ()  # in dead sessions' intent logs only
    dead_logs: tuple[str, ...] = ()  # those logs, removed once their orphans are committed


# -- opening --------------------------------------------------------------------------------
def _refuse(path: str, why: str) -> ValueError:
    return ValueError(f"journal {path!r} {why}")


def inspect_file(path: str, max_bytes: int | None = None) -> Inspection:
    """Read what is there without writing a byte: classify the file, check that its tables
    are its own, load its rows (refused past ``max_bytes`` of row text, when given)."""
    if os.path.isdir(path):
        raise _refuse(path, "is a directory; give a file path such as 'calls.sqlite'")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise _refuse(path, f"cannot be created: the folder {parent!r} does not exist")
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return Inspection([], [], 0, None)
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(path, "is not a regular file (a FIFO or device); a journal is a "
                            "regular file")
    if info.st_size == 0:
        return Inspection([], [], 0, None)
    db = connect_read_only(path, "journal")
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
            if _busy(exc):
                raise _locked(path, exc) from exc
            raise _refuse(path, f"is not a toolbench journal (not a readable SQLite "
                                f"database: {exc}); it was left untouched") from exc
        check_tables(db, path, "journal")  # first: a view in a table's place is named
        _classify(path, app_id, version, tables, others)
        if not tables:
            return Inspection([], [], 0, None)
        records, bad, damage = _load_calls(db, path, max_bytes)
        orphans: list[Record] = []
        if "intents" in tables:
            orphans, bad_intents, intent_damage = _load_orphans(db)
            bad += bad_intents
            damage = damage or intent_damage
        logs = dead_logs(path, LIVE_SESSIONS)
        log_orphans: list[Record] = []
        if logs:
            known = {r.call_id for r in records}
            waiting = {r.call_id: at for at, r in enumerate(orphans)}
            for log in logs:  # finished calls first: an outcome replaces its intent
                done, bad_lines = decode_all(log.outcomes, log_outcome)
                bad += bad_lines
                for record in done:
                    if record.call_id in known:
                        continue
                    known.add(record.call_id)
                    if record.call_id in waiting:  # its intent reached SQLite: replace it
                        orphans[waiting[record.call_id]] = record
                    else:
                        log_orphans.append(record)
            known.update(waiting)
            for log in logs:
                found, bad_lines = decode_all(log.rows, functools.partial(log_orphan,
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
        missing = [c for c in COLUMNS
                   if c not in tables.get("calls", []) and c not in ADDED_COLUMNS]
        if missing or "intents" not in names:
            state = "present" if "intents" in names else "missing"
            raise _refuse(path, f"is a toolbench journal without its tables (calls lacks "
                                f"{missing}, intents {state}); it was left untouched")
        return
    if app_id == 0 and version == 0 and not names and not others:
        return  # an empty database: nothing to lose, it becomes a journal
    if (app_id == 0 and version == 0 and "calls" in names and names <= LEGACY_TABLES
            and all(c in tables["calls"] for c in COLUMNS if c not in ADDED_COLUMNS)
            and not others):
        return  # a journal from before schema versions: migrated when opened for writing
    what = (f"application_id {app_id:#x}" if app_id else
            f"tables {sorted(names)}" if names else f"schema objects {sorted(others)}")
    raise _refuse(path, f"is a SQLite database but not a toolbench journal ({what}); it was "
                        "left untouched. Give a new file name for the journal")


def _busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    return code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _locked(path: str, exc: sqlite3.Error) -> ValueError:
    holders = lock_holders(path)
    who = (f" by process {', '.join(map(str, holders))}" if holders
           else " by another process or connection")
    return _refuse(path, f"is locked{who} ({exc}); it was left untouched. Close the other "
                         "user, or give another file name")


def lock_holders(path: str) -> list[int]:
    """The pids holding a POSIX or flock lock on ``path`` (Linux ``/proc/locks``; SQLite
    itself cannot say who), or ``[]`` when that cannot be told."""
    try:
        st = os.stat(path)
        with open("/proc/locks", "rb") as f:
            table = f.read(1 << 20).decode("ascii", "replace")
    except OSError:
        return []
    # "1: POSIX  ADVISORY  WRITE 1234 08:02:131090 1073741824 1073741824"
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids: list[int] = []
    for line in table.splitlines():
        fields = line.split()
        if "->" in fields:  # a waiter, not a holder
            continue
        if len(fields) >= 6 and fields[5] == wanted and fields[4].isdigit():
            pid = int(fields[4])
            if pid not in pids:
                pids.append(pid)
    return pids


def _create_private(path: str) -> None:
    """Create the journal file 0600 if it is not there: SQLite gives its ``-wal`` and
    ``-shm`` the main file's mode, and all three hold arguments and results."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW,
                     0o600)
    except OSError:
        return  # there already (or not creatable: SQLite's own error says why)
    os.close(fd)


def open_for_writing(path: str) -> tuple[sqlite3.Connection | None, str | None]:
    """The writer's connection (WAL; schema created or migrated under the write lock).

    A file SQLite finds damaged gives ``(None, why)``: its records were loaded, but nothing
    is written into a damaged file.
    """
    _create_private(path)
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
            if app_id not in (0, APPLICATION_ID) or not names <= LEGACY_TABLES | TABLES:
                db.execute("ROLLBACK")
                raise _refuse(path, "changed while it was being opened; it was left untouched")
            db.execute(CALLS_DDL)
            present = {c[1] for c in db.execute("PRAGMA table_info(calls)")}
            for column in ADDED_COLUMNS:  # an older file: old rows read NULL (a tool call)
                if column not in present:
                    db.execute(f"ALTER TABLE calls ADD COLUMN {column} {column_type(column)}")
            db.execute(INTENTS_DDL)
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
        db.execute("PRAGMA synchronous=NORMAL")
    except ValueError:
        db.close()
        raise
    except sqlite3.DatabaseError as exc:
        db.close()
        if (exc.sqlite_errorcode & 0xFF) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return None, str(exc)
        if _busy(exc):
            raise _locked(path, exc) from exc
        raise _refuse(path, f"cannot be written: {exc}") from exc
    return db, None


# -- reading rows ---------------------------------------------------------------------------
def _scan(db: sqlite3.Connection, table: str, columns: Sequence[str], path: str,
          max_bytes: int | None = None) -> tuple[list[tuple[Any, ...]], str | None]:
    """Every readable row of ``table`` (``seq`` first), in order, past any damaged page.

    A damaged page stops a scan; the next readable row is found by probing further on, so
    one bad page costs the rows on it, not the rest of the file. Past ``max_bytes`` of text
    the read is refused (at the row that crosses it).
    """
    select = f"SELECT seq, {', '.join(columns)} FROM {table} WHERE seq > ? ORDER BY seq"
    rows: list[tuple[Any, ...]] = []
    after = -1
    damage: str | None = None
    used = 0
    while True:
        start = after
        try:
            for row in db.execute(select, (after,)):
                rows.append(row)
                after = row[0]
                if max_bytes is not None:
                    used += sum(len(v) for v in row if isinstance(v, (str, bytes)))
                    if used > max_bytes:
                        raise _refuse(path, f"holds more than {max_bytes:,} bytes of records; "
                                            f"the most read back is {max_bytes:,} in all")
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


def _load_calls(db: sqlite3.Connection, path: str, max_bytes: int | None = None,
                ) -> tuple[list[Record], int, str | None]:
    present = {c[1] for c in db.execute("PRAGMA table_info(calls)")}
    # An older file lacks some of ADDED_COLUMNS: read as NULL, each in its own place.
    columns = [c if c in present else "NULL" for c in COLUMNS]
    rows, damage = _scan(db, "calls", columns, path, max_bytes)
    if damage is not None:
        # The B-tree is broken (a truncated file loses the pages that lead to its rows):
        # read the surviving leaf pages directly, as SQLite's own recovery does.
        seen = {row[0] for row in rows}
        try:
            # Rows written before ADDED_COLUMNS were added are that much narrower on disk.
            extra = [row for width in range(len(COLUMNS) + 1 - len(ADDED_COLUMNS),
                                             len(COLUMNS) + 2)
                     for row in leaf_rows(path, width) if row[0] not in seen]
        except (OSError, ValueError, IndexError):
            extra = []
        rows = sorted([*rows, *extra], key=lambda row: row[0])
        known = {row[0] for row in rows}
        top = max(known, default=0)
        lost = top - len(known)  # calls are append-only: seq runs 1, 2, 3, ... without gaps
        damage = (f"{damage}; {lost} record{'s' * (lost != 1)} before #{top} could not be "
                  f"read, nor any after it")
    records, bad = decode_all(rows, lambda row: decode_row(row[1:]))
    return records, bad, damage


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
            if session in LIVE_SESSIONS:
                return None
        else:
            key = (pid, text_or_none(proc))
            if key not in live:
                live[key] = process_alive(pid, key[1])
            if live[key]:
                return None  # another process's call, still in flight
        return orphan_record(call_id, batch, started, server, tool, name, args, prov, pid)

    found, bad = decode_all(rows, decode)
    return [f for f in found if f is not None], bad, None
