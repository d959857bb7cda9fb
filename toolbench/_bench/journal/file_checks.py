"""What a journal file must be before toolbench reads it: a regular file whose tables are its own,
read under a time limit.

A journal, or a recording someone hands you, is a file, and SQLite runs what a file declares.
A generated column is computed on every read of it (``items`` as ``hex(zeroblob(n))`` made a
16 kB file take 84 s to refuse); a view stands in for a table and computes what it likes; a
trigger, a ``CHECK``, a ``DEFAULT`` or an expression index runs on every write. So every read
of a journal (``inspect_file``, ``load_snapshot``, ``read_recording``, and the checks of
``bench.replay(records=path)``) opens it through :func:`connect_read_only` and calls
:func:`check_tables` before it reads a row:

- **No code in the schema.** The file holds no view and no trigger; ``calls``, ``intents``
  and ``snapshots`` are plain tables (not virtual), without generated or hidden columns, and
  declare no ``CHECK``, ``DEFAULT``, ``COLLATE``, ``REFERENCES`` or ``GENERATED``; an index on
  them names plain columns and has no ``WHERE`` (a user's own index for queries is fine).
- **A time limit.** A statement that runs ``STATEMENT_LIMIT_S`` (5 s) without giving a row is
  stopped (a progress handler every ``PROGRESS_STEPS`` SQLite steps); the limit starts again
  at every row, so a large honest journal reads to the end while no single step can stall.
  It is a ``ValueError`` (:class:`StatementTooLong`), never a ``sqlite3`` error, so code
  that reads past damaged rows does not take it for damage.

Each refusal is a ``ValueError`` that names the file and the rule. :func:`check_journal_file`
does all of it for a path: a regular file (no symbolic link, FIFO, device or folder), then the
tables.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import time
from collections.abc import Iterable
from typing import Any

STATEMENT_LIMIT_S = 5.0
"""The longest a SQLite statement may run without giving a row before it is stopped."""
PROGRESS_STEPS = 1000
"""SQLite virtual-machine steps between two looks at the clock (a few microseconds)."""
OWN_TABLES = ("calls", "intents", "snapshots")
"""The tables toolbench reads and writes in a journal."""
_CODE = re.compile(r"\b(CHECK|DEFAULT|COLLATE|REFERENCES|GENERATED|AS)\b", re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|\[[^\]]*\]")


class StatementTooLong(ValueError):
    """A SQLite statement ran past the time limit and was stopped; names the file."""


def _refuse(what: str, path: str, why: str) -> ValueError:
    return ValueError(f"{what} {path!r} {why}")


def _shown(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 80 else text[:80] + "..."


# -- the file ----------------------------------------------------------------------------------
def check_regular_file(path: str, what: str = "journal") -> os.stat_result:
    """The file's lstat; a symlink, FIFO, device or folder is refused, naming the rule."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise _refuse(what, path, "does not exist") from None
    except OSError as exc:
        raise _refuse(what, path, f"cannot be read: {exc.strerror}") from exc
    if stat.S_ISLNK(info.st_mode):
        raise _refuse(what, path, "is a symbolic link; toolbench reads only regular files "
                                  "(give the link's target)")
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(what, path, "is not a regular file (a folder, FIFO or device); "
                                  "toolbench reads only regular files")
    return info


def check_journal_file(path: str | os.PathLike[str], what: str = "journal") -> None:
    """Check a journal as ``load_snapshot`` does before reading it: a regular file (no
    symbolic link, FIFO, device or folder), an SQLite file whose tables are its own.

    Raises:
        ValueError: naming the file and the rule.
    """
    name = os.fspath(path)
    info = check_regular_file(name, what)
    if info.st_size == 0:
        return  # an empty file: nothing to run, and nothing to read
    db = connect_read_only(name, what)
    try:
        try:
            check_tables(db, name, what)
        except sqlite3.DatabaseError as exc:
            raise _refuse(what, name, f"is not a toolbench journal (not a readable SQLite "
                                      f"database: {exc})") from exc
    finally:
        db.close()


# -- the time limit --------------------------------------------------------------------------
class GuardedCursor(sqlite3.Cursor):
    """A cursor whose every step runs under its connection's time limit."""

    def execute(self, sql: str, parameters: Any = (), /) -> GuardedCursor:
        clock = _clock(self.connection)
        clock.arm()
        try:
            super().execute(sql, parameters)
        except sqlite3.OperationalError:
            clock.raise_if_stopped()
            raise
        return self

    def fetchone(self) -> Any:
        clock = _clock(self.connection)
        clock.arm()
        try:
            return super().fetchone()
        except sqlite3.OperationalError:
            clock.raise_if_stopped()
            raise

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        rows = []
        for _ in range(self.arraysize if size is None else size):
            row = self.fetchone()
            if row is None:
                break
            rows.append(row)
        return rows

    def fetchall(self) -> list[Any]:
        rows = []
        while (row := self.fetchone()) is not None:
            rows.append(row)
        return rows

    def __iter__(self) -> GuardedCursor:
        return self

    def __next__(self) -> Any:
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row


class GuardedConnection(sqlite3.Connection):
    """A connection whose statements are stopped after ``STATEMENT_LIMIT_S`` without a row."""

    clock: _Clock

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(factory or GuardedCursor)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        # sqlite3's own execute makes a plain cursor, whatever cursor() says
        return self.cursor().execute(sql, parameters)


class _Clock:
    """When the running statement must stop; the progress handler looks at it."""

    def __init__(self, path: str, what: str, seconds: float) -> None:
        self.path, self.what, self.seconds = path, what, seconds
        self.until = float("inf")
        self.stopped = False

    def arm(self) -> None:
        self.until = time.monotonic() + self.seconds
        self.stopped = False

    def tick(self) -> int:
        if time.monotonic() > self.until:
            self.stopped = True
            return 1  # SQLite interrupts the statement
        return 0

    def raise_if_stopped(self) -> None:
        if self.stopped:
            self.stopped = False
            raise StatementTooLong(
                f"{self.what} {self.path!r} was not read: a SQLite statement ran for more "
                f"than {self.seconds:g} s without giving a row and was stopped (the most a "
                "read may take between rows); a journal toolbench wrote reads faster, so this "
                "file is not one") from None


def _clock(connection: sqlite3.Connection) -> _Clock:
    return connection.clock  # type: ignore[attr-defined, no-any-return]


def connect_read_only(path: str, what: str = "journal",
                      seconds: float | None = None) -> sqlite3.Connection:
    """A read-only connection to ``path`` whose statements stop after ``seconds`` (default
    ``STATEMENT_LIMIT_S``) without a row (:class:`StatementTooLong`)."""
    from urllib.parse import quote

    uri = "file:" + quote(os.path.abspath(path)) + "?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None, factory=GuardedConnection)
    except sqlite3.Error as exc:
        raise _refuse(what, path, f"cannot be opened: {exc}") from exc
    clock = _Clock(path, what, STATEMENT_LIMIT_S if seconds is None else seconds)
    db.clock = clock  # type: ignore[attr-defined]
    db.set_progress_handler(clock.tick, PROGRESS_STEPS)
    return db


# -- the tables --------------------------------------------------------------------------------
def check_tables(db: sqlite3.Connection, path: str, what: str = "journal") -> None:
    """Refuse a file whose schema holds code: a view or trigger anywhere, or, in ``calls``,
    ``intents`` or ``snapshots``, a virtual table, a generated or hidden column, a
    declaration that computes (``CHECK``, ``DEFAULT``, ...), or an index on an expression or
    with a ``WHERE``. Reads ``sqlite_master`` and ``PRAGMA``\\ s only: nothing it checks runs.

    Raises:
        ValueError: naming the file, the object and the rule.
        sqlite3.DatabaseError: the file is not a readable SQLite database.
    """
    rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    for kind, name, _, _ in rows:
        if kind in ("view", "trigger"):
            raise _refuse(what, path, f"holds a {kind} ({_shown(name)}); a journal holds "
                                      "tables only, and SQLite would run it while the file "
                                      "is read or written. It was left untouched")
    own = {str(name).lower(): (str(name), sql) for kind, name, _, sql in rows
           if kind == "table" and isinstance(name, str)}
    for table in OWN_TABLES:
        if table in own:
            _check_table(db, path, what, *own[table])


def _check_table(db: sqlite3.Connection, path: str, what: str, table: str,
                 sql: Any) -> None:
    told = f"its table {_shown(table)}"
    text = sql if isinstance(sql, str) else ""
    if re.match(r"\s*CREATE\s+VIRTUAL\b", text, re.IGNORECASE):
        raise _refuse(what, path, f"makes {told} a virtual table; a journal's tables are "
                                  "plain tables. It was left untouched")
    for column in db.execute(f"PRAGMA table_xinfo({_quote(table)})").fetchall():
        hidden = column[6]
        if hidden:
            sort = "a generated column" if hidden in (2, 3) else "a hidden column"
            raise _refuse(what, path, f"has {sort} ({_shown(column[1])}) in {told}; SQLite "
                                      "computes it on every read, so a journal has none. It "
                                      "was left untouched")
    found = _CODE.search(_QUOTED.sub(" ", text))
    if found:
        raise _refuse(what, path, f"declares {found.group(1).upper()} in {told}; a journal's "
                                  "tables declare no code that SQLite would run. It was left "
                                  "untouched")
    for index in db.execute(f"PRAGMA index_list({_quote(table)})").fetchall():
        name, partial = index[1], index[4]
        columns: Iterable[Any] = db.execute(f"PRAGMA index_xinfo({_quote(name)})").fetchall()
        if partial or any(c[1] == -2 for c in columns):
            shape = "with a WHERE" if partial else "on an expression"
            raise _refuse(what, path, f"has an index ({_shown(name)}) {shape} on {told}; "
                                      "SQLite would compute it on every write. It was left "
                                      "untouched")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
