"""Comparing and mapping reads and prompt fetches: ``compare_prompt``, ``map_prompt``,
``compare_read``, ``map_read``.

``ResourcesAndPrompts`` is a base class of ``BaseBench``: resources (``Resources``), prompts
(``Prompts``) and these batches, whose frames are the ones ``compare`` and ``map`` return.

**Why separate methods, not ``compare(kind=...)``.** A tool's ``compare``/``map`` take a
tool name and argument mappings; a prompt's take a prompt name and *string* arguments; a
read's take URIs and no arguments at all. One method with a ``kind=`` switch would accept
inputs that mean nothing for the kind chosen and check them only at run time, and its
docstring and signature could not say what each kind takes. So: ``compare_prompt``,
``map_prompt``, ``compare_read``, ``map_read``, each with its own signature; their frames
are the ones ``compare`` and ``map`` return.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from toolbench._bench.calls.prompts import Prompts
from toolbench._bench.journal.journal import warn_not_durable
from toolbench._bench.journal.record import Record, frame
from toolbench._bench.many.batch import Job, as_cases, bind, compare_frame, progress_bar, run_jobs
from toolbench._core import html as _html
from toolbench._core.checks import seconds, whole
from toolbench._core.errors import Unreachable
from toolbench._core.ids import Provenance, did_you_mean
from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")


class ResourcesAndPrompts(Prompts):
    """Resources, templates and prompts of the bench's servers, one at a time or many at
    once; mixed into ``BaseBench``."""

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

    async def _compare_prompt(self, name: str,
                              cases: Mapping[str, str] | Sequence[Mapping[str, str]] | None
                              = None, /, servers: Iterable[str] | None = None, *,
                              concurrency: int = 4, timeout: float | None = None,
                              progress: bool | None = None,
                              provenance: Provenance | Mapping[str, Any] | None = None,
                              **kwargs: str) -> pd.DataFrame:
        self._check_open()
        whole(concurrency, "concurrency")
        if timeout is not None:
            seconds(timeout, "timeout")
        await self._prompt_rows(None)  # fresh: every server that offers it now
        index = self._prompt_index()
        own = index[name][0][1] if len(index.get(name, [])) == 1 else name
        targets = [(full, server, prompt) for full, entries in index.items()
                   for server, prompt in entries if prompt == own]
        targets.sort(key=lambda t: list(self._rows).index(t[1]) if t[1] in self._rows else 0)
        targets = _only(targets, servers, self._rows, lambda t: t[1])
        if not targets:
            raise Unreachable(f"no connected server offers a prompt named {own!r}"
                              f"{did_you_mean(own, {p for e in index.values() for _, p in e})}")
        arg_sets = as_cases(cases, kwargs)
        batch, base = uuid.uuid4().hex, self._provenance(provenance)
        calls = [(case, target, args) for case, args in enumerate(arg_sets)
                 for target in targets]
        jobs = [(target[1], bind(self._prompt_one, *target, args, batch=batch, timeout=timeout,
                                 provenance=base.with_fields(case=case)))
                for case, target, args in calls]
        records = await self._run_batch(jobs, f"compare prompt {own}", progress, overall=None,
                                        per_server=concurrency, batch=batch)
        return compare_frame([(case, r) for (case, _, _), r in zip(calls, records,
                                                                    strict=True)])

    def compare_prompt(self, name: str,
                       cases: Mapping[str, str] | Sequence[Mapping[str, str]] | None = None,
                       /, servers: Iterable[str] | None = None, *, concurrency: int = 4,
                       timeout: float | None = None, progress: bool | None = None,
                       provenance: Provenance | Mapping[str, Any] | None = None,
                       **kwargs: str) -> pd.DataFrame:
        """Fetch the same-named prompt from every server that offers it; failures are rows.

        Args:
            name: a prompt's own name (``plan_trip``) or any prefixed name for it.
            cases: one argument mapping (strings), or a list of them; or pass keywords.
            servers: only these servers (default: every server offering the prompt).
            concurrency: fetches in flight per server.
            timeout: seconds per fetch (default: the server's, else the bench's).
            progress: a progress bar (``None``: only for long work).
            provenance: fields recorded with every fetch.
            **kwargs: one case's arguments, as keywords.

        Returns:
            A compare frame, as ``compare`` returns (``text`` is the transcript); each row
            joins ``records`` by ``call_id``.

        Raises:
            Unreachable: no connected server offers the prompt.
            ValueError: ``servers`` names an unknown server.
        """
        return get_loop().run(self._compare_prompt, name, cases, servers,
                              concurrency=concurrency, timeout=timeout, progress=progress,
                              provenance=provenance, **kwargs)

    async def acompare_prompt(self, name: str,
                              cases: Mapping[str, str] | Sequence[Mapping[str, str]] | None
                              = None, /, servers: Iterable[str] | None = None, *,
                              concurrency: int = 4, timeout: float | None = None,
                              progress: bool | None = None,
                              provenance: Provenance | Mapping[str, Any] | None = None,
                              **kwargs: str) -> pd.DataFrame:
        """Awaitable :meth:`compare_prompt`: the same arguments, result and errors."""
        return await get_loop().arun(self._compare_prompt, name, cases, servers,
                                     concurrency=concurrency, timeout=timeout,
                                     progress=progress, provenance=provenance, **kwargs)

    async def _map_prompt(self, name: str, cases: Iterable[Mapping[str, str]], /, *,
                          concurrency: int = 8, progress: bool = True,
                          timeout: float | None = None,
                          provenance: Provenance | Mapping[str, Any] | None = None,
                          ) -> pd.DataFrame:
        self._check_open()
        whole(concurrency, "concurrency")
        if timeout is not None:
            seconds(timeout, "timeout")
        full, server, prompt = await self._resolve_prompt(name)
        arg_sets = as_cases(cases, {})
        batch, base = uuid.uuid4().hex, self._provenance(provenance)
        jobs = [(server, bind(self._prompt_one, full, server, prompt, args, batch=batch,
                              timeout=timeout, provenance=base.with_fields(case=case)))
                for case, args in enumerate(arg_sets)]
        return frame(await self._run_batch(jobs, f"map prompt {full}", progress,
                                           overall=concurrency, per_server=None, batch=batch))

    def map_prompt(self, name: str, cases: Iterable[Mapping[str, str]], /, *,
                   concurrency: int = 8, progress: bool = True, timeout: float | None = None,
                   provenance: Provenance | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Fetch one prompt once per argument set, ``concurrency`` at a time; failures are rows.

        There is no ``resume``: a prompt fetch is idempotent, so running it again is safe.

        Args:
            name: the prompt's prefixed name.
            cases: the argument sets, one mapping of strings each.
            concurrency: fetches in flight at once.
            progress: a progress bar (on by default).
            timeout: seconds per fetch (default: the server's, else the bench's).
            provenance: fields recorded with every fetch.

        Returns:
            A records frame (``kind="prompt"``), one row per argument set, in order.

        Raises:
            Unreachable: no such prompt.
        """
        return get_loop().run(self._map_prompt, name, cases, concurrency=concurrency,
                              progress=progress, timeout=timeout, provenance=provenance)

    async def amap_prompt(self, name: str, cases: Iterable[Mapping[str, str]], /, *,
                          concurrency: int = 8, progress: bool = True,
                          timeout: float | None = None,
                          provenance: Provenance | Mapping[str, Any] | None = None,
                          ) -> pd.DataFrame:
        """Awaitable :meth:`map_prompt`: the same arguments, result and errors."""
        return await get_loop().arun(self._map_prompt, name, cases, concurrency=concurrency,
                                     progress=progress, timeout=timeout,
                                     provenance=provenance)

    async def _compare_read(self, uris: str | Sequence[str], /,
                            servers: Iterable[str] | None = None, *, concurrency: int = 4,
                            timeout: float | None = None, progress: bool | None = None,
                            provenance: Provenance | Mapping[str, Any] | None = None,
                            ) -> pd.DataFrame:
        self._check_open()
        whole(concurrency, "concurrency")
        if timeout is not None:
            seconds(timeout, "timeout")
        targets = _only([name for name, _ in self._candidates(None)], servers, self._rows,
                        lambda name: name)
        if not targets:
            raise Unreachable("no connected server offers resources")
        listed = _uris(uris)
        batch, base = uuid.uuid4().hex, self._provenance(provenance)
        calls = [(case, server, uri) for case, uri in enumerate(listed) for server in targets]
        jobs = [(server, bind(self._read_one, server, uri, batch=batch, timeout=timeout,
                              provenance=base.with_fields(case=case)))
                for case, server, uri in calls]
        records = await self._run_batch(jobs, "compare read", progress, overall=None,
                                        per_server=concurrency, batch=batch)
        return compare_frame([(case, r) for (case, _, _), r in zip(calls, records,
                                                                    strict=True)])

    def compare_read(self, uris: str | Sequence[str], /, servers: Iterable[str] | None = None,
                     *, concurrency: int = 4, timeout: float | None = None,
                     progress: bool | None = None,
                     provenance: Provenance | Mapping[str, Any] | None = None,
                     ) -> pd.DataFrame:
        """Read the same URI(s) on every MCP server (or ``servers``); failures are rows.

        Two copies of a server, or two versions, should answer a URI alike; a server that
        does not have it gives a ``Refused`` row.

        Args:
            uris: one URI, or a list of them (each one case, numbered from 0).
            servers: only these servers (default: every connected MCP server).
            concurrency: reads in flight per server.
            timeout: seconds per read (default: the server's, else the bench's).
            progress: a progress bar (``None``: only for long work).
            provenance: fields recorded with every read.

        Returns:
            A compare frame (``text`` holds each read's text), rows joining ``records``.

        Raises:
            Unreachable: no connected server offers resources.
            ValueError: ``servers`` names an unknown server, or a URI is not a str.
        """
        return get_loop().run(self._compare_read, uris, servers, concurrency=concurrency,
                              timeout=timeout, progress=progress, provenance=provenance)

    async def acompare_read(self, uris: str | Sequence[str], /,
                            servers: Iterable[str] | None = None, *, concurrency: int = 4,
                            timeout: float | None = None, progress: bool | None = None,
                            provenance: Provenance | Mapping[str, Any] | None = None,
                            ) -> pd.DataFrame:
        """Awaitable :meth:`compare_read`: the same arguments, result and errors."""
        return await get_loop().arun(self._compare_read, uris, servers,
                                     concurrency=concurrency, timeout=timeout,
                                     progress=progress, provenance=provenance)

    async def _map_read(self, server: str, uris: Sequence[str], /, *, concurrency: int = 8,
                        progress: bool = True, timeout: float | None = None,
                        provenance: Provenance | Mapping[str, Any] | None = None,
                        ) -> pd.DataFrame:
        self._check_open()
        whole(concurrency, "concurrency")
        if timeout is not None:
            seconds(timeout, "timeout")
        self._resource_client(server)
        listed = _uris(uris)
        batch, base = uuid.uuid4().hex, self._provenance(provenance)
        jobs = [(server, bind(self._read_one, server, uri, batch=batch, timeout=timeout,
                              provenance=base.with_fields(case=case)))
                for case, uri in enumerate(listed)]
        return frame(await self._run_batch(jobs, f"map read {server}", progress,
                                           overall=concurrency, per_server=None, batch=batch))

    def map_read(self, server: str, uris: Sequence[str], /, *, concurrency: int = 8,
                 progress: bool = True, timeout: float | None = None,
                 provenance: Provenance | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Read many URIs of one server, ``concurrency`` at a time; failures are rows.

        There is no ``resume``: a read is idempotent, so reading again is safe.

        Args:
            server: the server's name.
            uris: the URIs (a template's, filled in, work too).
            concurrency: reads in flight at once.
            progress: a progress bar (on by default).
            timeout: seconds per read (default: the server's, else the bench's).
            provenance: fields recorded with every read.

        Returns:
            A records frame (``kind="resource"``), one row per URI, in order.

        Raises:
            Unreachable: no such server.
            Refused: the server offers no resources.
        """
        return get_loop().run(self._map_read, server, uris, concurrency=concurrency,
                              progress=progress, timeout=timeout, provenance=provenance)

    async def amap_read(self, server: str, uris: Sequence[str], /, *, concurrency: int = 8,
                        progress: bool = True, timeout: float | None = None,
                        provenance: Provenance | Mapping[str, Any] | None = None,
                        ) -> pd.DataFrame:
        """Awaitable :meth:`map_read`: the same arguments, result and errors."""
        return await get_loop().arun(self._map_read, server, uris, concurrency=concurrency,
                                     progress=progress, timeout=timeout,
                                     provenance=provenance)



def _uris(uris: Any) -> list[str]:
    listed = [uris] if isinstance(uris, str) else list(uris)
    bad = [u for u in listed if not isinstance(u, str) or not u]
    if bad:
        raise ValueError(f"a URI is a non-empty str, not {_html.shorten(repr(bad[0]), 80)}")
    return listed


def _only(items: list[T], servers: Iterable[str] | None, rows: Mapping[str, Any],
          server_of: Callable[[T], str]) -> list[T]:
    if servers is None:
        return items
    wanted = [servers] if isinstance(servers, str) else list(servers)
    unknown = [s for s in wanted if s not in rows]
    if unknown:
        raise ValueError(f"unknown servers {unknown}; connected: {sorted(rows)}")
    return [item for item in items if server_of(item) in wanted]
