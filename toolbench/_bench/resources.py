"""The bench's resources, resource templates and prompts, in the same history as its calls.

``ResourcesAndPrompts`` is a base class of ``BaseBench`` (``toolbench._bench.bench``): the public
operations are written out here, each with a blocking face and an awaitable face that hand
off to the shared loop in one line, as ``Bench.call``/``acall`` do. They live in their own
module so the bench's tool path stays as it is.

**One history.** A read and a prompt fetch leave a record like a call, with ``kind``
``resource`` or ``prompt`` (a call's is ``tool``): for a read, ``tool`` and ``name`` hold the
URI, ``arguments`` is ``{"uri": ...}``, ``text`` the text contents and ``content`` one
embedded-resource block per item; for a prompt, ``tool`` is the server's own prompt name,
``name`` the prefixed one, ``text`` the transcript and ``content`` the messages. Errors
follow DESIGN.md's table, and a failed read raises only after its record exists.

**Idempotent, so no intent.** Reads and prompt fetches are reads: running one twice does
nothing twice. The journal's intent (written before a call is sent, so a crash leaves an
``in_doubt`` trace that ``map(resume=True)`` will not repeat) protects calls that may change
something; here only the outcome is journaled, ``in_doubt`` means only that no answer came,
and resume never skips them (``RecordStore`` indexes tool records only).

**Why separate methods, not ``compare(kind=...)``.** A tool's ``compare``/``map`` take a
tool name and argument mappings; a prompt's take a prompt name and *string* arguments; a
read's take URIs and no arguments at all. One method with a ``kind=`` switch would accept
inputs that mean nothing for the kind chosen and check them only at run time, and its
docstring and signature could not say what each kind takes. So: ``compare_prompt``,
``map_prompt``, ``compare_read``, ``map_read``, each with its own signature; their frames
are the ones ``compare`` and ``map`` return.

**Prompt names** are prefixed like tools (``beyond-welcome``): the server's tool namespace
and the pegboard's separator, so one server's names share one prefix. Prompts are listed
when asked for (``prompts()``, or a name not seen yet), not at connect: a connect costs one
listing, of tools.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from toolbench._bench.attempt import attempt
from toolbench._bench.batch import Job, as_cases, bind, compare_frame, progress_bar, run_jobs
from toolbench._bench.journal import warn_not_durable
from toolbench._bench.records import Record, frame, make_record, new_call_id, utcnow
from toolbench._core import html as _html
from toolbench._core.checks import seconds, whole
from toolbench._core.client import ResourceClient
from toolbench._core.contents import PromptResult, ReadResult
from toolbench._core.errors import Refused, TimedOut, ToolError, Unreachable
from toolbench._core.ids import Provenance, did_you_mean
from toolbench._loop import get_loop
from toolbench._transports.mcp import NotOffered

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.records import RecordStore
    from toolbench._routing.pegboard import PegBoard

T = TypeVar("T")

RESOURCE_COLUMNS = ("name", "server", "uri", "title", "description", "mime_type", "size",
                    "annotations")
PROMPT_COLUMNS = ("name", "server", "prompt", "title", "description", "arguments")
BACKSTOP_S = 2.0
"""How long after its timeout a read waits for a client that does not bound itself."""


class ListingWarning(UserWarning):
    """Some servers could not list their resources or prompts; the frame has the others."""


class ResourcesAndPrompts:
    """Resources, templates and prompts of the bench's servers; mixed into ``BaseBench``."""

    if TYPE_CHECKING:  # what BaseBench provides
        _rows: dict[str, Any]
        _store: RecordStore
        pegboard: PegBoard
        timeout: float

        def _check_open(self) -> None: ...

        def _limit(self, server: str, timeout: float | None) -> float: ...

        async def _pin_gated(self, kind: str, server: str, name: str, limit: float,
                             run: Callable[[float], Awaitable[T]]) -> T: ...  # overtime_kinds

        def _provenance(self, provenance: Provenance | Mapping[str, Any] | None
                        ) -> Provenance: ...

    # -- which servers ------------------------------------------------------------------
    def _resource_client(self, server: object) -> ResourceClient:
        """The client of ``server`` if it can offer resources and prompts (an MCP server)."""
        if not isinstance(server, str):
            raise TypeError(f"a server name is a str, not {type(server).__name__} {server!r}")
        row = self._rows.get(server)
        if row is None:
            raise Unreachable(f"no server {server!r}; connected: {sorted(self._rows)}"
                              f"{did_you_mean(server, self._rows)}")
        client = row.connection.client if row.connection is not None else None
        if not isinstance(client, ResourceClient):
            raise Refused(f"server {server!r} ({row.transport}) offers tools only: resources "
                          "and prompts are MCP's, and only an MCP server has them")
        return client

    def _candidates(self, server: str | None) -> list[tuple[str, ResourceClient]]:
        if server is not None:
            return [(server, self._resource_client(server))]
        found = []
        for name, row in list(self._rows.items()):
            client = row.connection.client if row.connection is not None else None
            if isinstance(client, ResourceClient) and row.current_status() != "closed":
                found.append((name, client))
        return found

    async def _gather(self, server: str | None,
                      ask: Callable[[ResourceClient, str], Awaitable[list[dict[str, Any]]]],
                      what: str) -> list[tuple[str, dict[str, Any]]]:
        """Every server's rows at once; one server's failure is a warning, not the frame's.

        With ``server`` given, its failure (not offering ``what`` included) is raised.
        """
        candidates = self._candidates(server)
        if server is not None:  # its failure is the caller's, raised as it is
            return [(server, row) for row in await ask(candidates[0][1], server)]
        found: dict[str, list[dict[str, Any]]] = {}
        failed: dict[str, str] = {}

        async def one(name: str, client: ResourceClient) -> None:
            try:
                found[name] = await ask(client, name)
            except Refused as exc:
                if not isinstance(exc, NotOffered):  # not offering is no failure
                    failed[name] = exc.detail
            except ToolError as exc:
                failed[name] = exc.detail

        async with anyio.create_task_group() as group:
            for name, client in candidates:
                group.start_soon(one, name, client)
        if failed:
            told = "; ".join(f"{name}: {self._rows[name].redact(_html.shorten(detail, 300))}"
                             for name, detail in sorted(failed.items()))
            warnings.warn(f"listing {what} failed on {len(failed)} server(s), left out: {told}",
                          ListingWarning, stacklevel=4)
        return [(name, row) for name, _ in candidates for row in found.get(name, [])]

    # -- tables -------------------------------------------------------------------------
    async def _resources(self, server: str | None, search: str | None, *,
                         templates: bool) -> pd.DataFrame:
        import pandas as pd

        self._check_open()
        if templates:
            rows = await self._gather(server, lambda c, s: c.list_resource_templates(s),
                                      "resource templates")
        else:
            rows = await self._gather(server, lambda c, s: c.list_resources(s), "resources")
        needle = search.lower() if isinstance(search, str) and search else None
        data = []
        for name, row in rows:
            if needle and not any(needle in str(row.get(k) or "").lower()
                                  for k in ("name", "uri", "title", "description")):
                continue
            data.append({**{c: row.get(c) for c in RESOURCE_COLUMNS}, "server": name})
        return pd.DataFrame(data, columns=list(RESOURCE_COLUMNS), dtype=object)

    def resources(self, server: str | None = None, search: str | None = None) -> pd.DataFrame:
        """One row per resource of every MCP server (or of ``server``), listed now.

        Args:
            server: only this server (default: every server that offers resources; a
                ToolBox or Toolset has none and is left out).
            search: keep rows whose name, URI, title or description contains it (any case).

        Returns:
            A frame with ``name``, ``server``, ``uri``, ``title``, ``description``,
            ``mime_type``, ``size``, ``annotations``.

        Raises:
            Refused: ``server`` offers no resources (a ToolBox, or no capability).
            Unreachable: no such server, or its listing failed (with ``server`` given).

        Warns:
            ListingWarning: some servers' listings failed (without ``server``); the frame
                has the rest.

        Example:
            >>> bench.resources(search="json")                          # doctest: +SKIP
        """
        return get_loop().run(self._resources, server, search, templates=False)

    async def aresources(self, server: str | None = None,
                         search: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`resources`: the same arguments, result and errors."""
        return await get_loop().arun(self._resources, server, search, templates=False)

    def resource_templates(self, server: str | None = None,
                           search: str | None = None) -> pd.DataFrame:
        """One row per resource template (``uri`` is the template, e.g. ``city://{name}``).

        Fill a template's variables in and ``read`` the URI: ``bench.read("beyond",
        "city://paris")``.

        Args:
            server: only this server (default: every server that offers resources).
            search: keep rows whose name, URI, title or description contains it.

        Returns:
            A frame with the columns of :meth:`resources` (``size`` is always empty).

        Raises:
            Refused: ``server`` offers no resources.
            Unreachable: no such server, or its listing failed (with ``server`` given).
        """
        return get_loop().run(self._resources, server, search, templates=True)

    async def aresource_templates(self, server: str | None = None,
                                  search: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`resource_templates`: the same arguments, result and errors."""
        return await get_loop().arun(self._resources, server, search, templates=True)

    def _prompt_name(self, server: str, prompt: str) -> str:
        namespace = self.pegboard.namespace_of(server)
        namespace = server if namespace is None else namespace
        return f"{namespace}{self.pegboard.separator}{prompt}" if namespace else prompt

    def _prompt_index(self) -> dict[str, list[tuple[str, str]]]:
        index: dict[str, list[tuple[str, str]]] | None = getattr(self, "_prompt_names", None)
        if index is None:
            index = {}
            self._prompt_names = index
        return index

    def _servers_now(self) -> frozenset[tuple[str, int]]:
        """Which connections the prompt index would have to know (a change means re-list)."""
        return frozenset((name, id(self._rows[name].connection))
                         for name, _ in self._candidates(None))

    async def _prompt_rows(self, server: str | None) -> list[tuple[str, dict[str, Any]]]:
        """Every prompt listed now, named; the index of names is brought up to date."""
        if server is None:
            self._prompt_servers = self._servers_now()
        rows = await self._gather(server, lambda c, s: c.list_prompts(s), "prompts")
        index = self._prompt_index()
        listed = {name for name, _ in rows} | ({server} if server is not None else set())
        for key in list(index):  # what these servers no longer list goes
            index[key] = [(s, p) for s, p in index[key] if s not in listed]
            if not index[key]:
                del index[key]
        for name, row in rows:
            entry = (name, str(row["prompt"]))
            index.setdefault(self._prompt_name(*entry), []).append(entry)
        return rows

    async def _prompts(self, server: str | None, search: str | None) -> pd.DataFrame:
        import pandas as pd

        self._check_open()
        rows = await self._prompt_rows(server)
        needle = search.lower() if isinstance(search, str) and search else None
        data = []
        for name, row in rows:
            full = self._prompt_name(name, str(row["prompt"]))
            if needle and not any(needle in str(v or "").lower()
                                  for v in (full, row.get("title"), row.get("description"))):
                continue
            data.append({"name": full, "server": name, "prompt": row["prompt"],
                         "title": row.get("title"), "description": row.get("description"),
                         "arguments": row.get("arguments") or []})
        return pd.DataFrame(data, columns=list(PROMPT_COLUMNS), dtype=object)

    def prompts(self, server: str | None = None, search: str | None = None) -> pd.DataFrame:
        """One row per prompt of every MCP server (or of ``server``), listed now.

        Prompts get prefixed names like tools (``beyond-welcome``); ``prompt`` is the
        server's own name, and ``arguments`` a list of ``{name, description, required}``.

        Args:
            server: only this server (default: every server that offers prompts).
            search: keep rows whose name, title or description contains it (any case).

        Returns:
            A frame with ``name``, ``server``, ``prompt``, ``title``, ``description``,
            ``arguments``.

        Raises:
            Refused: ``server`` offers no prompts.
            Unreachable: no such server, or its listing failed (with ``server`` given).

        Example:
            >>> bench.prompts()                                         # doctest: +SKIP
        """
        return get_loop().run(self._prompts, server, search)

    async def aprompts(self, server: str | None = None,
                       search: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`prompts`: the same arguments, result and errors."""
        return await get_loop().arun(self._prompts, server, search)

    # -- one fetch, one record ----------------------------------------------------------
    async def _fetch(self, kind: str, server: str, tool: str, name: str,
                     arguments: dict[str, Any], run: Callable[[float], Awaitable[T]],
                     shown: Callable[[T], tuple[str | None, list[dict[str, Any]]]], *,
                     batch: str | None, timeout: float | None, provenance: Provenance,
                     ) -> tuple[Record, T | None, ToolError | None]:
        """Make one read or prompt fetch and record it; a failure comes back as data."""
        call_id, started = new_call_id(), utcnow()
        limit = self._limit(server, timeout)
        prov = provenance.as_dict()
        tag = call_id if batch is None else batch
        answer: T | None = None
        error: ToolError | None = None
        t0 = time.perf_counter()

        def failed(exc: BaseException) -> Record:
            return make_record(call_id=call_id, batch=batch, started=started, server=server,
                               tool=tool, name=name, arguments=arguments,
                               latency_s=time.perf_counter() - t0, provenance=prov, error=exc,
                               kind=kind)

        try:  # the client bounds itself first; the bound is a backstop
            answer, error = await attempt(lambda: self._pin_gated(kind, server, tool, limit, run),
                                          limit=limit,
                                          bound=limit + BACKSTOP_S, tool=None)
        except anyio.get_cancelled_exc_class():
            self._store.append(failed(TimedOut("cancelled (interrupted) while in flight")), tag)
            raise
        except Exception as exc:  # toolbench's own bug before sending (is_unsent)
            self._store.append(failed(exc), tag)
            raise
        record = make_record(call_id=call_id, batch=batch, started=started, server=server,
                             tool=tool, name=name, arguments=arguments,
                             latency_s=time.perf_counter() - t0, provenance=prov,
                             error=error, kind=kind)
        if answer is not None:
            text, content = shown(answer)
            record = dataclasses.replace(record, text=text, content=content)
        self._store.append(record, tag)
        journal = self._store.journal
        if batch is None and journal is not None and journal.degraded:
            warn_not_durable(journal, 1, 1, f"{kind} {name}")
        return record, answer, error

    async def _read_one(self, server: str, uri: str, *, batch: str | None,
                        timeout: float | None, provenance: Provenance,
                        ) -> tuple[Record, ReadResult | None, ToolError | None]:
        def run(limit: float) -> Awaitable[ReadResult]:
            client = self._resource_client(server)
            return client.read_resource(server, uri, timeout=limit,  # type: ignore[no-any-return]
                                        provenance=provenance)

        return await self._fetch("resource", server, str(uri), str(uri), {"uri": uri}, run,
                                 _read_shown, batch=batch, timeout=timeout,
                                 provenance=provenance)

    def _link_server(self, block: Mapping[str, Any]) -> str:
        """The server a link came from: the record holding it, else the only MCP server."""
        records = self._store.snapshot()
        for same in (lambda b: b is block, lambda b: b == block):
            for record in reversed(records):
                if record.kind == "tool" and any(same(b) for b in record.content):
                    return record.server
        offering = [name for name, _ in self._candidates(None)]
        if len(offering) == 1:
            return offering[0]
        raise ValueError(f"which server does this link belong to? It is not in this bench's "
                         f"records, and {len(offering)} servers could serve it "
                         f"({offering}); pass server=")

    async def _read(self, target: str | Mapping[str, Any], uri: str | None = None, /, *,
                    server: str | None = None, timeout: float | None = None,
                    provenance: Provenance | Mapping[str, Any] | None = None) -> ReadResult:
        self._check_open()
        if timeout is not None:
            seconds(timeout, "timeout")
        if isinstance(target, Mapping):
            if uri is not None:
                raise TypeError("read(link) takes no URI: the link holds it")
            kind = target.get("type")
            if kind == "resource":  # embedded: the contents are here already
                inner = target.get("resource")
                if not isinstance(inner, Mapping) or not isinstance(inner.get("uri"), str):
                    raise ValueError("this embedded resource block has no resource.uri")
                return ReadResult(str(inner["uri"]), [dict(inner)], server, None)
            if kind != "resource_link" or not isinstance(target.get("uri"), str):
                raise ValueError(f"read() follows a resource_link or resource block, not a "
                                 f"{_html.shorten(str(kind), 40)!r} block")
            where = server if server is not None else self._link_server(target)
            link_uri = str(target["uri"])
        else:
            if uri is None:
                raise TypeError("read(server, uri): pass the server's name and the URI "
                                "(or a resource link from a Result's content)")
            if server is not None:
                raise TypeError("read(server, uri) takes no server= as well")
            where, link_uri = target, uri
        _, answer, error = await self._read_one(where, link_uri, batch=None, timeout=timeout,
                                                provenance=self._provenance(provenance))
        if error is not None:
            raise error
        assert answer is not None
        return answer

    def read(self, target: str | Mapping[str, Any], uri: str | None = None, /, *,
             server: str | None = None, timeout: float | None = None,
             provenance: Provenance | Mapping[str, Any] | None = None) -> ReadResult:
        """Read a resource: ``read(server, uri)``, or follow a link with ``read(block)``.

        The read is recorded (``kind="resource"``) and is idempotent: after a ``TimedOut``
        reading again is safe. A template's URI with its variables filled in reads too.

        Args:
            target: a server's name; or a ``resource_link`` / embedded ``resource`` block
                from a ``Result``'s ``content`` (a link is read from the server whose
                result holds it; an embedded resource is returned as it is, unread).
            uri: the resource's URI (with a server's name only).
            server: the server to read a link from, when the bench cannot tell.
            timeout: seconds before the read fails as ``TimedOut`` (default: the server's,
                else the bench's).
            provenance: fields recorded with the read.

        Returns:
            A ``ReadResult``: ``.text``, ``.data`` (JSON parsed), ``.blob()``; in a notebook,
            text escaped and capped, JSON pretty, an image inline, a blob by size and type.

        Raises:
            Refused: the server offers no resources, or refused the URI (unknown).
            Malformed: the contents exceed the server's ``max_message_bytes``.
            Unreachable: no such server, or not sent.
            TimedOut: sent, with no answer in time.

        Example:
            >>> bench.read("beyond", "beyond://cities.json").data      # doctest: +SKIP
        """
        return get_loop().run(self._read, target, uri, server=server, timeout=timeout,
                              provenance=provenance)

    async def aread(self, target: str | Mapping[str, Any], uri: str | None = None, /, *,
                    server: str | None = None, timeout: float | None = None,
                    provenance: Provenance | Mapping[str, Any] | None = None) -> ReadResult:
        """Awaitable :meth:`read`: the same arguments, result and errors."""
        return await get_loop().arun(self._read, target, uri, server=server, timeout=timeout,
                                     provenance=provenance)

    # -- prompts ------------------------------------------------------------------------
    async def _resolve_prompt(self, name: object) -> tuple[str, str, str]:
        """``(prefixed name, server, prompt)``; names not seen yet are listed once more."""
        if not isinstance(name, str):
            raise TypeError(f"a prompt name is a str, not {type(name).__name__} {name!r}")
        index = self._prompt_index()
        if name not in index or getattr(self, "_prompt_servers", None) != self._servers_now():
            await self._prompt_rows(None)  # unseen, or servers came and went since
        found = index.get(name, [])
        if not found:
            raise Unreachable(f"no connected server offers a prompt named {name!r}"
                              f"{did_you_mean(name, index)}")
        if len(found) > 1:
            raise ValueError(f"prompt name {name!r} is offered by {sorted(s for s, _ in found)}"
                             "; give the servers namespaces so their names differ")
        server, prompt = found[0]
        return name, server, prompt

    async def _prompt_one(self, name: str, server: str, prompt: str, arguments: Any, *,
                          batch: str | None, timeout: float | None, provenance: Provenance,
                          ) -> tuple[Record, PromptResult | None, ToolError | None]:
        recorded = (dict(arguments) if isinstance(arguments, Mapping)
                    else {"_invalid": arguments})

        async def run(limit: float) -> PromptResult:
            if not isinstance(arguments, Mapping):
                raise Refused(f"prompt arguments are a mapping of str to str, not "
                              f"{type(arguments).__name__}; nothing was sent")
            client = self._resource_client(server)
            got: PromptResult = await client.get_prompt(server, prompt, arguments,
                                                        timeout=limit, provenance=provenance)
            got.name = name
            return got

        return await self._fetch("prompt", server, prompt, name, recorded, run, _prompt_shown,
                                 batch=batch, timeout=timeout, provenance=provenance)

    async def _prompt(self, name: str, arguments: Mapping[str, str] | None = None, /, *,
                      timeout: float | None = None,
                      provenance: Provenance | Mapping[str, Any] | None = None,
                      **kwargs: str) -> PromptResult:
        self._check_open()
        if arguments is not None and kwargs:
            raise TypeError("pass arguments as one mapping or as keywords, not both")
        if timeout is not None:
            seconds(timeout, "timeout")
        full, server, prompt = await self._resolve_prompt(name)
        _, answer, error = await self._prompt_one(
            full, server, prompt, kwargs if arguments is None else arguments, batch=None,
            timeout=timeout, provenance=self._provenance(provenance))
        if error is not None:
            raise error
        assert answer is not None
        return answer

    def prompt(self, name: str, arguments: Mapping[str, str] | None = None, /, *,
               timeout: float | None = None,
               provenance: Provenance | Mapping[str, Any] | None = None,
               **kwargs: str) -> PromptResult:
        """Fetch a prompt's messages by its prefixed name; recorded (``kind="prompt"``).

        Args:
            name: the prompt's name from ``prompts()`` (``beyond-plan_trip``).
            arguments: the prompt's arguments as one mapping of strings; or as keywords.
            timeout: seconds before the fetch fails as ``TimedOut`` (default: the server's,
                else the bench's).
            provenance: fields recorded with the fetch.
            **kwargs: the prompt's arguments, as keywords (strings: MCP's rule).

        Returns:
            A ``PromptResult``: ``.messages`` (role and content block each) and ``.text``;
            in a notebook, a transcript with every string escaped.

        Raises:
            Unreachable: no server offers a prompt of that name (with close names).
            Refused: a non-string argument (nothing sent), or the server refused.
            ValueError: two servers' prompts share the name (give them namespaces).
            TimedOut: sent, with no answer in time (fetching again is safe).

        Example:
            >>> bench.prompt("beyond-plan_trip", from_city="Paris",    # doctest: +SKIP
            ...              to_city="Lima")
        """
        return get_loop().run(self._prompt, name, arguments, timeout=timeout,
                              provenance=provenance, **kwargs)

    async def aprompt(self, name: str, arguments: Mapping[str, str] | None = None, /, *,
                      timeout: float | None = None,
                      provenance: Provenance | Mapping[str, Any] | None = None,
                      **kwargs: str) -> PromptResult:
        """Awaitable :meth:`prompt`: the same arguments, result and errors."""
        return await get_loop().arun(self._prompt, name, arguments, timeout=timeout,
                                     provenance=provenance, **kwargs)

    # -- many at once -------------------------------------------------------------------
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


def _read_shown(answer: ReadResult) -> tuple[str | None, list[dict[str, Any]]]:
    """A read's record: its text, and one embedded-resource block per item (``read`` of
    such a block returns it as it is)."""
    text = answer.text
    blocks = [{"type": "resource", "resource": item} for item in answer.contents]
    return (text if text or not blocks else None), blocks


def _prompt_shown(answer: PromptResult) -> tuple[str | None, list[dict[str, Any]]]:
    return answer.text, list(answer.messages)


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
