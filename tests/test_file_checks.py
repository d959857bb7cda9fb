"""A journal or a recording is checked before it is read
(``toolbench._bench.journal.file_checks``): its tables are its own (no generated columns,
views or triggers standing in their place), a read is capped in total, and a SQLite statement
that runs too long is stopped. Every refusal names the file and the rule, at every door:
``tb.load_snapshot``, ``tb.serve_recording``, the ``serve-recording`` command,
``Bench(journal=)`` and ``bench.replay(records=path)``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench import demo
from toolbench._bench.journal import file_checks
from toolbench._bench.overtime import snapshot_store
from toolbench.demo import geo

GENERATED = 30_000_000
"""Bytes of zeros each crafted row's generated column makes (hex: twice that)."""


def _journal(path: Path) -> Path:
    with tb.Bench(journal=path) as bench:
        bench.connect("geo", geo.create())
        bench.call("geo-city", name="Paris")
    return path


def _craft(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def _timed(fn: Callable[[], Any]) -> tuple[float, BaseException | None]:
    start = time.monotonic()
    try:
        fn()
    except Exception as exc:
        return time.monotonic() - start, exc
    return time.monotonic() - start, None


def _generated_snapshots(path: Path) -> Path:
    """The 16 kB journal of the issue: ``snapshots.items`` computed on every read."""
    _journal(path)
    _craft(path, "DROP TABLE snapshots",
           "CREATE TABLE snapshots (seq INTEGER PRIMARY KEY, taken TEXT NOT NULL, server TEXT "
           "NOT NULL, kind TEXT NOT NULL, cause TEXT, format INTEGER NOT NULL, n INTEGER, "
           "items TEXT GENERATED ALWAYS AS (hex(zeroblob(n))) VIRTUAL)",
           *[f"INSERT INTO snapshots (taken, server, kind, cause, format, n) VALUES "
             f"('{datetime.now(UTC).isoformat()}', 'geo{i}', 'tool', 'connect', 1, {GENERATED})"
             for i in range(40)])
    assert path.stat().st_size < 64 * 1024
    return path


# -- its tables are its own ---------------------------------------------------------------------
def test_a_generated_column_is_refused_at_every_door(tmp_path: Path) -> None:
    path = _generated_snapshots(tmp_path / "crafted.sqlite")
    for door in (lambda: tb.load_snapshot(path), lambda: tb.serve_recording(path),
                 lambda: tb.Bench(journal=path).close(),
                 lambda: file_checks.check_journal_file(path)):
        seconds, refused = _timed(door)
        assert isinstance(refused, ValueError), refused
        assert str(path) in str(refused)
        assert "generated column" in str(refused) and "'items'" in str(refused)
        assert seconds < 5


@pytest.mark.parametrize(("table", "select"), [
    ("snapshots", "SELECT seq, taken, server, kind, cause, format, hex(zeroblob(30000000)) "
                  "AS items FROM real"),
    ("calls", "SELECT * FROM real"),
])
def test_a_view_standing_in_for_a_table_is_refused(tmp_path: Path, table: str,
                                                   select: str) -> None:
    path = _journal(tmp_path / "crafted.sqlite")
    _craft(path, f"ALTER TABLE {table} RENAME TO real", f"CREATE VIEW {table} AS {select}")
    for door in (lambda: tb.load_snapshot(path), lambda: tb.serve_recording(path),
                 lambda: file_checks.check_journal_file(path)):
        seconds, refused = _timed(door)
        assert isinstance(refused, ValueError), refused
        assert str(path) in str(refused) and f"a view ('{table}')" in str(refused)
        assert seconds < 5


def test_a_trigger_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = _journal(tmp_path / "crafted.sqlite")
    _craft(path, "CREATE TRIGGER stall AFTER INSERT ON calls BEGIN "
                 "SELECT hex(zeroblob(100000000)); END")
    before = path.read_bytes()
    for door in (lambda: tb.Bench(journal=path).close(), lambda: tb.serve_recording(path),
                 lambda: tb.load_snapshot(path)):
        seconds, refused = _timed(door)
        assert isinstance(refused, ValueError), refused
        assert str(path) in str(refused) and "a trigger ('stall')" in str(refused)
        assert seconds < 5
    assert path.read_bytes() == before  # left untouched


@pytest.mark.parametrize("declaration", [
    "items TEXT NOT NULL CHECK (length(hex(zeroblob(100000000))) > 0)",
    "items TEXT NOT NULL DEFAULT (hex(zeroblob(100000000)))",
])
def test_a_table_that_would_run_code_on_write_is_refused(tmp_path: Path,
                                                         declaration: str) -> None:
    path = _journal(tmp_path / "crafted.sqlite")
    _craft(path, "ALTER TABLE snapshots RENAME TO old",
           "CREATE TABLE snapshots (seq INTEGER PRIMARY KEY, taken TEXT NOT NULL, server TEXT "
           f"NOT NULL, kind TEXT NOT NULL, cause TEXT, format INTEGER NOT NULL, {declaration})",
           "INSERT INTO snapshots SELECT * FROM old", "DROP TABLE old")
    with pytest.raises(ValueError, match=r"declares .* in its table 'snapshots'"):
        tb.Bench(journal=path)


def test_an_expression_index_is_refused_and_a_plain_one_is_not(tmp_path: Path) -> None:
    path = _journal(tmp_path / "journal.sqlite")
    _craft(path, "CREATE INDEX by_server ON calls (server)")
    assert len(tb.load_snapshot(path)) > 0  # a user's own index for their queries is fine
    _craft(path, "CREATE INDEX stall ON calls (hex(zeroblob(100000000)))")
    with pytest.raises(ValueError, match=r"an index \('stall'\) on an expression"):
        tb.Bench(journal=path)


# -- a read is capped in total -------------------------------------------------------------------
def _many_rows(path: Path, rows: int, items: list[dict[str, Any]]) -> None:
    _craft(path, *[f"INSERT INTO snapshots (taken, server, kind, cause, format, items) VALUES "
                   f"('{datetime.now(UTC).isoformat()}', 'big{i}', 'tool', 'connect', 1, "
                   f"'{json.dumps(items)}')" for i in range(rows)])


def test_snapshot_rows_over_the_total_cap_are_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = _journal(tmp_path / "journal.sqlite")
    item = {"kind": "tool", "name": "t", "description": "x" * 400_000}
    _many_rows(path, 3, [item])
    monkeypatch.setattr(snapshot_store, "MAX_READ_BYTES", 1_000_000, raising=False)
    with pytest.raises(ValueError, match=r"snapshot file .* hold 1,2\d\d,\d\d\d bytes in all; "
                                         r"the most read back is 1,000,000"):
        tb.load_snapshot(path)
    with pytest.raises(ValueError, match="the most read back is 1,000,000"):
        tb.serve_recording(path, server="geo")
    assert len(tb.load_snapshot(path, max_bytes=2_000_000)) > 3


def test_a_snapshot_row_over_the_item_cap_is_refused(tmp_path: Path) -> None:
    path = _journal(tmp_path / "journal.sqlite")
    _many_rows(path, 1, [{"kind": "tool", "name": f"t{i}"} for i in range(10_001)])
    seconds, refused = _timed(lambda: tb.load_snapshot(path))
    assert isinstance(refused, ValueError)
    assert str(path) in str(refused)
    assert "more than 10,000 items (server 'big0', kind 'tool')" in str(refused)
    assert seconds < 5
    assert (tb.load_snapshot(path, max_items=20_000)["server"] == "big0").sum() == 10_001


# -- a statement that runs too long is stopped ----------------------------------------------------
def test_a_long_statement_is_stopped_naming_the_file(tmp_path: Path) -> None:
    path = _journal(tmp_path / "journal.sqlite")
    db = file_checks.connect_read_only(str(path), "journal", seconds=0.2)
    try:
        start = time.monotonic()
        with pytest.raises(ValueError, match=r"journal .*journal\.sqlite' .*a SQLite statement "
                                             r"ran for more than 0\.2 s"):
            db.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                       "SELECT count(*) FROM c").fetchone()
        assert time.monotonic() - start < 3
        assert db.execute("SELECT count(*) FROM calls").fetchone() == (1,)  # usable after
    finally:
        db.close()


def test_every_read_runs_under_the_time_limit(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = _journal(tmp_path / "journal.sqlite")
    monkeypatch.setattr(file_checks, "STATEMENT_LIMIT_S", 0.0)
    monkeypatch.setattr(file_checks, "PROGRESS_STEPS", 1)
    for door in (lambda: tb.load_snapshot(path), lambda: tb.serve_recording(path),
                 lambda: tb.Bench(journal=path).close()):
        with pytest.raises(ValueError, match="ran for more than 0 s"):
            door()


# -- replay's file checks ----------------------------------------------------------------------
def test_check_journal_file_refuses_links_fifos_and_folders(tmp_path: Path) -> None:
    real = _journal(tmp_path / "real.sqlite")
    file_checks.check_journal_file(real)  # a journal passes
    link = tmp_path / "link.sqlite"
    link.symlink_to(real)
    with pytest.raises(ValueError, match=r"journal .*link\.sqlite' is a symbolic link"):
        file_checks.check_journal_file(link)
    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is not a regular file"):
        file_checks.check_journal_file(fifo)
    with pytest.raises(ValueError, match="is not a regular file"):
        file_checks.check_journal_file(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        file_checks.check_journal_file(tmp_path / "missing.sqlite")


def test_replay_of_a_fifo_is_refused_not_an_empty_journal(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo)
    with tb.Bench() as bench:
        bench.connect("geo", geo.create())
        with pytest.raises(ValueError, match=r"journal .*fifo\.sqlite' is not a regular file"):
            bench.replay(fifo, against="geo")
        with pytest.raises(ValueError, match="is not a regular file"):
            tb.Bench(journal=fifo)


@pytest.mark.slow
def test_the_cli_refuses_a_crafted_recording_at_once(tmp_path: Path) -> None:
    path = _generated_snapshots(tmp_path / "crafted.sqlite")
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "toolbench", "serve-recording", str(path)],
                         env={**os.environ, **demo.python_path_env()}, capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode == 2
    assert "generated column" in run.stderr and str(path) in run.stderr
    assert time.monotonic() - start < 30


def test_replay_of_a_symlinked_journal_is_refused(tmp_path: Path) -> None:
    real = _journal(tmp_path / "real.sqlite")
    link = tmp_path / "link.sqlite"
    link.symlink_to(real)
    with tb.Bench() as bench:
        bench.connect("geo", geo.create())
        with pytest.raises(ValueError, match=r"journal .*link\.sqlite' is a symbolic link"):
            bench.replay(link, against="geo")
