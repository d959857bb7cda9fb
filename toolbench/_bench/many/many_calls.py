"""Many calls at once: ``compare`` (one tool name, every server) and ``map`` (many cases).

``ManyCalls`` is mixed into ``BaseBench``, on top of ``Calling``: every call is an
``_invoke``, run concurrently within per-server caps (``toolbench._bench.many.batch``), and a
failure is a row, never raised. ``map(..., cluster=)`` hands its calls to
``toolbench._bench.many.cluster``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from toolbench._bench.calls.calling import Calling, _Target
from toolbench._bench.journal.journal import warn_not_durable
from toolbench._bench.journal.record import Record, frame
from toolbench._bench.many.batch import Job, as_cases, bind, compare_frame, progress_bar, run_jobs
from toolbench._core.checks import whole
from toolbench._core.errors import Unreachable
from toolbench._core.ids import Provenance, did_you_mean
from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd
    from distributed import Client as DaskClient

    from toolbench._bench.bench import BaseBench


class ManyCalls(Calling):
    """``compare`` and ``map``; mixed into ``BaseBench``."""

    def _same_named(self, name: str, servers: Iterable[str] | None) -> list[_Target]:
        """Every server's tool with the original name behind ``name``."""
        if not isinstance(name, str):
            raise TypeError(f"a tool name is a str, not {type(name).__name__} {name!r}")
        if name in self.pegboard or name.startswith("tool://"):
            original = self._resolve(name).tool.tool
        else:
            original = name
        targets = [_Target(e.name, e.tool_id, e.spec) for e in self.pegboard.entries()
                   if e.tool == original]
        if servers is not None:
            wanted = [servers] if isinstance(servers, str) else list(servers)
            unknown = [s for s in wanted if s not in self._rows]
            if unknown:
                raise ValueError(f"unknown servers {unknown}; connected: {sorted(self._rows)}")
            targets = [t for t in targets if t.tool.server in wanted]
        if not targets:
            hint = did_you_mean(original, sorted({e.tool for e in self.pegboard.entries()}))
            raise Unreachable(f"no connected server offers a tool named {original!r}{hint}")
        return targets

    async def _batch(self, calls: Sequence[tuple[int, _Target, Any]], label: str,
                     provenance: Provenance | Mapping[str, Any] | None, *,
                     timeout: float | None, progress: bool | None, overall: int | None,
                     per_server: int | None) -> list[Record]:
        """Make ``(case, target, arguments)`` calls as one batch; records in call order."""
        batch = uuid.uuid4().hex
        base = self._provenance(provenance)
        jobs = [Job(target.tool.server, bind(self._invoke, target, args, batch=batch,
                                              timeout=timeout,
                                              provenance=base.with_fields(case=index)))
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

    async def _compare(self, name: str, cases: Mapping[str, Any] | Sequence[Any] | None = None,
                       /, servers: Iterable[str] | None = None, *, concurrency: int = 4,
                       timeout: float | None = None, progress: bool | None = None,
                       provenance: Provenance | Mapping[str, Any] | None = None,
                       **kwargs: Any) -> pd.DataFrame:
        """Each server is its own lane, so a slow server never holds up the others."""
        self._check_open()
        whole(concurrency, "concurrency")
        targets = self._same_named(name, servers)
        calls = [(index, target, args) for index, args in enumerate(as_cases(cases, kwargs))
                 for target in targets]
        label = name  # as records show it: without any of these servers' secrets
        for redact in {id(r): r for t in targets
                       if (r := self._redactor(t.tool.server)) is not None}.values():
            label = redact(label)
        records = await self._batch(calls, f"compare {label}", provenance, timeout=timeout,
                                    progress=progress, overall=None, per_server=concurrency)
        return compare_frame([(index, r) for (index, _, _), r in zip(calls, records,
                                                                        strict=True)])

    def compare(self, name: str, cases: Mapping[str, Any] | Sequence[Any] | None = None,
                /, servers: Iterable[str] | None = None, *, concurrency: int = 4,
                timeout: float | None = None, progress: bool | None = None,
                provenance: Provenance | Mapping[str, Any] | None = None,
                **kwargs: Any) -> pd.DataFrame:
        """Run the same tool name on every server that offers it; failures are rows.

        Args:
            name: a tool's own name (``distance``) or any pegboard name for it.
            cases: one argument mapping, or a list of them; or pass keywords.
            servers: only these servers (default: every server offering the tool).
            concurrency: calls in flight per server (a positive integer).
            timeout: seconds per call (default: each server's, else the bench's).
            progress: a progress bar (``None``: only in a notebook).
            provenance: fields recorded with every call.
            **kwargs: one case's arguments, as keywords (not together with ``cases``).

        Returns:
            A compare frame: one row per (case, server), records' columns plus ``case``;
            ``df.tb.answers()`` and ``df.tb.summary()`` read it.

        Raises:
            Unreachable: no connected server offers the tool (with close names).
            ValueError: ``servers`` names an unknown server.

        Example:
            >>> bench.compare("distance", from_city="London", to_city="Paris")  # doctest: +SKIP
        """
        return get_loop().run(self._compare, name, cases, servers, concurrency=concurrency,
                              timeout=timeout, progress=progress, provenance=provenance,
                              **kwargs)

    async def acompare(self, name: str,
                       cases: Mapping[str, Any] | Sequence[Any] | None = None, /,
                       servers: Iterable[str] | None = None, *, concurrency: int = 4,
                       timeout: float | None = None, progress: bool | None = None,
                       provenance: Provenance | Mapping[str, Any] | None = None,
                       **kwargs: Any) -> pd.DataFrame:
        """Awaitable :meth:`compare`: the same arguments, result and errors."""
        return await get_loop().arun(self._compare, name, cases, servers,
                                     concurrency=concurrency, timeout=timeout,
                                     progress=progress, provenance=provenance, **kwargs)

    def _resume_tool(self, target: _Target) -> str:
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
        shown = self._shown(target)[0]
        redact = self._redactor(target.tool.server)
        if redact is None or shown == target.tool.tool:
            return shown
        twins = [e for e in self.pegboard.entries(target.tool.server)
                 if e.tool != target.tool.tool and redact(e.tool) == shown]
        if twins:
            raise ValueError(
                f"resume cannot tell {self._shown(target)[1]!r} from {len(twins)} other "
                f"tool{'s' * (len(twins) != 1)} of server {target.tool.server!r} whose names "
                "differ only in a secret: records hold such names redacted, alike. Call "
                "map() without resume=True for it; nothing was called")
        return shown

    async def _map(self, name: str, cases: Iterable[Mapping[str, Any]], /, *,
                   concurrency: int = 8, progress: bool = True, resume: bool = False,
                   retry_in_doubt: bool = False, timeout: float | None = None,
                   provenance: Provenance | Mapping[str, Any] | None = None,
                   cluster: DaskClient | None = None) -> pd.DataFrame:
        """Resumed cases are looked up before anything is sent, so a resumed map never
        calls a case twice, on one machine or on a cluster."""
        self._check_open()
        whole(concurrency, "concurrency")
        target = self._resolve(name)
        if cluster is not None:  # checked before anything runs or ships
            from toolbench._bench.many import cluster as _cluster

            _cluster.check_cluster(cast("BaseBench", self), cluster, target.tool.server)
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
                cast("BaseBench", self), cluster, target,
                [(index, args) for index, _, args in calls],
                concurrency=concurrency, progress=progress, timeout=timeout,
                provenance=self._provenance(provenance))
        else:
            records = await self._batch(calls, f"map {self._shown(target)[1]}", provenance,
                                        timeout=timeout, progress=progress,
                                        overall=concurrency, per_server=None)
        for (index, _, _), record in zip(calls, records, strict=True):
            slots[index] = record
        return frame(r for r in slots if r is not None)

    def map(self, name: str, cases: Iterable[Mapping[str, Any]], /, *,
            concurrency: int = 8, progress: bool = True, resume: bool = False,
            retry_in_doubt: bool = False, timeout: float | None = None,
            provenance: Provenance | Mapping[str, Any] | None = None,
            cluster: DaskClient | None = None) -> pd.DataFrame:
        """Call one tool once per argument set, ``concurrency`` at a time; failures are rows.

        Failures are rows, never raised. With ``resume=True`` an argument set that already
        succeeded for this tool (in memory or in the journal) is not called again, and
        neither is one whose call is in doubt (it may have run: interrupted, timed out, or
        in flight when a process died); the earlier record stands in the result instead.
        ``retry_in_doubt=True`` calls the in-doubt ones again. A failure that did not
        happen, or a tool error, is always called again on resume.

        ``cluster=client`` (a ``dask.distributed.Client``, from the ``dask`` extra) runs the
        calls on the cluster's workers, each with its own connection to the server, rebuilt
        from what ``connect``/``load_config`` was given (a stdio command or an http(s) URL;
        an in-process server or a ToolBox cannot travel: ``ValueError``). ``concurrency``
        then applies per worker, so up to ``concurrency`` x workers calls are in flight.
        Records, journal, ``resume`` and the progress bar work as on one machine; a worker
        lost mid-job leaves only the calls it may have sent ``in_doubt`` (see
        ``toolbench._bench.many.cluster``).

        Args:
            name: the pegboard name or ``tool://`` reference of the tool.
            cases: the argument sets, one mapping each.
            concurrency: calls in flight at once (per worker on a cluster).
            progress: a progress bar (on by default).
            resume: skip argument sets that already succeeded or are in doubt.
            retry_in_doubt: with ``resume``, call the in-doubt ones again.
            timeout: seconds per call (default: each server's, else the bench's).
            provenance: fields recorded with every call.
            cluster: a ``dask.distributed.Client`` to run the calls on its workers.

        Returns:
            A records frame, one row per argument set, in the order given.

        Raises:
            Unreachable: no such tool.
            ValueError: the server cannot travel to a cluster, or a bad ``concurrency``.

        Example:
            >>> bench.map("geo-distance", [{"from_city": "London", "to_city": c}
            ...                            for c in ("Paris", "Rome")])  # doctest: +SKIP
        """
        return get_loop().run(self._map, name, cases, concurrency=concurrency,
                              progress=progress, resume=resume,
                              retry_in_doubt=retry_in_doubt, timeout=timeout,
                              provenance=provenance, cluster=cluster)

    async def amap(self, name: str, cases: Iterable[Mapping[str, Any]], /, *,
                   concurrency: int = 8, progress: bool = True, resume: bool = False,
                   retry_in_doubt: bool = False, timeout: float | None = None,
                   provenance: Provenance | Mapping[str, Any] | None = None,
                   cluster: DaskClient | None = None) -> pd.DataFrame:
        """Awaitable :meth:`map`: the same arguments, result and errors."""
        return await get_loop().arun(self._map, name, cases, concurrency=concurrency,
                                     progress=progress, resume=resume,
                                     retry_in_doubt=retry_in_doubt, timeout=timeout,
                                     provenance=provenance, cluster=cluster)
