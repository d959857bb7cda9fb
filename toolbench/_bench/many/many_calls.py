"""Many calls at once: ``compare`` (one tool name, every server) and ``map`` (many cases).

``Batches`` keeps nothing of its own: every call is a ``Calls.invoke``, run concurrently
within per-server caps (``toolbench._bench.many.batch``), and a failure is a row, never
raised. ``map(..., cluster=)`` hands its calls to ``toolbench._bench.many.cluster``, with the
collaborators a worker's bench is rebuilt from, never the bench itself.

It may import ``toolbench._bench.calls``, ``toolbench._bench.servers``,
``toolbench._bench.journal``, ``toolbench._bench.progress`` and ``_core``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolbench._bench.calls.calling import provenance_of
from toolbench._bench.calls.plan import CallPlan
from toolbench._bench.calls.retry import (
    MAX_RETRY_WAIT_S,
    batch_buckets,
    check_max_retry_wait,
    check_retries,
)
from toolbench._bench.journal.journal import warn_not_durable
from toolbench._bench.journal.record import Record, frame
from toolbench._bench.many.batch import Job, as_cases, bind, compare_frame, run_jobs
from toolbench._bench.progress.bars import progress_bar
from toolbench._bench.servers.failed import failed_server_error
from toolbench._bench.servers.naming import Target
from toolbench._core.checks import whole
from toolbench._core.errors import Unreachable
from toolbench._core.ids import Provenance, did_you_mean
from toolbench._core.rates import parse_rate

if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd
    from distributed import Client as DaskClient

    from toolbench._bench.calls.calling import Calls
    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.many.cluster_worker import WorkerBench
    from toolbench._bench.servers.servers import Servers


class Batches:
    """``compare`` and ``map``: many tool calls at once, each leaving its record."""

    def __init__(self, servers: Servers, calls: Calls, store: RecordStore,
                 bench_type: Callable[..., WorkerBench]) -> None:
        """``bench_type`` is the bench's own class: what a Dask worker builds to run a
        ``map(..., cluster=)`` partition."""
        self._servers = servers
        self._calls = calls
        self._store = store
        self._bench_type = bench_type

    def same_named(self, name: str, servers: Iterable[str] | None) -> list[Target]:
        """Every server's tool with the original name behind ``name``."""
        if not isinstance(name, str):
            raise TypeError(f"a tool name is a str, not {type(name).__name__} {name!r}")
        pegboard = self._servers.pegboard
        if name in pegboard or name.startswith("tool://"):
            original = self._calls.resolve(name).tool.tool
        else:
            original = name
        targets = [Target(e.name, e.tool_id, e.spec) for e in pegboard.entries()
                   if e.tool == original]
        if servers is not None:
            wanted = [servers] if isinstance(servers, str) else list(servers)
            unknown = [s for s in wanted if s not in self._servers]
            if unknown:
                raise ValueError(f"unknown servers {unknown}; "
                                 f"connected: {sorted(self._servers.names())}")
            targets = [t for t in targets if t.tool.server in wanted]
        if not targets:
            failed = failed_server_error(self._servers, name, pegboard.separator)
            if failed is not None:  # its server failed: that, and why, not "no such tool"
                raise failed
            hint = did_you_mean(original, sorted({e.tool for e in pegboard.entries()}))
            raise Unreachable(f"no connected server offers a tool named {original!r}{hint}")
        return targets

    async def batch(self, calls: Sequence[tuple[int, Target, Any]], label: str,
                     provenance: Provenance | Mapping[str, Any] | None, *,
                     timeout: float | None, progress: bool | None, overall: int | None,
                     per_server: int | None, retries: int = 0,
                     max_retry_wait: float = MAX_RETRY_WAIT_S,
                     rate: str | None = None) -> list[Record]:
        """Make ``(case, target, arguments)`` calls as one batch; records in call order.
        ``rate`` paces each server of the batch on its own (``calls/retry.py``)."""
        batch = uuid.uuid4().hex
        base = provenance_of(provenance)
        buckets = batch_buckets(rate, {target.tool.server for _, target, _ in calls})
        # One plan per tool for the whole batch (calls/plan.py): what every call to it
        # shares is looked up once, and re-checked cheaply on each call.
        plans: dict[int, CallPlan] = {}
        for _, target, _ in calls:
            if id(target) not in plans:
                plans[id(target)] = CallPlan(target, timeout, buckets.get(target.tool.server))
        jobs = [Job(target.tool.server, bind(self._calls.invoke, target, args, batch=batch,
                                              timeout=timeout,
                                              provenance=base.with_case(index),
                                              retries=retries, max_retry_wait=max_retry_wait,
                                              plan=plans[id(target)]))
                for index, target, args in calls]
        bar = progress_bar(len(jobs), label, progress)
        try:
            outcomes = await run_jobs(jobs, overall=overall, per_server=per_server, bar=bar)
        finally:
            bar.close()
        if self._store.journal is not None:  # one wait, and one warning, for the batch
            warn_not_durable(self._store.journal, await self._store.settle(batch), len(jobs),
                             label)
        return [outcome[0] for outcome in outcomes]

    async def compare(self, name: str, cases: Mapping[str, Any] | Sequence[Any] | None = None,
                       /, servers: Iterable[str] | None = None, *, concurrency: int = 4,
                       timeout: float | None = None, progress: bool | None = None,
                       provenance: Provenance | Mapping[str, Any] | None = None,
                       retries: int = 0, max_retry_wait: float = MAX_RETRY_WAIT_S,
                       rate: str | None = None, **kwargs: Any) -> pd.DataFrame:
        """Each server is its own lane, so a slow server never holds up the others."""
        self._servers.check_open()
        whole(concurrency, "concurrency")
        retries, max_retry_wait = check_retries(retries), check_max_retry_wait(max_retry_wait)
        parse_rate(rate)
        targets = self.same_named(name, servers)
        calls = [(index, target, args) for index, args in enumerate(as_cases(cases, kwargs))
                 for target in targets]
        label = name  # as records show it: without any of these servers' secrets
        for redact in {id(r): r for t in targets
                       if (r := self._servers.redactor(t.tool.server)) is not None}.values():
            label = redact(label)
        records = await self.batch(calls, f"compare {label}", provenance, timeout=timeout,
                                    progress=progress, overall=None, per_server=concurrency,
                                    retries=retries, max_retry_wait=max_retry_wait, rate=rate)
        return compare_frame([(index, r) for (index, _, _), r in zip(calls, records,
                                                                        strict=True)])

    def _resume_tool(self, target: Target) -> str:
        """The tool name that ``resume`` finds this tool's records under: the name they hold.

        A tool named after one of its server's secrets is recorded with the secret redacted
        (``get-[redacted]``), in memory, in the journal and in the intent log. Redaction is
        deterministic, so the same configuration in a later process redacts the name the
        same way, and the lookup needs nothing the journal does not already hold: no digest
        of the name (which a weak secret would let anyone reading the file test guesses
        against), and no mapping that a kill -9 would lose. Two tools of one server whose
        names differ only in a secret are recorded alike; resume cannot tell their records
        apart, so it refuses rather than skip a case that never ran.
        """
        shown = self._calls.shown(target)[0]
        redact = self._servers.redactor(target.tool.server)
        if redact is None or shown == target.tool.tool:
            return shown
        twins = [e for e in self._servers.pegboard.entries(target.tool.server)
                 if e.tool != target.tool.tool and redact(e.tool) == shown]
        if twins:
            raise ValueError(
                f"resume cannot tell {self._calls.shown(target)[1]!r} from {len(twins)} other "
                f"tool{'s' * (len(twins) != 1)} of server {target.tool.server!r} whose names "
                "differ only in a secret: records hold such names redacted, alike. Call "
                "map() without resume=True for it; nothing was called")
        return shown

    async def map(self, name: str, cases: Iterable[Mapping[str, Any]], /, *,
                   concurrency: int = 8, progress: bool = True, resume: bool = False,
                   retry_in_doubt: bool = False, timeout: float | None = None,
                   provenance: Provenance | Mapping[str, Any] | None = None,
                   cluster: DaskClient | None = None, retries: int = 0,
                   max_retry_wait: float = MAX_RETRY_WAIT_S, rate: str | None = None,
                   share_credentials: bool = False) -> pd.DataFrame:
        """Resumed cases are looked up before anything is sent, so a resumed map never
        calls a case twice, on one machine or on a cluster."""
        self._servers.check_open()
        whole(concurrency, "concurrency")
        retries, max_retry_wait = check_retries(retries), check_max_retry_wait(max_retry_wait)
        parse_rate(rate)
        if share_credentials is not False and (share_credentials is not True or cluster is None):
            raise ValueError(f"share_credentials={share_credentials!r}: it is True or False, "
                             "and True only with cluster= (it sends a signed-in server's "
                             "access token to the Dask workers)")
        target = self._calls.resolve(name)
        row = self._servers.row(target.tool.server)
        paced = row is not None and row.given is not None and row.given[1].get("rate")
        if cluster is not None and (retries or rate is not None or paced):
            raise ValueError("map(cluster=...) takes no retries= or rate=, nor a server "
                             "connected with a rate, yet: each worker would pace and retry "
                             "on its own; run it without the cluster")
        if cluster is not None:  # checked before anything runs or ships
            from toolbench._bench.many import cluster as _cluster

            _cluster.check_cluster(self._servers, self._bench_type, cluster, target.tool.server,
                                   share_credentials)
        arg_sets = as_cases(cases, {})
        recorded_as = self._resume_tool(target) if resume else target.tool.tool
        slots: list[Record | None] = [None] * len(arg_sets)
        calls = []
        for index, args in enumerate(arg_sets):
            done = (self._store.resume_record(target.tool.server, recorded_as, args,
                                              retry_in_doubt=retry_in_doubt)
                    if resume and isinstance(args, Mapping) else None)
            if done is not None:
                slots[index] = done
            else:
                calls.append((index, target, args))
        if cluster is not None:
            records = await _cluster.map_on_cluster(
                _cluster.Driver(self._servers, self._calls, self._store, self._bench_type),
                cluster, target,
                [(index, args) for index, _, args in calls],
                concurrency=concurrency, progress=progress, timeout=timeout,
                provenance=provenance_of(provenance), share_credentials=share_credentials)
        else:
            records = await self.batch(calls, f"map {self._calls.shown(target)[1]}", provenance,
                                        timeout=timeout, progress=progress,
                                        overall=concurrency, per_server=None, retries=retries,
                                        max_retry_wait=max_retry_wait, rate=rate)
        for (index, _, _), record in zip(calls, records, strict=True):
            slots[index] = record
        return frame(r for r in slots if r is not None)
