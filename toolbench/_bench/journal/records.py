"""One row per call: the record every call leaves, in memory and (optionally) on disk.

A failed call is data here, never an exception: the caller of a single call gets the
exception too, but only after its record exists.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import operator
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolbench._core.client import Result
from toolbench._core.errors import Disposition, ToolError, ToolFailed, is_unsent

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.journal.journal import Journal


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
    return _record(
        call_id, batch, started, server, tool, name, dict(arguments), ok, disposition,
        error_type, message, None if latency_s is None else latency_s * 1000.0,
        shown.text if shown is not None else None,
        shown.structured if shown is not None else None,
        list(shown.content) if shown is not None else [],
        dict(provenance) if provenance else None, kind,
    )


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


def _resume_key(record: Record) -> tuple[str, str, str]:
    return (record.server, record.tool, arguments_key(record.arguments))


INTENT_WAIT_S = 2.0
"""The most a call waits for its intent to be committed before it is sent anyway."""
SETTLE_WAIT_S = 10.0
"""The most an operation waits, before returning, for its records to be committed."""


class RecordStore:
    """Every record of one bench, in memory, and in its journal when it has one.

    Memory is the truth for this process: a record is kept whatever the journal does. The
    journal's failures become counts (see :meth:`settle`), never exceptions.
    """

    def __init__(self, journal: Journal | None = None) -> None:
        self._lock = threading.Lock()
        self._journal = journal
        self._records: list[Record] = journal.load() if journal is not None else []
        # Intents waited on, oldest first, for the one watchdog that bounds every wait (a
        # timer per call cost more than the rest of the loop's share of the journal).
        self._waiting: collections.deque[tuple[float, asyncio.Future[bool]]] = (
            collections.deque())
        self._watchdog: asyncio.TimerHandle | None = None
        # The resume index is built on the first lookup (most benches never resume), then
        # kept up to date; until then appending pays nothing for it. For each argument set:
        # its first success, and its first in_doubt record.
        self._resume: dict[tuple[str, str, str], list[Record | None]] | None = None

    @property
    def journal(self) -> Journal | None:
        return self._journal

    def append(self, record: Record, tag: str | None = None) -> None:
        """Keep the record; queue it for the journal (``tag`` groups it for :meth:`settle`)."""
        with self._lock:
            self._records.append(record)
            if self._resume is not None:
                self._index(record)
        if self._journal is not None:
            self._journal.outcome(record, tag)

    async def intent(self, call_id: str, batch: str | None, started: datetime, server: str,
                     tool: str, name: str, arguments: Mapping[str, Any],
                     provenance: Mapping[str, Any] | None) -> bool:
        """Return once the call's intent is committed: only then may a byte be sent.

        Bounded: a failing journal answers at once, a hung disk after INTENT_WAIT_S; the
        call then goes ahead (False: the intent is not durable) and its record is counted
        as not durable if it stays so.
        """
        journal = self._journal
        if journal is None:
            return True
        loop = asyncio.get_running_loop()
        fut = journal.intent(call_id, batch, started, server, tool, name, arguments,
                             provenance, loop)
        if isinstance(fut, bool):  # durable already (the intent log), or not at all
            return fut
        self._waiting.append((loop.time() + INTENT_WAIT_S, fut))
        if self._watchdog is None:
            self._watchdog = loop.call_later(INTENT_WAIT_S, self._expire, loop)
        return await fut

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        """Let calls whose intent is overdue go ahead (a hung disk; a lock gives up sooner)."""
        self._watchdog = None
        now, waiting = loop.time(), self._waiting
        while waiting and (waiting[0][1].done() or waiting[0][0] <= now):
            _, fut = waiting.popleft()
            if not fut.done():
                fut.set_result(False)
        if waiting:
            self._watchdog = loop.call_later(max(waiting[0][0] - now, 0.01), self._expire,
                                             loop)

    async def settle(self, tag: str | None) -> int:
        """Wait until what was queued is committed; how many ``tag`` records are not."""
        journal = self._journal
        if journal is None:
            return 0
        fut = journal.flush(tag, asyncio.get_running_loop())
        try:
            async with asyncio.timeout(SETTLE_WAIT_S):
                return await asyncio.shield(fut)
        except TimeoutError:
            return -1

    def resume_record(self, server: str, tool: str, arguments: Mapping[str, Any], *,
                      retry_in_doubt: bool = False) -> Record | None:
        """The record that stands in for this call on resume, or None to make the call.

        A success stands in; so does an in_doubt record (it may have run), unless
        ``retry_in_doubt``. A failure that did not happen, or landed as a tool error, runs.
        """
        with self._lock:
            if self._resume is None:
                self._resume = {}
                for record in self._records:
                    self._index(record)
            found = self._resume.get((server, tool, arguments_key(arguments)))
        if found is None:
            return None
        success, in_doubt = found
        if success is not None:
            return success
        return None if retry_in_doubt else in_doubt

    def _index(self, record: Record) -> None:
        assert self._resume is not None
        if record.kind != "tool":  # reads and prompt fetches are idempotent: never skipped
            return
        if record.ok:
            slot = 0
        elif record.disposition == "in_doubt":
            slot = 1
        else:
            return
        entry = self._resume.setdefault(_resume_key(record), [None, None])
        if entry[slot] is None:
            entry[slot] = record

    def __len__(self) -> int:
        return len(self._records)

    def snapshot(self) -> list[Record]:
        with self._lock:
            return list(self._records)

    async def aclose(self) -> int:
        """Close the journal (on its thread); how many records never reached the file."""
        return 0 if self._journal is None else await self._journal.aclose()

    def close(self) -> int:
        return 0 if self._journal is None else self._journal.close()


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
