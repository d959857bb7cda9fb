"""Reads and prompt fetches: one path each, and the record every one of them leaves.

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

``Fetches`` keeps nothing of its own: it reads the servers, the prompt index
(``toolbench._bench.catalog.listing``) and the pins' gate (``History.gated``), and appends
to the record store. It may import those packages, ``toolbench._bench.journal`` and
``_core``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from toolbench._bench.calls.attempt import attempt
from toolbench._bench.calls.calling import provenance_of
from toolbench._bench.journal.journal import warn_not_durable
from toolbench._bench.journal.record import Record, make_record, new_call_id, utcnow
from toolbench._core import html as _html
from toolbench._core.checks import seconds
from toolbench._core.contents import PromptResult, ReadResult
from toolbench._core.errors import Refused, TimedOut, ToolError

if TYPE_CHECKING:
    from toolbench._bench.catalog.listing import Listings
    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.overtime.history import History
    from toolbench._bench.servers.servers import Servers
    from toolbench._core.ids import Provenance

T = TypeVar("T")

BACKSTOP_S = 2.0
"""How long after its timeout a read waits for a client that does not bound itself."""


class Fetches:
    """``read`` and ``prompt``, and the one path (and record) of each read and fetch."""

    def __init__(self, servers: Servers, history: History, listings: Listings,
                 store: RecordStore) -> None:
        self._servers = servers
        self._history = history
        self._listings = listings
        self._store = store

    async def _fetch(self, kind: str, server: str, tool: str, name: str,
                     arguments: dict[str, Any], run: Callable[[float], Awaitable[T]],
                     shown: Callable[[T], tuple[str | None, list[dict[str, Any]]]], *,
                     batch: str | None, timeout: float | None, provenance: Provenance,
                     ) -> tuple[Record, T | None, ToolError | None]:
        """Make one read or prompt fetch and record it; a failure comes back as data."""
        call_id, started = new_call_id(), utcnow()
        limit = self._servers.limit(server, timeout)
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
            answer, error = await attempt(
                lambda: self._history.gated(kind, server, tool, limit, run),
                limit=limit, bound=limit + BACKSTOP_S, tool=None)
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

    # -- reads ------------------------------------------------------------------------------
    async def read_one(self, server: str, uri: str, *, batch: str | None,
                       timeout: float | None, provenance: Provenance,
                       ) -> tuple[Record, ReadResult | None, ToolError | None]:
        def run(limit: float) -> Awaitable[ReadResult]:
            client = self._servers.resource_client(server)
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
        offering = [name for name, _ in self._servers.candidates(None)]
        if len(offering) == 1:
            return offering[0]
        raise ValueError(f"which server does this link belong to? It is not in this bench's "
                         f"records, and {len(offering)} servers could serve it "
                         f"({offering}); pass server=")

    async def read(self, target: str | Mapping[str, Any], uri: str | None = None, /, *,
                   server: str | None = None, timeout: float | None = None,
                   provenance: Provenance | Mapping[str, Any] | None = None) -> ReadResult:
        self._servers.check_open()
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
        _, answer, error = await self.read_one(where, link_uri, batch=None, timeout=timeout,
                                               provenance=provenance_of(provenance))
        if error is not None:
            raise error
        assert answer is not None
        return answer

    # -- prompts ----------------------------------------------------------------------------
    async def prompt_one(self, name: str, server: str, prompt: str, arguments: Any, *,
                         batch: str | None, timeout: float | None, provenance: Provenance,
                         ) -> tuple[Record, PromptResult | None, ToolError | None]:
        recorded = (dict(arguments) if isinstance(arguments, Mapping)
                    else {"_invalid": arguments})

        async def run(limit: float) -> PromptResult:
            if not isinstance(arguments, Mapping):
                raise Refused(f"prompt arguments are a mapping of str to str, not "
                              f"{type(arguments).__name__}; nothing was sent")
            client = self._servers.resource_client(server)
            got: PromptResult = await client.get_prompt(server, prompt, arguments,
                                                        timeout=limit, provenance=provenance)
            got.name = name
            return got

        return await self._fetch("prompt", server, prompt, name, recorded, run, _prompt_shown,
                                 batch=batch, timeout=timeout, provenance=provenance)

    async def prompt(self, name: str, arguments: Mapping[str, str] | None = None, /, *,
                     timeout: float | None = None,
                     provenance: Provenance | Mapping[str, Any] | None = None,
                     **kwargs: str) -> PromptResult:
        self._servers.check_open()
        if arguments is not None and kwargs:
            raise TypeError("pass arguments as one mapping or as keywords, not both")
        if timeout is not None:
            seconds(timeout, "timeout")
        full, server, prompt = await self._listings.resolve_prompt(name)
        _, answer, error = await self.prompt_one(
            full, server, prompt, kwargs if arguments is None else arguments, batch=None,
            timeout=timeout, provenance=provenance_of(provenance))
        if error is not None:
            raise error
        assert answer is not None
        return answer


def _read_shown(answer: ReadResult) -> tuple[str | None, list[dict[str, Any]]]:
    """A read's record: its text, and one embedded-resource block per item (``read`` of
    such a block returns it as it is)."""
    text = answer.text
    blocks = [{"type": "resource", "resource": item} for item in answer.contents]
    return (text if text or not blocks else None), blocks


def _prompt_shown(answer: PromptResult) -> tuple[str | None, list[dict[str, Any]]]:
    return answer.text, list(answer.messages)
