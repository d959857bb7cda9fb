"""The bench layer's Bench: connections, catalog, calls, records, over router and pegboard.

Each operation's logic is one private coroutine (``_call``) that runs on the shared loop; its
public faces are written out beside it (``acall`` awaits it from any loop, ``call`` blocks a
cell on it), each with its own signature and docstring and one line that hands off, so the
two faces can never disagree. Every call, whatever its outcome, leaves one record; the
single-call API raises only after that record exists. What a notebook shows (the HTML repr,
the explorer) and the bundled demo servers are added above this layer, by the public
``toolbench.Bench`` in ``toolbench._notebook.bench``.

``BaseBench`` is put together from one module per concern: ``connecting`` (servers in and
out), ``calling`` (one call), ``many_calls`` (``compare``, ``map``), ``tables`` (``servers``,
``catalog``, ``logs``, ``records``), ``resources``, ``prompts`` and ``fetch_many``,
``client_rest``, ``follow``, ``overtime`` and ``replay``; this module holds its state, its
roots and closing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any, Self

import anyio

from toolbench._bench.catalog.follow import FollowServers
from toolbench._bench.catalog.handles import ToolHandles
from toolbench._bench.journal.journal import Journal, warn_unwritten
from toolbench._bench.journal.store import RecordStore
from toolbench._bench.many.fetch_many import ResourcesAndPrompts
from toolbench._bench.many.many_calls import ManyCalls
from toolbench._bench.overtime.overtime import OverTime
from toolbench._bench.replay.replay import Replays
from toolbench._bench.servers.client_rest import RestOfClient
from toolbench._bench.servers.connecting import CLOSE_BOUND_S, Connecting, _Row
from toolbench._bench.tables import Tables
from toolbench._core.checks import seconds
from toolbench._core.html import counted
from toolbench._core.ids import Egress
from toolbench._core.schema import preload as _preload
from toolbench._loop import get_loop
from toolbench._routing.connections import Connection
from toolbench._routing.pegboard import PegBoard
from toolbench._routing.router import ToolRouter
from toolbench._transports.notifications import LogLevel, Notifications
from toolbench._transports.server_requests import Handler, ServerRequests


class BaseBench(Connecting, ManyCalls, Tables, ResourcesAndPrompts, RestOfClient,
                FollowServers, OverTime, Replays):
    """Connect many servers, browse their tools, call, compare and map them, keep records.

    A bench owns its connections (stdio children end when it closes) and one record of every
    call made through it. Users hold ``toolbench.Bench``, this class plus what a notebook
    shows; this one is what the bench layer (and a Dask worker) needs.
    """

    def __init__(self, journal: str | os.PathLike[str] | None = None, separator: str = "-",
                 egress: Egress | Iterable[str] | None = None, timeout: float = 60.0,
                 connect_timeout: float = 30.0, *, sampling: Handler = None,
                 elicitation: Handler = None, roots: Iterable[Any] | None = None,
                 log_level: LogLevel | None = "info",
                 pins: str | os.PathLike[str] | None = None) -> None:
        """Make an empty bench; connect servers with ``connect``, ``add`` or ``load_config``.

        Args:
            journal (str | PathLike | None): a SQLite file that keeps every call's record
                durably, written before the call returns, so a dead kernel loses nothing.
                An existing file's records are loaded back (``map(resume=True)`` uses
                them). ``None`` keeps records in memory only. Example:
                ``Bench(journal="calls.sqlite")``.
            separator (str): what joins a server's namespace and a tool's own name in the
                pegboard name (``geo-distance``). It must use the MCP tool-name alphabet
                ``[A-Za-z0-9_.-]``, since the name is sent onward as a tool name; ``"::"``
                is refused. Example: ``Bench(separator="__")`` names it ``geo__distance``.
            egress (Egress | Iterable[str] | None): the only network hosts a call or a
                connect may reach (exact, lowercase, no wildcards); anything else is
                refused as ``Unreachable`` before a byte is sent. Local servers (stdio,
                in-process) are not judged; ``None`` judges nothing. Example:
                ``Bench(egress=["api.example.com"])``.
            timeout (float): seconds each call may take before it fails as ``TimedOut``
                (a positive, finite number); ``call(..., timeout=)`` and ``connect(...,
                timeout=)`` override it per call or per server. Example:
                ``Bench(timeout=10)``.
            connect_timeout (float): seconds each server may take to start and list its
                tools before its connect fails as ``Unreachable`` (its row stays, marked
                ``failed``). Example: ``Bench(connect_timeout=60)`` for a slow ``npx``.
            sampling (callable | "ask" | None): answers a server's request to sample an
                LLM: a function (sync or async) of the SDK's ``CreateMessageRequestParams``
                returning a str (the reply's text) or a ``CreateMessageResult``; or
                ``"ask"``, a notebook widget where a person writes the reply. ``None``
                (default): sampling is not advertised, so servers do not ask.
            elicitation (callable | "ask" | None): answers a server's request for input: a
                function of ``ElicitRequestParams`` returning ``{"action": "accept" |
                "decline" | "cancel", "content": {...}}`` or an ``ElicitResult``; or
                ``"ask"``, a form built from the requested schema (a URL request shows the
                link, never opens it). Answers are checked against the schema. ``"ask"``
                works while a plain ``bench.call`` blocks the cell. Where no person can
                answer (no notebook kernel, or no ipywidgets), ``Bench(...)`` warns once
                (``UserWarning``) and a server that asks gets an error reply.
            roots (paths or file:// URIs | None): folders advertised to servers; set
                ``bench.roots`` later to change them (connected servers are told).
                ``None`` (default) advertises no roots capability. Example:
                ``Bench(roots=["~/data"])``.

            A handler that raises, times out or returns garbage gives the server an error
            reply, and the call's error says so. Example:
            ``Bench(elicitation="ask", sampling=lambda request: "42")``.
            log_level (str | None): the least severe log message servers are asked to send
                (``"debug"`` ... ``"emergency"``); they land in ``bench.logs``. ``None``
                asks for none. Example: ``Bench(log_level="debug")``.
            pins (str | PathLike | None): a JSON file of trusted tool fingerprints. A tool
                seen for the first time is pinned (trust on first use); a pinned tool that
                changes (on connect, re-list or reconnect) gives a ``PinWarning`` with the
                diff, shows ``changed`` in ``catalog()``'s ``pin`` column, and its calls are
                ``Refused`` until ``bench.approve(name)``. Example:
                ``Bench(pins="pins.json")``.

        Example:
            >>> bench = tb.Bench(journal="calls.sqlite", timeout=10)   # doctest: +SKIP
            >>> bench.connect("time", "mcp-server-time --local-timezone UTC")  # doctest: +SKIP
        """
        self.timeout = seconds(timeout, "timeout")
        self.connect_timeout = seconds(connect_timeout, "connect_timeout")
        if egress is not None and not isinstance(egress, Egress):
            egress = Egress(egress)
        self.egress: Egress | None = egress
        self.router = ToolRouter(egress)
        self.pegboard = PegBoard(self.router, separator)
        self._init_over_time(journal, pins)  # a bad pins file fails before the journal opens
        self._rows: dict[str, _Row] = {}
        self._store = RecordStore(Journal(journal) if journal is not None else None)
        self._closed = False
        self._requests = ServerRequests(sampling, elicitation, roots)
        self._notifications = Notifications(log_level)
        self.tools = ToolHandles(self)
        get_loop().track(self)
        _preload.start()  # jsonschema's slow import, done before the first call needs it

    # -- requests from servers --------------------------------------------------------------
    @property
    def roots(self) -> list[str]:
        """The ``file://`` URIs advertised to servers as roots (``[]`` when none).

        Assign paths or ``file://`` URIs to change them; connected servers get
        ``notifications/roots/list_changed`` (bounded by each server's call timeout). A bench
        made with ``roots=None`` advertises no roots, so new roots reach only servers
        connected later.
        """
        return [str(r.uri) for r in self._requests.roots or ()]

    @roots.setter
    def roots(self, values: Iterable[Any] | None) -> None:
        self._requests.set_roots(values)
        loop = get_loop()
        if loop.in_loop_thread():
            loop.submit(self._notify_roots)
        else:
            loop.run(self._notify_roots)

    async def _notify_roots(self) -> int:
        """Tell the servers that use the bench's roots (not those with their own)."""
        rows = [row for row in self._rows.values() if row.connection is not None
                and not self._requests.has_own_roots(row.name)]
        told = [0]

        async def one(connection: Connection) -> None:
            if await connection.notify_roots_changed():
                told[0] += 1

        async with anyio.create_task_group() as group:
            for row in rows:
                assert row.connection is not None
                group.start_soon(one, row.connection)
        return told[0]

    async def _close(self) -> None:
        """Connections close concurrently, so one slow server does not hold up the rest."""
        if self._closed:
            return
        self._closed = True
        await self._kinds_settled(CLOSE_BOUND_S)  # listings in flight are stored first
        async with anyio.create_task_group() as tg:
            for row in self._rows.values():
                if row.connection is not None:
                    tg.start_soon(row.connection.close)
        for row in self._rows.values():
            row.status = "closed"
        if self._store.journal is not None:  # committed on the journal's own thread
            warn_unwritten(self._store.journal, await self._store.aclose())
        await asyncio.to_thread(self._close_over_time)  # snapshots and pins still queued
        get_loop().untrack(self)

    def close(self) -> None:
        """Close every connection (stdio children end) and the journal; safe to repeat.

        A ``with`` block does this on exit. Records stay readable afterwards.

        Warns:
            JournalWarning: some records could not be written to the journal.
        """
        get_loop().run(self._close)

    async def aclose(self) -> None:
        """Awaitable :meth:`close`; ``async with`` does this on exit."""
        await get_loop().arun(self._close)

    @property
    def closed(self) -> bool:
        """True once ``close()`` has begun: nothing can be connected or called any more."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Bench is closed; make a new one")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- display ----------------------------------------------------------------------
    def __repr__(self) -> str:
        try:
            state = "closed" if self._closed else "open"
            return (f"<Bench {state}: {counted(len(self._rows), 'server')}, "
                    f"{counted(self.pegboard.tool_count(), 'tool')}, "
                    f"{counted(len(self._store), 'record')}>")
        except Exception:
            return "<Bench>"
