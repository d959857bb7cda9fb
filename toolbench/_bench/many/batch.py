"""Many calls at once, each server its own lane, so a slow server never holds back the rest.

A job waits for its server's lane *before* it takes one of the overall slots: jobs queued
behind a slow server hold nothing that another server's jobs could use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from toolbench._bench.progress.bars import Bar

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.journal.record import Record

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Job:
    """One call to make: which server's lane it queues in, and what to run."""

    server: str
    run: Callable[[], Awaitable[Any]]


async def run_jobs(jobs: Sequence[Job], *, overall: int | None, per_server: int | None,
                   bar: Bar | None = None) -> list[Any]:
    """Run every job; results in job order. Caps: ``overall`` slots, ``per_server`` lanes."""
    results: list[Any] = [None] * len(jobs)
    lanes = {job.server: anyio.CapacityLimiter(per_server) for job in jobs} if per_server else {}
    slots = anyio.CapacityLimiter(overall) if overall else None

    async def one(index: int, job: Job) -> None:
        lane = lanes.get(job.server)
        if lane is not None:
            await lane.acquire()
        try:
            if slots is not None:
                async with slots:
                    results[index] = await job.run()
            else:
                results[index] = await job.run()
        finally:
            if lane is not None:
                lane.release()
        if bar is not None:
            bar.update(1)

    if overall and not per_server:
        # One cap only (a map): ``overall`` workers take the jobs in order. The same order
        # and cap as a task per job behind a limiter, for 2 µs of CPU per job instead of
        # 58 (3,000 jobs, profiled), which decided a map on a fast server.
        pending = iter(enumerate(jobs))

        async def worker() -> None:
            for index, job in pending:
                results[index] = await job.run()
                if bar is not None:
                    bar.update(1)

        async with anyio.create_task_group() as tg:
            for _ in range(min(overall, len(jobs))):
                tg.start_soon(worker)
        return results
    async with anyio.create_task_group() as tg:
        for index, job in enumerate(jobs):
            tg.start_soon(one, index, job)
    return results


def bind(fn: Any, *args: Any, **kwargs: Any) -> Any:
    async def bound() -> Any:
        return await fn(*args, **kwargs)

    return bound


COMPARE_COLUMNS = ("case", "server", "name", "arguments", "ok", "disposition", "error_type",
                   "error", "latency_ms", "text", "structured", "call_id")


def compare_frame(rows: Sequence[tuple[int, Record]]) -> pd.DataFrame:
    """One row per (case, server), each structured field flattened as ``structured.<key>``."""
    import pandas as pd

    data = []
    for case, record in rows:
        row: dict[str, Any] = {"case": case}
        for column in COMPARE_COLUMNS[1:]:
            row[column] = getattr(record, column)
        for key, value in (record.structured or {}).items():
            row[f"structured.{key}"] = value
        data.append(row)
    df = pd.DataFrame(data, dtype=object)
    for column in COMPARE_COLUMNS:
        if column not in df.columns:
            df[column] = None
    extra = sorted(c for c in df.columns if c not in COMPARE_COLUMNS)
    df = df[list(COMPARE_COLUMNS) + extra]
    df["ok"] = df["ok"].astype(bool)
    df["latency_ms"] = df["latency_ms"].astype(float)
    df["case"] = df["case"].astype(int)
    return df


def as_cases(cases: Any, kwargs: Mapping[str, Any]) -> list[Any]:
    """The argument sets of a ``compare``/``map``: one mapping, a list of them, or keywords
    (one set); anything else is refused naming what it got."""
    if cases is not None and kwargs:
        raise TypeError("pass the argument sets as cases or as keywords, not both")
    if cases is None:
        return [dict(kwargs)]
    if isinstance(cases, Mapping):
        return [cases]
    if isinstance(cases, (str, bytes)) or not isinstance(cases, Iterable):
        raise TypeError(f"cases must be a mapping or a list of mappings, not {cases!r}")
    return list(cases)
