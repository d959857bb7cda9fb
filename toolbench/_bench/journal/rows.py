"""A group commit's rows in a few statements, each ``INSERT ... VALUES (...), (...), ...``.

Why not ``executemany``: it steps the statement once per row, and the ``sqlite3`` module lets
go of the GIL around every step. On the writer thread, beside an event loop that is busy with
a map, taking the GIL back is a hand-over between the two threads for every row: a map's
group commit of ~1,000 outcomes then ran through the whole map, row by row, each row
waiting for the loop to let go (issue 46: a journaled map kept 0.78 of the unjournaled map's
throughput). One statement of many rows is one step: the GIL is let go once per chunk.

The chunk sizes are few and fixed, so each statement is prepared once per connection and
then found in the ``sqlite3`` module's statement cache.
"""

from __future__ import annotations

import functools
import itertools
import sqlite3
from collections.abc import Sequence
from typing import Any

from toolbench._bench.journal.codec import INTENT_COLUMNS
from toolbench._bench.journal.record import COLUMNS

CHUNKS = (256, 32, 4, 1)
"""Rows per statement, largest first: a group of n rows takes at most n // 256 + 10 steps."""
_FALLBACK_VARIABLES = 999
"""SQLite's own lowest limit on ``?`` per statement (before 3.32), when it cannot be read."""

INSERT_CALL = f"INSERT INTO calls ({', '.join(COLUMNS)}) VALUES "
"""A row of ``calls`` per ``(?, ...)`` that follows (its ``seq`` is given by SQLite)."""
INSERT_INTENT = f"INSERT OR REPLACE INTO intents ({', '.join(INTENT_COLUMNS)}) VALUES "
"""An intent per ``(?, ...)`` that follows; a call's intent replaces an earlier one."""


@functools.lru_cache(maxsize=64)
def _statement(head: str, width: int, rows: int) -> str:
    one = f"({', '.join('?' * width)})"
    return head + ", ".join(itertools.repeat(one, rows))


def _max_rows(db: sqlite3.Connection, width: int) -> int:
    try:
        variables = db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    except (AttributeError, sqlite3.Error):  # an interpreter whose sqlite3 cannot say
        variables = _FALLBACK_VARIABLES
    return max(1, variables // width)


def insert_rows(db: sqlite3.Connection, head: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` (each as wide as ``head``'s columns), in order, inside the caller's
    transaction: a failure raises, and the caller's rollback takes back every row."""
    if not rows:
        return
    width = len(rows[0])
    most = _max_rows(db, width)
    at, count = 0, len(rows)
    for size in CHUNKS:
        if size > most:
            continue
        statement = None
        while count - at >= size:
            if statement is None:
                statement = _statement(head, width, size)
            db.execute(statement, list(itertools.chain.from_iterable(rows[at:at + size])))
            at += size
