"""Cassettes, the bench's side: replay recorded argument sets and mark what changed.

A journal is a recording: every call's arguments and answer. ``bench.replay(records,
against=server)`` runs each recorded tool call again on ``server`` (another server with the
same tool names, or the same one later), through ``map``'s machinery (``_batch``: the
overall cap, the progress bar, the journal, and ``resume``), and returns a compare frame
with two rows per case: the recorded answer (``server`` is ``recorded``) and the new one,
both with ``changed`` set when the answers differ (numbers within ``rtol``, relative).

``Replays`` keeps nothing of its own: it reads the servers and the records, and runs the
calls through ``Batches`` (``toolbench._bench.many``). It may import that package,
``toolbench._bench.servers``, ``toolbench._bench.journal`` and ``_core``.

Which records: the tool calls among ``records`` (a records frame such as ``bench.records``
or a ``map`` result, a list of them, or a journal's path) that landed (succeeded, or failed
as the tool's own error): the ones that have an answer to compare with.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from toolbench._bench.servers.naming import Target
from toolbench._core.checks import whole
from toolbench._core.errors import Unreachable
from toolbench._core.ids import Provenance, ToolId, did_you_mean

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.many.many_calls import Batches
    from toolbench._bench.servers.servers import Servers

RECORDED = "recorded"


class Replays:
    """``replay``: recorded tool calls run again, and the answers that changed marked."""

    def __init__(self, servers: Servers, store: RecordStore, batches: Batches) -> None:
        self._servers = servers
        self._store = store
        self._batches = batches

    async def replay(self, records: Any, against: str, *, rtol: float, concurrency: int,
                      progress: bool, resume: bool, timeout: float | None,
                      provenance: Provenance | Mapping[str, Any] | None) -> pd.DataFrame:
        from toolbench._bench.many.batch import compare_frame

        self._servers.check_open()
        whole(concurrency, "concurrency")
        if not (isinstance(rtol, (int, float)) and not isinstance(rtol, bool)
                and math.isfinite(rtol) and rtol >= 0):
            raise ValueError(f"rtol must be a finite number >= 0, not {rtol!r}")
        if not isinstance(against, str) or against not in self._servers:
            raise ValueError(f"against={against!r} is not a connected server; connected: "
                             f"{sorted(self._servers.names())}")
        recorded = recorded_calls(records)
        offered = {e.tool: e for e in self._servers.pegboard.entries(against)}
        wanted = sorted({r.tool for r in recorded})
        if recorded and not any(t in offered for t in wanted):
            hint = did_you_mean(wanted[0], sorted(offered))
            raise Unreachable(f"server {against!r} offers none of the recorded tools "
                              f"({', '.join(map(repr, wanted[:10]))}){hint}")
        slots: list[Any] = [None] * len(recorded)
        calls = []
        for index, old in enumerate(recorded):
            entry = offered.get(old.tool)
            target = (Target(entry.name, entry.tool_id, entry.spec) if entry is not None else
                      Target(old.tool, ToolId(against, old.tool), None))
            done = (self._store.resume_record(against, old.tool, old.arguments)
                    if resume else None)
            if done is not None:
                slots[index] = done
            else:
                calls.append((index, target, old.arguments))
        missing = [(i, t) for i, t, _ in calls if t.tool.tool not in offered]
        runnable = [c for c in calls if c[1].tool.tool in offered]
        news = await self._batches.batch(runnable, f"replay on {against}", provenance,
                                         timeout=timeout, progress=progress,
                                         overall=concurrency, per_server=None)
        for (index, _, _), record in zip(runnable, news, strict=True):
            slots[index] = record
        for index, target in missing:
            slots[index] = _missing(against, target.tool.tool, recorded[index])
        rows: list[tuple[int, Any]] = []
        changed: list[bool] = []
        for index, (old, new) in enumerate(zip(recorded, slots, strict=True)):
            differs = answers_differ(old, new, rtol)
            rows += [(index, _as_recorded(old)), (index, new)]
            changed += [differs, differs]
        df = compare_frame(rows)
        df["changed"] = changed
        df.attrs["toolbench"] = "replay"
        return df



def recorded_calls(records: Any) -> list[Any]:
    """The tool calls with an answer among ``records``, as attribute rows, oldest first."""
    import pandas as pd

    if isinstance(records, (str, os.PathLike)):
        from toolbench._bench.journal.file import inspect_file
        from toolbench._bench.journal.file_checks import check_journal_file

        check_journal_file(records)  # as load_snapshot does: no link, no FIFO, its own tables
        found = inspect_file(os.fspath(records))
        rows: list[Any] = [r for r in found.records if r.kind == "tool"]
    elif isinstance(records, pd.DataFrame):
        rows = _frame_rows(records)
    elif isinstance(records, Iterable) and not isinstance(records, (str, bytes, Mapping)):
        rows = []
        for part in records:
            if not isinstance(part, pd.DataFrame):
                raise ValueError(f"records must be a records frame, a list of them or a "
                                 f"journal path, not a list holding {type(part).__name__}")
            rows += _frame_rows(part)
    else:
        raise ValueError(f"records must be a records frame, a list of them or a journal "
                         f"path, not {type(records).__name__}")
    return [r for r in rows if r.ok or r.error_type == "ToolFailed"]


def _frame_rows(df: pd.DataFrame) -> list[Any]:
    need = ("server", "name", "arguments", "ok", "text", "structured")
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"records lack the columns {missing}: give bench.records, a map or "
                         "compare result, or a journal path")
    if "kind" in df.columns:
        df = df[df["kind"].isin(["tool"]) | df["kind"].isna()]
    if "server" in df.columns and "case" in df.columns:
        df = df[df["server"] != RECORDED]
    out = []
    for row in df.to_dict("records"):
        args = row.get("arguments")
        if not isinstance(args, Mapping):
            continue
        tool = row.get("tool") if isinstance(row.get("tool"), str) else row.get("name")
        out.append(SimpleNamespace(
            server=row.get("server"), tool=tool, name=row.get("name"), arguments=dict(args),
            ok=bool(row.get("ok")), disposition=row.get("disposition"),
            error_type=row.get("error_type"), error=row.get("error"),
            latency_ms=row.get("latency_ms"), text=row.get("text"),
            structured=row.get("structured") if isinstance(row.get("structured"), dict)
            else None, call_id=row.get("call_id")))
    return out


def _as_recorded(old: Any) -> Any:
    return SimpleNamespace(server=RECORDED, name=old.name, arguments=old.arguments, ok=old.ok,
                           disposition=old.disposition, error_type=old.error_type,
                           error=old.error, latency_ms=old.latency_ms, text=old.text,
                           structured=old.structured, call_id=old.call_id)


def _missing(server: str, tool: str, old: Any) -> Any:
    return SimpleNamespace(server=server, name=tool, arguments=old.arguments, ok=False,
                           disposition="did_not_happen", error_type="Unreachable",
                           error=f"server {server!r} offers no tool {tool!r}; not sent",
                           latency_ms=None, text=None, structured=None, call_id=None)


def answers_differ(old: Any, new: Any, rtol: float) -> bool:
    """Whether two answers differ: success against failure, or a different value."""
    if bool(old.ok) != bool(new.ok):
        return True
    if not old.ok:
        return bool(old.error_type != new.error_type)
    a = old.structured if old.structured is not None else _parsed(old.text)
    b = new.structured if new.structured is not None else _parsed(new.text)
    return not _same(a, b, rtol)


def _parsed(text: Any) -> Any:
    import json

    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _same(a: Any, b: Any, rtol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):  # True is not 1: a changed type
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=rtol) if rtol else a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], rtol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, rtol) for x, y in zip(a, b, strict=True))
    return bool(a == b)
