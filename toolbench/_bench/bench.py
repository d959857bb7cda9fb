"""The bench layer's Bench: a few collaborators, each owning its state, behind faces.

``BaseBench`` builds the collaborators, in the order they may call each other, and wires
them with two hooks instead of direct calls; it is the only class of ``Bench`` that keeps
anything on ``self``. Every other base is a *face*: a stateless class that keeps each public
method's signature and docstring beside its concept and hands off to one collaborator.

======================  ===================================  ==================================
collaborator            owns                                 may call
======================  ===================================  ==================================
``store``               records, journal, resume index       (journal only)
``connections``         rows, timeouts, egress, requests,    router, pegboard, transports
(``Servers``)           notifications, closed
``guard`` (PinGuard)    pins file, changes, blocked tools    pins, diff
``history``             tool and kind listings, snapshots    connections, store, guard
``listings``            the prompt-name index                connections
``follower``            kept listings, re-list counts        connections, history, listings
``completions``,        nothing                              connections, listings, history,
``calls``, ``fetches``                                       guard, store, router
``batches``,            nothing                              calls, fetches, store (a cluster
``fetch_batches``                                            through ``cluster.Driver``)
``replays``             nothing                              batches, store
``runs``                nothing                              connections, pegboard, calls,
                                                             store, views.attach (a result's
                                                             MCP Apps view)
``evals``               nothing                              connections, runs (a cluster
                                                             through ``eval_cluster``)
======================  ===================================  ==================================

Hooks: ``pegboard.on_listing(history.on_listing)`` (each tool listing is fingerprinted,
stored and checked against the pins), ``connections.on_connected(follower.adopt)`` (a
connected server is followed) and ``connections.on_added(guard.warned)`` (an added ToolBox's
PinWarning, built off the loop, is issued before ``add`` returns); and
``history.hash_views_with(views)`` hands History the apps' view fetcher (typed by a Protocol,
since the apps room sits above overtime), so a tool's fingerprint covers its view's HTML.
Closing runs in reverse order.

Each operation's logic is one coroutine of its collaborator that runs on the shared loop;
its faces are written out (``acall`` awaits it from any loop, ``call`` blocks a cell on it),
each with its own signature and docstring and one line that hands off, so the two faces can
never disagree. Every call, whatever its outcome, leaves one record; the single-call API
raises only after that record exists. What a notebook shows (the HTML repr, the explorer)
and the bundled demo servers are added above this layer, by the public ``toolbench.Bench``
in ``toolbench._notebook.bench``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any, Self

from toolbench._bench.apps.faces import AppFaces
from toolbench._bench.apps.host import BenchHost
from toolbench._bench.apps.meta import ADVERTISED
from toolbench._bench.apps.views import Apps
from toolbench._bench.calls.calling import Calls
from toolbench._bench.calls.faces import CallFaces
from toolbench._bench.calls.fetches import Fetches
from toolbench._bench.calls.warm import Warmer
from toolbench._bench.catalog.completions import Completions
from toolbench._bench.catalog.faces import CatalogFaces
from toolbench._bench.catalog.follow import Follower
from toolbench._bench.catalog.handles import ToolHandles
from toolbench._bench.catalog.listing import Listings
from toolbench._bench.clients.faces import ClientFaces
from toolbench._bench.doctor.faces import DoctorFaces
from toolbench._bench.journal.journal import Journal, warn_unwritten
from toolbench._bench.journal.store import RecordStore
from toolbench._bench.many.faces import ManyFaces
from toolbench._bench.many.fetch_many import FetchBatches
from toolbench._bench.many.many_calls import Batches
from toolbench._bench.models.eval_faces import EvalFaces
from toolbench._bench.models.evaluate import Evals
from toolbench._bench.models.run_faces import RunFaces
from toolbench._bench.models.runs import Runs
from toolbench._bench.models.spec_faces import SpecFaces
from toolbench._bench.overtime.faces import HistoryFaces
from toolbench._bench.overtime.guard import PinGuard
from toolbench._bench.overtime.history import History
from toolbench._bench.replay.faces import ReplayFaces
from toolbench._bench.replay.replay import Replays
from toolbench._bench.servers.faces import ServerFaces
from toolbench._bench.servers.servers import CLOSE_BOUND_S, Servers
from toolbench._bench.tables import Tables
from toolbench._core.checks import seconds
from toolbench._core.html import counted
from toolbench._core.ids import Egress
from toolbench._core.schema import preload as _preload
from toolbench._loop import get_loop
from toolbench._routing.pegboard import PegBoard
from toolbench._routing.router import ToolRouter
from toolbench._transports.notifications import LogLevel, Notifications
from toolbench._transports.server_requests import Handler, ServerRequests


class BaseBench(ServerFaces, ClientFaces, DoctorFaces, CatalogFaces, CallFaces, ManyFaces,
                HistoryFaces, ReplayFaces, AppFaces, RunFaces, SpecFaces, EvalFaces, Tables):
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
                 pins: str | os.PathLike[str] | None = None, apps: bool = True,
                 trace_payloads: bool = False) -> None:
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
                ``tb.models.sampler(model)`` answers with a model function, as
                ``bench.run`` takes it, and tells servers it takes tools in a request.
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
            apps (bool): MCP Apps (default on): every server is told the bench renders
                ``text/html;profile=mcp-app`` views, and a call to a tool with a view gets a
                live ``result.app``. ``False`` advertises nothing and renders nothing.
                Example: ``Bench(apps=False)``.
            trace_payloads (bool): with OpenTelemetry tracing on (a tracer provider set),
                each call's span also carries its arguments and result (redacted, capped);
                off by default, so no payload leaves in a trace. Example:
                ``Bench(trace_payloads=True)``.

        Example:
            >>> bench = tb.Bench(journal="calls.sqlite", timeout=10)   # doctest: +SKIP
            >>> bench.connect("time", "mcp-server-time --local-timezone UTC")  # doctest: +SKIP
        """
        if egress is not None and not isinstance(egress, Egress):
            egress = Egress(egress)
        self.router = ToolRouter(egress)
        self.pegboard = PegBoard(self.router, separator)
        self.guard = PinGuard(pins)  # a bad pins file fails before the journal opens
        if not isinstance(apps, bool):
            raise TypeError(f"apps is True or False, not {apps!r}")
        requests = ServerRequests(sampling, elicitation, roots,
                                  extensions=ADVERTISED if apps else None)
        self.connections = Servers(
            self.router, self.pegboard, timeout=seconds(timeout, "timeout"),
            connect_timeout=seconds(connect_timeout, "connect_timeout"), egress=egress,
            requests=requests, notifications=Notifications(log_level))
        self.store = RecordStore(Journal(journal) if journal is not None else None)
        self.history = History(self.connections, self.store, self.guard, self.pegboard, journal)
        self.listings = Listings(self.connections, self.pegboard)
        self.follower = Follower(self.connections, self.pegboard, self.history, self.guard,
                                 self.listings, stored=journal is not None)
        self.completions = Completions(self.connections, self.listings)
        if not isinstance(trace_payloads, bool):
            raise TypeError(f"trace_payloads is True or False, not {trace_payloads!r}")
        self.calls = Calls(self.connections, self.guard, self.store, self.router, self.pegboard,
                           trace_payloads=trace_payloads)
        self.fetches = Fetches(self.connections, self.history, self.listings, self.store)
        self.batches = Batches(self.connections, self.calls, self.store, type(self))
        self.fetch_batches = FetchBatches(self.connections, self.fetches, self.listings,
                                          self.store)
        self.replays = Replays(self.connections, self.store, self.batches)
        self.tools = ToolHandles(self, self.pegboard)
        self.views = Apps(BenchHost(self.connections, self.pegboard, self.calls, self.fetches,
                                    self.store, requests), enabled=apps)
        self.pegboard.on_listing(self.views.on_listing)  # before history's: a fresh cache
        self.history.hash_views_with(self.views)  # fingerprints cover the views' HTML
        self.calls.on_result(self.views.attach)
        self.runs = Runs(self.connections, self.pegboard, self.calls, self.store,
                         self.views.attach)  # after batches; a result gets its view
        self.evals = Evals(self.connections, self.runs)  # an eval's steps>1 rows are runs
        self.pegboard.on_listing(self.history.on_listing)
        self.connections.on_connected(self.follower.adopt)
        self.connections.on_connected(Warmer(self.pegboard))  # the checker, off the loop
        self.connections.on_added(self.guard.warned)
        get_loop().track(self)
        _preload.start()  # jsonschema's slow import, done before the first call needs it

    async def _close(self) -> None:
        """Closing runs against the build order: listings in flight are kept, connections
        close (concurrently), then the journal, then snapshots and pins."""
        if not self.connections.mark_closed():
            return
        await self.history.settled(CLOSE_BOUND_S)  # listings in flight are stored first
        await self.views.teardown_all()  # open views are told first (each waits <= 2 s)
        await self.connections.close_connections()
        if self.store.journal is not None:  # committed on the journal's own thread
            warn_unwritten(self.store.journal, await self.store.aclose())
        await asyncio.to_thread(self.history.close)  # snapshots and pins still queued
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
            state = "closed" if self.connections.closed else "open"
            return (f"<Bench {state}: {counted(len(self.connections), 'server')}, "
                    f"{counted(self.pegboard.tool_count(), 'tool')}, "
                    f"{counted(len(self.store), 'record')}>")
        except Exception:
            return "<Bench>"
