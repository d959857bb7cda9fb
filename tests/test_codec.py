"""A journal's rows (toolbench._bench.journal.codec): a Record's values as SQLite stores them,
and a row read back as a Record, or refused as damaged.

The journal's own tests (test_journal.py) go through real files; these pin the row format
itself, which a file written by an older toolbench must still be read with.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

import pytest

from toolbench._bench.journal import codec
from toolbench._bench.journal.record import COLUMNS, make_record
from toolbench._core.client import Result

STARTED = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def _row(**changes: Any) -> list[Any]:
    """A ``calls`` row as the writer stores it (JSON text, ``ok`` as 0/1), with changes."""
    values: dict[str, Any] = {
        "call_id": "c1", "batch": None, "started": STARTED.isoformat(), "server": "s",
        "tool": "t", "name": "s-t", "arguments": '{"n": 1}', "ok": 1,
        "disposition": "landed", "error_type": None, "error": None, "latency_ms": 2.5,
        "text": "hi", "structured": '{"a": 1}', "content": '[{"type": "text", "text": "hi"}]',
        "provenance": None, "kind": "resource", "attempts": 1, "queued_ms": None}
    values.update(changes)
    return [values[c] for c in COLUMNS]


def test_a_row_reads_back_as_the_record_it_was_written_from() -> None:
    record = codec.decode_row(_row())
    assert record == make_record(
        call_id="c1", batch=None, started=STARTED, server="s", tool="t", name="s-t",
        arguments={"n": 1}, latency_s=0.0025, provenance=None, kind="resource",
        result=Result(content=[{"type": "text", "text": "hi"}], structured={"a": 1}))


def test_a_row_from_before_kind_is_a_tool_call() -> None:
    assert codec.decode_row(_row()[:16]).kind == "tool"  # schema 2: 16 columns
    assert codec.decode_row(_row(kind=None)).kind == "tool"  # schema 3, column added: NULL


def test_a_row_from_before_retries_made_one_attempt_and_waited_for_no_rate() -> None:
    old = codec.decode_row(_row()[:17])  # schema 3: 17 columns
    assert (old.attempts, old.queued_ms) == (1, None)
    assert codec.decode_row(_row(attempts=None)).attempts == 1  # schema 4, column added
    new = codec.decode_row(_row(attempts=3, queued_ms=12))
    assert (new.attempts, new.queued_ms) == (3, 12.0)


@pytest.mark.parametrize(("changes", "why"), [
    ({"kind": "shell"}, "bad kind"),
    ({"attempts": 0}, "bad attempts"),
    ({"attempts": "2"}, "bad attempts"),
    ({"queued_ms": "soon"}, "bad queued_ms"),
    ({"server": ""}, "identity columns must be text"),
    ({"ok": 2}, "bad outcome"),
    ({"disposition": "maybe"}, "bad outcome"),
    ({"latency_ms": True}, "bad latency"),
    ({"content": '["text"]'}, "content blocks must be objects"),
    ({"arguments": "[1]"}, "expected a JSON dict"),
    ({"started": "2025-01-02T03:04:05"}, "a time without a zone"),
    ({"text": 7}, "expected text"),
])
def test_a_row_not_written_so_is_refused(changes: dict[str, Any], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        codec.decode_row(_row(**changes))


def test_decode_all_keeps_the_good_rows_and_counts_the_bad() -> None:
    good, bad = codec.decode_all([_row(), _row(ok=5), _row(call_id="c2"), ["short"]],
                                 codec.decode_row)
    assert [r.call_id for r in good] == ["c1", "c2"]
    assert bad == 2


def test_an_orphan_is_in_doubt_and_names_its_process() -> None:
    record = codec.orphan_record("c9", None, STARTED.isoformat(), "s", "t", "s-t", '{"n": 1}',
                                 None, pid=4242)
    assert (record.ok, record.disposition, record.error_type) == (False, "in_doubt", "TimedOut")
    assert "pid 4242" in (record.error or "")
    assert record.arguments == {"n": 1}


def test_a_dead_sessions_log_lines_become_records() -> None:
    at = STARTED.timestamp()
    orphan = codec.log_orphan(["c1", "b", at, "s", "t", "s-t", {"n": 1}, {"p": 1}], pid=7)
    assert (orphan.started, orphan.batch, orphan.disposition) == (STARTED, "b", "in_doubt")
    assert (orphan.arguments, orphan.provenance) == ({"n": 1}, {"p": 1})
    done = codec.log_outcome(["c2", None, at, "s", "t", "s-t", {"n": 2}, 1, "landed", None,
                              None, 1.0, "ok", None, [], None, "tool"])
    assert (done.ok, done.text, done.started) == (True, "ok", STARTED)
    with pytest.raises(ValueError, match="not a timestamp"):
        codec.log_orphan(["c1", None, "soon", "s", "t", "s-t", {}, None], pid=7)


def test_what_cannot_be_encoded_is_kept_as_text_sqlite_can_store() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    kept = codec.dump_json(cycle)
    assert kept is not None and "_unencodable" in json.loads(kept)
    assert codec.dump_json(None) is None
    escaped = codec.dump_json({"k": "a\udc80b"})
    assert escaped is not None and json.loads(escaped) == {"k": "a\udc80b"}
    text = codec.sqlite_text("a\udc80b")
    assert text == "a\\udc80b"
    assert codec.sqlite_text(5) == 5
    db = sqlite3.connect(":memory:")  # both go into SQLite, which refuses a lone surrogate
    db.execute("CREATE TABLE t (v TEXT)")
    db.executemany("INSERT INTO t VALUES (?)", [(escaped,), (text,)])
    with pytest.raises(UnicodeEncodeError):
        db.execute("INSERT INTO t VALUES (?)", ("a\udc80b",))


def test_the_schema_creates_every_column_of_a_record() -> None:
    db = sqlite3.connect(":memory:")
    db.execute(codec.CALLS_DDL)
    db.execute(codec.INTENTS_DDL)
    assert [c[1] for c in db.execute("PRAGMA table_info(calls)")] == ["seq", *COLUMNS]
    assert [c[1] for c in db.execute("PRAGMA table_info(intents)")] == list(
        codec.INTENT_COLUMNS)
