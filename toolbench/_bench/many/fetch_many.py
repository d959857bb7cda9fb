"""Comparing and mapping reads and prompt fetches: ``compare_prompt``, ``map_prompt``,
``compare_read``, ``map_read``.

``FetchBatches`` keeps nothing of its own: each read or fetch is a ``Fetches.read_one`` or
``Fetches.prompt_one`` (``toolbench._bench.calls.fetches``), run within the caps of
``toolbench._bench.many.batch``; the prompt index is the catalog's
(``toolbench._bench.catalog.listing``).

**Why separate methods, not ``compare(kind=...)``.** A tool's ``compare``/``map`` take a
tool name and argument mappings; a prompt's take a prompt name and *string* arguments; a
read's take URIs and no arguments at all. One method with a ``kind=`` switch would accept
inputs that mean nothing for the kind chosen and check them only at run time, and its
docstring and signature could not say what each kind takes. So: ``compare_prompt``,
``map_prompt``, ``compare_read``, ``map_read``, each with its own signature; their frames
are the ones ``compare`` and ``map`` return.

It may import ``toolbench._bench.calls``, ``toolbench._bench.catalog``,
``toolbench._bench.servers``, ``toolbench._bench.journal``, ``toolbench._bench.progress`` and
``_core``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from toolbench._bench.calls.calling import provenance_of
from toolbench._bench.journal.journal import warn_not_durable
from toolbench._bench.journal.record import Record, frame
from toolbench._bench.many.batch import Job, as_cases, bind, compare_frame, run_jobs
from toolbench._bench.progress.bars import progress_bar
from toolbench._core import html as _html
from toolbench._core.checks import seconds, whole
from toolbench._core.errors import Unreachable
from toolbench._core.ids import Provenance, did_you_mean

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.calls.fetches import Fetches
    from toolbench._bench.catalog.listing import Listings
    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.servers.servers import Servers

T = TypeVar("T")


class FetchBatches:
    """Many reads or prompt fetches at once, each leaving its record."""

    def __init__(self, servers: Servers, fetches: Fetches, listings: Listings,
                 store: RecordStore) -> None:
        self._servers = servers
        self._fetches = fetches
        self._listings = listings
        self._store = store

    async def _run_batch(self, jobs: list[tuple[str, Callable[..., Awaitable[Any]]]],
                         label: str, progress: bool | None, *, overall: int | None,
                         per_server: int | None, batch: str) -> list[Record]:
        bar = progress_bar(len(jobs), label, progress)
        try:
            outcomes = await run_jobs([Job(server, run) for server, run in jobs],
                                      overall=overall, per_server=per_server, bar=bar)
        finally:
            bar.close()
        if self._store.journal is not None:
            warn_not_durable(self._store.journal, await self._store.settle(batch), len(jobs),
                             label)
        return [outcome[0] for outcome in outcomes]

    async def compare_prompt(self, name: str,
                              cases: Mapping[str, str] | Sequence[Mapping[str, str]] | None
                              = None, /, servers: Iterable[str] | None = None, *,
                              concurrency: int = 4, timeout: float | None = None,
                              progress: bool | None = None,
                              provenance: Provenance | Mapping[str, Any] | None = None,
                              **kwargs: str) -> pd.DataFrame:
        self._servers.check_open()
        whole(concurrency, "concurrency")
        if timeout is not None:
            seconds(timeout, "timeout")
        await self._listings.prompt_rows(None)  # fresh: every server that offers it now
        index = self._listings.prompt_names()
        own = index[name][0][1] if len(index.get(name, [])) == 1 else name
        targets = [(full, server, prompt) for full, entries in index.items()
                   for server, prompt in entries if prompt == own]
        order = self._servers.names()
        targets.sort(key=lambda t: order.index(t[1]) if t[1] in order else 0)
        targets = _only(targets, servers, order, lambda t: t[1])
        if not targets:
            raise Unreachable(f"no connected server offers a prompt named {own!r}"
                              f"{did_you_mean(own, {p for e in index.values() for _, p in e})}")
        arg_sets = as_cases(cases, kwargs)
        batch, base = uuid.uuid4().hex, provenance_of(provenance)
        calls = [(case, target, args) for case, args in enumerate(arg_sets)
                 for target in targets]
        jobs = [(target[1], bind(self._fetches.prompt_one, *target, args, batch=batch,
                                 timeout=timeout, provenance=base.with_fields(case=case)))
                for case, target, args in calls]
        records = await self._run_batch(jobs, f"compare prompt {own}", progress, overall=None,
                                        per_server=concurrency, batch=batch)
        return compare_frame([(case, r) for (case, _, _), r in zip(calls, records,
                                                                    strict=True)])

    async def map_prompt(self, name: str, cases: Iterable[Mapping[str, str]], /, *,
                          concurrency: int = 8, progress: bool = True,
                          timeout: float | None = None,
                          provenance: Provenance | Mapping[str, Any] | None = None,
                          ) -> pd.DataFrame:
        self._servers.check_open()
        whole(concurrency, "concurrency")
        if timeout is not None:
            seconds(timeout, "timeout")
        full, server, prompt = await self._listings.resolve_prompt(name)
        arg_sets = as_cases(cases, {})
        batch, base = uuid.uuid4().hex, provenance_of(provenance)
        jobs = [(server, bind(self._fetches.prompt_one, full, server, prompt, args, batch=batch,
                              timeout=timeout, provenance=base.with_fields(case=case)))
                for case, args in enumerate(arg_sets)]
        return frame(await self._run_batch(jobs, f"map prompt {full}", progress,
                                           overall=concurrency, per_server=None, batch=batch))

    async def compare_read(self, uris: str | Sequence[str], /,
                            servers: Iterable[str] | None = None, *, concurrency: int = 4,
                            timeout: float | None = None, progress: bool | None = None,
                            provenance: Provenance | Mapping[str, Any] | None = None,
                            ) -> pd.DataFrame:
        self._servers.check_open()
        whole(concurrency, "concurrency")
        if timeout is not None:
            seconds(timeout, "timeout")
        offering = [name for name, _ in self._servers.candidates(None)]
        if servers is None:  # a server that never offered resources has no row (issue 37)
            offering = await self._offering_resources(offering)
        targets = _only(offering, servers, self._servers.names(), lambda name: name)
        if not targets:
            raise Unreachable("no connected server offers resources")
        listed = _uris(uris)
        batch, base = uuid.uuid4().hex, provenance_of(provenance)
        calls = [(case, server, uri) for case, uri in enumerate(listed) for server in targets]
        jobs = [(server, bind(self._fetches.read_one, server, uri, batch=batch, timeout=timeout,
                              provenance=base.with_fields(case=case)))
                for case, server, uri in calls]
        records = await self._run_batch(jobs, "compare read", progress, overall=None,
                                        per_server=concurrency, batch=batch)
        return compare_frame([(case, r) for (case, _, _), r in zip(calls, records,
                                                                    strict=True)])

    async def _offering_resources(self, names: list[str]) -> list[str]:
        """Of ``names``, the servers that offer resources: their capabilities say so, and
        they list a resource or a template. A server that lists none would only add a
        ``NotOffered`` or "unknown resource" row to every case. If no server lists any, all
        that have the capability stay, so the rows still say why each read failed."""
        capable = [name for name in names if self._offers_resources(name)]
        listed: set[str] = set()
        for templates in (False, True):
            with contextlib.suppress(Exception):  # a listing that fails: judged by the reads
                found = await self._listings.resources(None, None, templates=templates)
                listed.update(str(s) for s in found["server"])
        return [name for name in capable if name in listed] or capable

    def _offers_resources(self, name: str) -> bool:
        """Whether ``name`` said at connect that it has resources (its capabilities); a
        server that has not said (no handshake seen) is asked all the same."""
        row = self._servers.row(name)
        info = row.connection.info() if row is not None and row.connection is not None else {}
        capabilities = info.get("capabilities")
        return not isinstance(capabilities, dict) or capabilities.get("resources") is not None

    async def map_read(self, server: str, uris: Sequence[str], /, *, concurrency: int = 8,
                        progress: bool = True, timeout: float | None = None,
                        provenance: Provenance | Mapping[str, Any] | None = None,
                        ) -> pd.DataFrame:
        self._servers.check_open()
        whole(concurrency, "concurrency")
        if timeout is not None:
            seconds(timeout, "timeout")
        self._servers.resource_client(server)
        listed = _uris(uris)
        batch, base = uuid.uuid4().hex, provenance_of(provenance)
        jobs = [(server, bind(self._fetches.read_one, server, uri, batch=batch, timeout=timeout,
                              provenance=base.with_fields(case=case)))
                for case, uri in enumerate(listed)]
        return frame(await self._run_batch(jobs, f"map read {server}", progress,
                                           overall=concurrency, per_server=None, batch=batch))



def _uris(uris: Any) -> list[str]:
    listed = [uris] if isinstance(uris, str) else list(uris)
    bad = [u for u in listed if not isinstance(u, str) or not u]
    if bad:
        raise ValueError(f"a URI is a non-empty str, not {_html.shorten(repr(bad[0]), 80)}")
    return listed


def _only(items: list[T], servers: Iterable[str] | None, rows: Sequence[str],
          server_of: Callable[[T], str]) -> list[T]:
    if servers is None:
        return items
    wanted = [servers] if isinstance(servers, str) else list(servers)
    unknown = [s for s in wanted if s not in rows]
    if unknown:
        raise ValueError(f"unknown servers {unknown}; connected: {sorted(rows)}")
    return [item for item in items if server_of(item) in wanted]
