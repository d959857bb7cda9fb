"""The journal's group commit on a map's path (issue 46): what reaches the intent log and
SQLite, and when. Real files, the real writer thread; crashes are in test_journal_crash.py.

- An intent in the intent log waits INTENT_HOLD_S for its outcome before it gets a SQLite
  row of its own: a fast call costs SQLite one row (its record), not an intent row, the
  record and a delete. A call that runs longer has its intent committed meanwhile, once the
  writer looks.
- A map's outcomes get no intent-log line (the map waits for their commit before it
  returns); a single call's outcome does (it returns before the commit).
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import toolbench as tb
from toolbench._bench.journal import writer as _writer

WAIT_S = 10.0
"""The most a tool waits to see its own intent in SQLite (never reached when it works)."""


def _intent_rows(journal: Path) -> list[Any]:
    db = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=5)
    try:
        return db.execute("SELECT call_id, arguments FROM intents").fetchall()
    finally:
        db.close()


def _log_lines(folder: Path) -> list[list[Any]]:
    """The live intent log's lines (allocated ahead: its unwritten end is NUL bytes)."""
    return [json.loads(line) for log in folder.glob("calls.sqlite-intents-*")
            for line in _written(log).splitlines()[1:] if line.strip()]


def _written(log: Path) -> str:
    return log.read_bytes().rstrip(b"\0").decode()


def test_fast_calls_commit_no_intent_rows_and_every_record(tmp_path: Path) -> None:
    journal = tmp_path / "calls.sqlite"
    statements: list[str] = []

    @tb.tool(server="w")
    def square(n: int) -> int:
        return n * n

    with tb.Bench(journal=journal) as bench:
        bench.add(tb.ToolBox(square))
        store_journal = bench.store.journal
        assert store_journal is not None
        assert store_journal.trace(statements.append)
        bench.map("w-square", [{"n": i} for i in range(40)], progress=False)
        bench.call("w-square", n=2)
        store_journal.trace(None)
        count = len(bench.records)
    inserts = [s for s in statements if s.startswith("INSERT OR REPLACE INTO intents")]
    assert inserts == [], f"{len(inserts)} intents of fast calls were written to SQLite"
    db = sqlite3.connect(journal)
    try:
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (count,)
        assert db.execute("SELECT count(*) FROM intents").fetchone() == (0,)
    finally:
        db.close()


def test_a_long_calls_intent_is_committed_while_other_calls_finish(tmp_path: Path) -> None:
    """Held, but not forever: while the writer is at work (other calls' outcomes), an intent
    older than INTENT_HOLD_S gets its row, as every intent did before issue 46. (An idle
    writer is not woken for it: the intent log already holds it, durably.)"""
    journal = tmp_path / "calls.sqlite"
    seen: list[bool] = []

    @tb.tool(server="w")
    def slow_first(n: int) -> int:
        if n:
            time.sleep(0.001)
            return n
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if any(json.loads(args) == {"n": 0} for _, args in _intent_rows(journal)):
                seen.append(True)
                return n
            time.sleep(_writer.INTENT_HOLD_S / 4)
        seen.append(False)
        return n

    with tb.Bench(journal=journal) as bench:
        bench.add(tb.ToolBox(slow_first))
        rows = bench.map("w-slow_first", [{"n": i} for i in range(40)], concurrency=2,
                         progress=False)
    assert rows["ok"].all()
    assert seen == [True]
    db = sqlite3.connect(journal)
    try:  # the intent was replaced by its record
        assert db.execute("SELECT count(*) FROM intents").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (40,)
    finally:
        db.close()


def test_every_outcome_has_a_log_line_a_maps_too(tmp_path: Path) -> None:
    """A finished call is found with its answer after a kill -9, in a map too: its outcome
    is in the intent log before the next case runs (the writer thread may not commit for
    hundreds of calls while a map keeps the loop busy)."""
    journal = tmp_path / "calls.sqlite"
    logged: dict[int, list[list[Any]]] = {}

    @tb.tool(server="w")
    def peek(n: int) -> int:
        logged[n] = _log_lines(tmp_path)
        return n

    with tb.Bench(journal=journal) as bench:
        bench.add(tb.ToolBox(peek))
        bench.call("w-peek", n=100)
        bench.map("w-peek", [{"n": i} for i in range(5)], concurrency=1, progress=False)
        bench.call("w-peek", n=200)
        ids = dict(zip(bench.records["arguments"].map(lambda a: a["n"]),
                       bench.records["call_id"], strict=True))
        after = _log_lines(tmp_path)
    outcomes = {line[1] for line in after if line[0] == "outcome"}
    assert ids[100] in outcomes and ids[200] in outcomes  # single calls: a line each
    assert all(ids[i] in outcomes for i in range(5))  # the map's calls: a line each
    seen_by_4 = {line[1] for line in logged[4] if line[0] == "outcome"}
    assert {ids[i] for i in range(4)} <= seen_by_4  # each before the next case ran
    intents = {line[0] for line in logged[4]}
    assert {ids[i] for i in range(5)} <= intents  # every intent of the map was logged
    db = sqlite3.connect(journal)
    try:
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (7,)
    finally:
        db.close()


def test_the_intent_log_is_still_emptied_between_maps(tmp_path: Path,
                                                      monkeypatch: Any) -> None:
    """Held intents whose outcomes were committed count as in SQLite, so the log is emptied
    once it is past COMPACT_BYTES, as before (here made small)."""
    from toolbench._bench.journal import journal as _journal

    monkeypatch.setattr(_journal, "COMPACT_BYTES", 4_000)
    monkeypatch.setattr(_writer, "COMPACT_BYTES", 4_000)
    journal = tmp_path / "calls.sqlite"

    @tb.tool(server="w")
    def square(n: int) -> int:
        time.sleep(2 * _writer.LINGER_S)  # its outcome comes in a later commit than its intent
        return n * n

    with tb.Bench(journal=journal) as bench:
        bench.add(tb.ToolBox(square))
        written = 0
        for _ in range(6):
            bench.map("w-square", [{"n": i} for i in range(40)], concurrency=4, progress=False)
            written += 40
            (log,) = tmp_path.glob("calls.sqlite-intents-*")
            size = len(_written(log))
        assert len(bench.records) == written
    assert size < 4_000 + 40 * 400, f"the log was never emptied: {size} bytes written"
    db = sqlite3.connect(journal)
    try:
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (written,)
    finally:
        db.close()
