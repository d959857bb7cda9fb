"""A SQLite (WAL) file that holds every record before its call returns to the user.

WAL with ``synchronous=NORMAL`` makes each committed record survive the process being
killed (a dead kernel); only a power cut could drop the last transactions.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from toolbench._records import COLUMNS, Record

_JSON_COLUMNS = frozenset({"arguments", "structured", "content", "provenance"})
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS calls (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    {", ".join(f"{c} {'INTEGER' if c == 'ok' else 'REAL' if c == 'latency_ms' else 'TEXT'}"
               for c in COLUMNS)}
)
"""
_INSERT = f"INSERT INTO calls ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, default=str)


class Journal:
    """Append-only call journal; opening it checks it can be written, so mistakes show early."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:
            raise ValueError(f"journal {self.path!r} cannot be opened: {exc}") from exc
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            self._db.execute("BEGIN IMMEDIATE")  # proves we may write, at construction time
            self._db.execute("ROLLBACK")
            names = [row[1] for row in self._db.execute("PRAGMA table_info(calls)")]
        except sqlite3.Error as exc:
            self._db.close()
            raise ValueError(
                f"journal {self.path!r} is not a writable toolbench journal: {exc}"
            ) from exc
        missing = [c for c in COLUMNS if c not in names]
        if missing:
            self._db.close()
            raise ValueError(f"journal {self.path!r} lacks columns {missing}; is it a journal?")
        self._lock = threading.Lock()

    def append(self, record: Record) -> None:
        row = tuple(
            _dump(getattr(record, c)) if c in _JSON_COLUMNS
            else getattr(record, c).isoformat() if c == "started"
            else getattr(record, c)
            for c in COLUMNS
        )
        with self._lock:
            self._db.execute(_INSERT, row)  # autocommit: durable once this returns

    def load(self) -> Iterator[Record]:
        with self._lock:
            rows = self._db.execute(f"SELECT {', '.join(COLUMNS)} FROM calls ORDER BY seq")
            fetched = rows.fetchall()
        for row in fetched:
            values = dict(zip(COLUMNS, row, strict=True))
            for c in _JSON_COLUMNS:
                values[c] = json.loads(values[c]) if values[c] is not None else None
            values["content"] = values["content"] or []
            values["ok"] = bool(values["ok"])
            values["started"] = datetime.fromisoformat(values["started"])
            yield Record(**values)

    def close(self) -> None:
        with self._lock:
            self._db.close()
