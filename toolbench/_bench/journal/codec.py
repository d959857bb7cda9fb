"""A journal's rows: the schema they live in, the text their values are stored as, and how a
row becomes a Record again.

Why apart from opening the file (``toolbench._bench.journal.file``) and from writing it
(``toolbench._bench.journal.writer``): both speak this schema and this JSON. Writing turns
values into what SQLite can store (a value that cannot be encoded is kept as its repr, a lone
surrogate as an escape); reading turns a row, or a dead session's intent-log line, back into
a Record, and refuses (``ValueError``) one that was not written so, which the reader counts
as damaged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from toolbench._bench.journal.intent_log import json_encoder, started_text
from toolbench._bench.journal.record import COLUMNS, Record

APPLICATION_ID = 0x74624A4C
"""``PRAGMA application_id`` of a toolbench journal ("tbJL"): how a journal is recognised."""
SCHEMA_VERSION = 4
"""``PRAGMA user_version``. 1 was the unversioned ``calls``-only file (migrated on open);
2 adds the ``intents`` table; 3 adds ``calls.kind`` (tool, resource, prompt; added to an
older file on open, its old rows read as ``tool``); 4 adds ``calls.attempts`` and
``calls.queued_ms`` (retries and rates; old rows read 1 and NULL). A later toolbench
migrates from here; this one refuses newer."""
ADDED_COLUMNS = ("kind", "attempts", "queued_ms")
"""``calls`` columns a file from an older schema may lack (always last, in this order)."""

LEGACY_TABLES = frozenset({"calls", "sqlite_sequence"})
"""The tables of a journal from before schema versions."""
TABLES = frozenset({"calls", "intents", "snapshots"})  # snapshots: overtime.snapshot_store
"""The tables a journal may hold."""
_DISPOSITIONS = frozenset({"landed", "in_doubt", "did_not_happen"})
_KINDS = frozenset({"tool", "resource", "prompt"})
INTENT_COLUMNS = ("call_id", "session", "pid", "proc", "batch", "started", "server", "tool",
                  "name", "arguments", "provenance")


def column_type(column: str) -> str:
    """The SQLite type of a ``calls`` column (an added one too: TEXT would store 2 as '2')."""
    return ("INTEGER" if column in ("ok", "attempts")
            else "REAL" if column in ("latency_ms", "queued_ms") else "TEXT")


CALLS_DDL = (
    "CREATE TABLE IF NOT EXISTS calls (seq INTEGER PRIMARY KEY, "
    + ", ".join(f"{c} {column_type(c)}" for c in COLUMNS)
    + ")"
)
INTENTS_DDL = (  # only calls in flight live here: tiny, keyed by call, no rowid
    "CREATE TABLE IF NOT EXISTS intents (call_id TEXT PRIMARY KEY, "
    + ", ".join(f"{c} {'INTEGER' if c == 'pid' else 'TEXT'}" for c in INTENT_COLUMNS[1:])
    + ") WITHOUT ROWID"
)

ORPHAN_ERROR = ("the process ended while the call was in flight (pid {pid}); found on "
                "reopening the journal, so whether the tool ran is unknown")


# -- writing --------------------------------------------------------------------------------
_encode = json_encoder(ascii_only=False)
_SURROGATE = re.compile("[\ud800-\udfff]")


def dump_json(value: Any) -> str | None:
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


def sqlite_text(value: Any) -> Any:
    """A text column's value SQLite can store: lone surrogates become backslash escapes."""
    if isinstance(value, str) and not value.isascii() and _SURROGATE.search(value):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


# -- reading --------------------------------------------------------------------------------
def _object(text: Any, kind: type) -> Any:
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, kind):
        raise ValueError(f"expected a JSON {kind.__name__}")
    return value


def text_or_none(value: Any) -> str | None:
    """A text column's value as read back: text or NULL, else the row is damaged."""
    if value is not None and not isinstance(value, str):
        raise ValueError("expected text")
    return value


def _when(value: Any) -> datetime:
    started = datetime.fromisoformat(value)
    if started.tzinfo is None:
        raise ValueError("a time without a zone")
    return started


def decode_row(row: Sequence[Any]) -> Record:
    """A row of ``calls``; one from before ``kind`` existed (16 values, or NULL) is a tool's."""
    (call_id, batch, started, server, tool, name, arguments, ok, disposition, error_type,
     error, latency_ms, text, structured, content, provenance) = row[:16]
    kind = row[16] if len(row) > 16 and row[16] is not None else "tool"
    if len(row) > 19 or kind not in _KINDS:
        raise ValueError("bad kind")
    attempts = row[17] if len(row) > 17 and row[17] is not None else 1
    queued_ms = row[18] if len(row) > 18 else None
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError("bad attempts")
    if queued_ms is not None and (isinstance(queued_ms, bool)
                                  or not isinstance(queued_ms, (int, float))):
        raise ValueError("bad queued_ms")
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
        call_id=call_id, batch=text_or_none(batch), started=_when(started), server=server,
        tool=tool, name=name, arguments={} if args is None else args, ok=bool(ok),
        disposition=disposition, error_type=text_or_none(error_type),
        error=text_or_none(error), latency_ms=None if latency_ms is None else float(latency_ms),
        text=text_or_none(text), structured=_object(structured, dict), content=blocks,
        provenance=_object(provenance, dict), kind=kind, attempts=attempts,
        queued_ms=None if queued_ms is None else float(queued_ms),
    )


def decode_all(rows: Iterable[Sequence[Any]],
               decode: Callable[[Sequence[Any]], Any]) -> tuple[list[Any], int]:
    """``decode`` of each row that decodes, and how many did not (damaged rows)."""
    good, bad = [], 0
    for row in rows:
        try:
            good.append(decode(row))
        except (ValueError, TypeError, KeyError, RecursionError, OverflowError, OSError):
            bad += 1
    return good, bad


def orphan_record(call_id: Any, batch: Any, started: Any, server: Any, tool: Any, name: Any,
                  args: Any, prov: Any, pid: int) -> Record:
    """The in_doubt record that replaces an intent whose process is gone (JSON text in)."""
    return decode_row((call_id, batch, started, server, tool, name, args, 0, "in_doubt",
                       "TimedOut", ORPHAN_ERROR.format(pid=pid), None, None, None, None, prov))


def log_orphan(row: Sequence[Any], pid: int) -> Record:
    """An intent from a dead session's log, as the in_doubt record that replaces it."""
    call_id, batch, started, server, tool, name, args, prov = row
    return orphan_record(call_id, batch, started_text(started), server, tool, name,
                         dump_json(args), dump_json(prov), pid)


def log_outcome(row: Sequence[Any]) -> Record:
    """A finished call from a dead session's log (its outcome line), as its record."""
    (call_id, batch, started, server, tool, name, args, ok, disposition, error_type, error,
     latency_ms, text, structured, content, prov, kind, *more) = row
    return decode_row((call_id, batch, started_text(started), server, tool, name,
                       dump_json(args), ok, disposition, error_type, error, latency_ms, text,
                       dump_json(structured), dump_json(content), dump_json(prov), kind,
                       *more))
