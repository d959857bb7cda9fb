"""One row per call: the record every call leaves, and the frame a list of them makes.

A failed call is data here, never an exception: the caller of a single call gets the
exception too, but only after its record exists. This is the journal package's bottom: it
imports nothing of it, so the store, the journal's file and its writer can all name a Record.
Keeping the records (in memory, and in a journal) is ``toolbench._bench.journal.store``.
"""

from __future__ import annotations

import itertools
import json
import operator
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolbench._core.client import Result
from toolbench._core.errors import Disposition, ToolError, ToolFailed, is_unsent

if TYPE_CHECKING:
    import pandas as pd


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
    kind: str = "tool"
    """What was done: ``tool`` (a call), ``resource`` (a read) or ``prompt`` (a prompt fetch).
    Last, so a journal written before it existed gains it as a column (NULL reads as tool).
    A read or a prompt fetch is idempotent: ``in_doubt`` there only means no answer came,
    and asking again is always safe."""
    attempts: int = 1
    """Which attempt this row is (1: the first). A call made with ``retries=`` leaves a row
    per attempt, each journaled as a call of its own; the row of its last attempt counts
    them all, and its provenance's ``"retried"`` lists the earlier ones (error and wait)."""
    queued_ms: float | None = None
    """How long the call waited for its turn under a ``rate`` before it was sent (None:
    no rate applied); ``latency_ms`` counts from the send, so queueing stays apart."""

    def as_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in COLUMNS}


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Record))


def _id_prefix() -> None:
    global _ID_PREFIX
    _ID_PREFIX = os.urandom(8).hex()


_ID_PREFIX = ""
_id_prefix()
os.register_at_fork(after_in_child=_id_prefix)  # a forked child must not repeat our ids
_ID_COUNTER = itertools.count()


def new_call_id() -> str:
    """32 hex digits, unique across processes: a random 64-bit prefix drawn once per
    process, then a counter (``uuid4().hex`` cost ~2.5 µs a call here; this ~0.3 µs)."""
    return f"{_ID_PREFIX}{next(_ID_COUNTER):016x}"


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
    kind: str = "tool",
    attempts: int = 1,
    queued_ms: float | None = None,
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
    else:  # not a ToolError: a bug of ours before sending, else the far side's fate unknown
        ok = False
        disposition = (Disposition.DID_NOT_HAPPEN if is_unsent(error)
                       else Disposition.IN_DOUBT).value
        error_type, message = type(error).__name__, str(error) or type(error).__name__
    if shown is not None and shown.meta:
        provenance = kept_result_meta(provenance, shown.meta)
    return _record(
        call_id, batch, started, server, tool, name, dict(arguments), ok, disposition,
        error_type, message, None if latency_s is None else latency_s * 1000.0,
        shown.text if shown is not None else None,
        shown.structured if shown is not None else None,
        list(shown.content) if shown is not None else [],
        dict(provenance) if provenance else None, kind, attempts, queued_ms,
    )


RESULT_META = "result_meta"
"""The ``provenance`` key a record keeps its result's ``_meta`` under (DESIGN's columns stay
as they are; a view opened from the record gets it back in ``tool-result``)."""


PROTOCOL_META = "io.modelcontextprotocol/"
"""The prefix of ``_meta`` keys the protocol itself sets (the SDK 2 puts its server's
``serverInfo`` in every result): not kept in a record, every call would repeat them."""


def kept_result_meta(provenance: Mapping[str, Any] | None,
                     meta: dict[str, Any]) -> Mapping[str, Any] | None:
    """``provenance`` with the tool's part of the result's ``_meta`` beside what asked for
    the call (unchanged when the protocol's own keys are all there is)."""
    kept = {k: v for k, v in meta.items() if not str(k).startswith(PROTOCOL_META)}
    return {**(provenance or {}), RESULT_META: kept} if kept else provenance


def _record_builder() -> Callable[..., Record]:
    """``_record(*columns)``: a Record from its column values in order, set through the slots
    directly instead of the frozen dataclass's ``__init__`` (an ``object.__setattr__`` per
    field, about half of ``make_record``). Generated from COLUMNS (our own names), unrolled."""
    names = {f"put_{c}": getattr(Record, c).__set__ for c in COLUMNS}
    lines = [f"def _record({', '.join(COLUMNS)}):", "    r = new(Record)",
             *(f"    put_{c}(r, {c})" for c in COLUMNS), "    return r"]
    scope: dict[str, Any] = {**names, "new": object.__new__, "Record": Record}
    exec("\n".join(lines), scope)
    built: Callable[..., Record] = scope["_record"]
    return built


_record = _record_builder()


def utcnow() -> datetime:
    return datetime.now(UTC)


def frame(records: Iterable[Record]) -> pd.DataFrame:
    """The records DataFrame; built column-wise from tuples, which is the fast path."""
    import pandas as pd

    row_of = operator.attrgetter(*COLUMNS)
    # object dtype keeps None as None (pandas 3 would turn str|None columns into NaN strings).
    df = pd.DataFrame([row_of(r) for r in records], columns=list(COLUMNS), dtype=object)
    df["started"] = pd.to_datetime(df["started"], utc=True)
    df["ok"] = df["ok"].astype(bool)
    df["latency_ms"] = df["latency_ms"].astype(float)
    df["attempts"] = df["attempts"].astype(int)
    df["queued_ms"] = df["queued_ms"].astype(float)
    df.attrs["toolbench"] = "records"  # a column subset still renders as the bench's
    return df
