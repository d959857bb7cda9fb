"""The bench's resources and templates, and the one path of every read and prompt fetch.

``Resources`` is the base of ``ResourcesAndPrompts`` (``toolbench._bench.many.fetch_many``), a base
class of ``BaseBench`` (``toolbench._bench.bench``): the public operations are written out
here, each with a blocking face and an awaitable face that hand off to the shared loop in one
line, as ``Bench.call``/``acall`` do. Prompts are ``toolbench._bench.calls.prompts``; comparing and
mapping reads and prompts, ``toolbench._bench.many.fetch_many``.

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
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from toolbench._bench.calls.attempt import attempt
from toolbench._bench.journal.journal import warn_not_durable
from toolbench._bench.journal.record import Record, make_record, new_call_id, utcnow
from toolbench._core import html as _html
from toolbench._core.checks import seconds
from toolbench._core.client import ResourceClient
from toolbench._core.contents import ReadResult
from toolbench._core.errors import Refused, TimedOut, ToolError, Unreachable
from toolbench._core.ids import Provenance, did_you_mean
from toolbench._loop import get_loop
from toolbench._transports.mcp.client import NotOffered

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.journal.store import RecordStore
    from toolbench._routing.pegboard import PegBoard

T = TypeVar("T")

RESOURCE_COLUMNS = ("name", "server", "uri", "title", "description", "mime_type", "size",
                    "annotations")
BACKSTOP_S = 2.0
"""How long after its timeout a read waits for a client that does not bound itself."""


class ListingWarning(UserWarning):
    """Some servers could not list their resources or prompts; the frame has the others."""


class Resources:
    """Resources and templates of the bench's servers, reads, and the record of every read
    and prompt fetch; mixed into ``BaseBench`` (through ``ResourcesAndPrompts``)."""

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


def _read_shown(answer: ReadResult) -> tuple[str | None, list[dict[str, Any]]]:
    """A read's record: its text, and one embedded-resource block per item (``read`` of
    such a block returns it as it is)."""
    text = answer.text
    blocks = [{"type": "resource", "resource": item} for item in answer.contents]
    return (text if text or not blocks else None), blocks
