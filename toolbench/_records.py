"""One row per call: the record every call leaves, in memory and (optionally) on disk.

A failed call is data here, never an exception: the caller of a single call gets the
exception too, but only after its record exists.
"""

from __future__ import annotations

import json
import operator
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolbench._client import Result
from toolbench._errors import Disposition, ToolError, ToolFailed

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._journal import Journal


@dataclass(frozen=True, slots=True)
class Record:
    """The columns of ``bench.records``; their names are a contract (see DESIGN.md)."""

    call_id: str
    batch: str | None
    started: datetime
    server: str
    tool: str
    name: str
    arguments: dict[str, Any]
    ok: bool
    disposition: str
    error_type: str | None
    error: str | None
    latency_ms: float | None
    text: str | None
    structured: dict[str, Any] | None
    content: list[dict[str, Any]]
    provenance: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in COLUMNS}


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Record))


def new_call_id() -> str:
    return uuid.uuid4().hex


def arguments_key(arguments: Mapping[str, Any]) -> str:
    """A canonical text for an argument set, so resume recognises the same case again."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)


def make_record(
    *,
    call_id: str,
    batch: str | None,
    started: datetime,
    server: str,
    tool: str,
    name: str,
    arguments: Mapping[str, Any],
    latency_s: float | None,
    provenance: Mapping[str, Any] | None,
    result: Result | None = None,
    error: BaseException | None = None,
) -> Record:
    """Fold a result or an error into a row; an error's attached result keeps its text."""
    shown = result
    if isinstance(error, ToolFailed) and error.result is not None:
        shown = error.result
    if error is None:
        ok, disposition, error_type, message = True, Disposition.LANDED.value, None, None
    elif isinstance(error, ToolError):
        ok, disposition = False, error.disposition.value
        error_type, message = type(error).__name__, error.detail
    else:  # not a ToolError: the far side's fate is unknown
        ok, disposition = False, Disposition.IN_DOUBT.value
        error_type, message = type(error).__name__, str(error) or type(error).__name__
    return Record(
        call_id=call_id,
        batch=batch,
        started=started,
        server=server,
        tool=tool,
        name=name,
        arguments=dict(arguments),
        ok=ok,
        disposition=disposition,
        error_type=error_type,
        error=message,
        latency_ms=None if latency_s is None else latency_s * 1000.0,
        text=shown.text if shown is not None else None,
        structured=shown.structured if shown is not None else None,
        content=list(shown.content) if shown is not None else [],
        provenance=dict(provenance) if provenance else None,
    )


def utcnow() -> datetime:
    return datetime.now(UTC)


def _success_key(record: Record) -> tuple[str, str, str]:
    return (record.server, record.tool, arguments_key(record.arguments))


class RecordStore:
    """Every record of one bench, appended under a lock, journaled first when durable."""

    def __init__(self, journal: Journal | None = None) -> None:
        self._lock = threading.Lock()
        self._journal = journal
        self._records: list[Record] = list(journal.load()) if journal is not None else []
        # The resume index is built on the first lookup (most benches never resume), then
        # kept up to date; until then appending pays nothing for it.
        self._succeeded: dict[tuple[str, str, str], Record] | None = None

    @property
    def journal(self) -> Journal | None:
        return self._journal

    def append(self, record: Record) -> None:
        """Durable (when journaled) before it is visible, so nothing shown can be lost."""
        with self._lock:
            if self._journal is not None:
                self._journal.append(record)
            self._records.append(record)
            if self._succeeded is not None and record.ok:
                self._succeeded.setdefault(_success_key(record), record)

    def success(self, server: str, tool: str, arguments: Mapping[str, Any]) -> Record | None:
        """The first successful record of this exact call, if there is one (for resume)."""
        with self._lock:
            if self._succeeded is None:
                self._succeeded = {}
                for record in self._records:
                    if record.ok:
                        self._succeeded.setdefault(_success_key(record), record)
            index = self._succeeded
        return index.get((server, tool, arguments_key(arguments)))

    def __len__(self) -> int:
        return len(self._records)

    def snapshot(self) -> list[Record]:
        with self._lock:
            return list(self._records)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()


def frame(records: Iterable[Record]) -> pd.DataFrame:
    """The records DataFrame; built column-wise from tuples, which is the fast path."""
    import pandas as pd

    row_of = operator.attrgetter(*COLUMNS)
    # object dtype keeps None as None (pandas 3 would turn str|None columns into NaN strings).
    df = pd.DataFrame([row_of(r) for r in records], columns=list(COLUMNS), dtype=object)
    df["started"] = pd.to_datetime(df["started"], utc=True)
    df["ok"] = df["ok"].astype(bool)
    df["latency_ms"] = df["latency_ms"].astype(float)
    return df
