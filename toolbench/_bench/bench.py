"""The bench layer's Bench: connections, catalog, calls, records, over router and pegboard.

Each operation's logic is one private coroutine (``_call``) that runs on the shared loop; its
public faces are written out beside it (``acall`` awaits it from any loop, ``call`` blocks a
cell on it), each with its own signature and docstring and one line that hands off, so the
two faces can never disagree. Every call, whatever its outcome, leaves one record; the
single-call API raises only after that record exists. What a notebook shows (the HTML repr,
the explorer) and the bundled demo servers are added above this layer, by the public
``toolbench.Bench`` in ``toolbench._notebook.bench``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Self, Unpack, cast

import anyio

from toolbench._bench import config as _config
from toolbench._bench.attempt import attempt
from toolbench._bench.batch import Job, as_cases, bind, compare_frame, progress_bar, run_jobs
from toolbench._bench.client_rest import RestOfClient
from toolbench._bench.connected import Connected
from toolbench._bench.follow import FollowServers
from toolbench._bench.handles import ToolHandles
from toolbench._bench.journal import Journal, warn_not_durable, warn_unwritten
from toolbench._bench.overtime import OverTime
from toolbench._bench.progress import (
    Progress,
    ProgressBar,
    ProgressShown,
    logs_frame,
    progress_shown,
)
from toolbench._bench.records import Record, RecordStore, frame, make_record, new_call_id, utcnow
from toolbench._bench.replay import Replays
from toolbench._bench.resources import ResourcesAndPrompts
from toolbench._core import preload as _preload
from toolbench._core import validate as _validate
from toolbench._core.checks import seconds, whole
from toolbench._core.client import Result, ToolSpec, check_arguments
from toolbench._core.errors import TimedOut, ToolError, Unreachable, mark_unsent
from toolbench._core.html import counted
from toolbench._core.ids import Egress, Provenance, ToolId, check_server_name, did_you_mean
from toolbench._core.validate import unchecked, validate_arguments
from toolbench._loop import get_loop
from toolbench._routing.connections import (
    Connection,
    ConnectOptions,
    open_connection,
    secret_values,
)
from toolbench._routing.pegboard import USE_SERVER_NAME, Namespace, PegBoard, describe_skipped
from toolbench._routing.router import ToolRouter
from toolbench._transports.mcp_errors import Redactor
from toolbench._transports.mcp_tasks import task_of
from toolbench._transports.notifications import LogLevel, Notifications
from toolbench._transports.server_requests import Handler, ServerRequests
from toolbench._transports.toolbox import ToolBox

if TYPE_CHECKING:
    import pandas as pd
    from distributed import Client as DaskClient

CLOSE_BOUND_S = 15.0
"""How long cleaning up after a failed connect may take (an McpClient needs up to 10 s)."""
TIMEOUT_BACKSTOP_S = 2.0
"""How long after a call's timeout the bench stops waiting for a client that did not."""
SERVER_COLUMNS = ("name", "transport", "status", "tools", "protocol", "server_name",
                  "server_version", "title", "description", "instructions", "capabilities",
                  "icons", "website", "destination", "error", "stderr_tail", "warnings",
                  "auth")
CATALOG_COLUMNS = ("name", "server", "tool", "title", "description", "parameters", "required",
                   "input_schema", "output_schema", "annotations", "icons", "meta",
                   "destination", "warnings", "pin")
REPLACEABLE = frozenset({"failed", "lost"})
"""Row statuses that ``connect``/``add`` under the same name replace instead of refusing."""
_NO_SECRETS = Redactor(())


def _scrubbed(exc: BaseException, redact: Redactor) -> BaseException:
    """``exc`` itself, or (when it or a cause would show a secret) a clean copy, unchained.

    The chain is dropped, not redacted: a cause is some library's exception, and a
    traceback prints it verbatim.
    """
    if not isinstance(exc, Exception) or redact.cause(exc) is not None:
        return exc
    clean: Exception
    if isinstance(exc, ToolError):
        clean = type(exc)(redact(exc.detail), tool=exc.tool)
    else:
        text = redact(str(exc))
        try:
            clean = type(exc)(text)
            if str(clean) != text:
                raise TypeError
        except Exception:
            clean = ValueError(f"{type(exc).__name__}: {text}")
    clean.__suppress_context__ = True
    return clean


def _redacted_data(data: Any, redact: Redactor) -> Any:
    """A log entry's ``data`` with a server's secrets hidden (JSON through its text)."""
    if data is None or not redact.active:
        return data
    if isinstance(data, str):
        return redact(data)
    try:
        text = json.dumps(data, default=str)
    except (TypeError, ValueError, RecursionError):
        return redact(repr(data))
    shown = redact(text)
    if shown == text:
        return data
    try:
        return json.loads(shown)
    except ValueError:
        return shown


def _schema_warnings(schema: Any) -> list[str]:
    """Why local argument checking is skipped for a tool (``_validate.schema_problems``)."""
    try:
        return [str(p) for p in _validate.schema_problems(schema)]
    except Exception as exc:  # a catalog must render even if one schema upsets the checker
        return [f"the schema could not be examined: {type(exc).__name__}: {exc}"]


def _cell_number() -> int | None:
    """The running IPython cell's own number (IPython 9 has already counted one ahead)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        count = getattr(shell, "execution_count", None)
        if not isinstance(count, int):
            return None
        return count - 1 if int(ipython.version_info[0]) >= 9 else count
    except Exception:
        return None


@dataclass
class _Target:
    """A resolved name: the pegboard name, the tool it routes to and its declared spec."""

    name: str
    tool: ToolId
    spec: ToolSpec | None


@dataclass
class _Row:
    name: str
    transport: str
    status: str
    connection: Connection | None = None
    error: str | None = None
    stderr: str = ""
    """The stderr tail as it was when the connect failed (closing deletes the live file)."""
    redact: Redactor = field(default=_NO_SECRETS, repr=False)
    """Hides this server's secrets (env, headers, config expansions) in every cell shown."""
    given: tuple[Any, dict[str, Any], Any] | None = field(default=None, repr=False)
    """What ``connect`` was given (target, options, namespace): what a Dask worker rebuilds
    the server from (``map(..., cluster=)``). It holds secrets: never shown."""
    timeout: float | None = None
    """The server's own call timeout (``connect(..., timeout=)`` or its config), if given."""

    def current_status(self) -> str:
        """The row's status, or the connection's own once connected (it may fail or be lost)."""
        if self.status == "connected" and self.connection is not None:
            return self.connection.status()
        return self.status


class BaseBench(ResourcesAndPrompts, RestOfClient, FollowServers, OverTime, Replays):
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

    # -- connecting -----------------------------------------------------------------------
    async def _connect(self, name: str, target: Any, namespace: Namespace,
                       given: ConnectOptions) -> Connected:
        """A failed row is kept (it tells why); it is replaced only once a new target is
        valid, and a config mistake (a name collision) keeps no row at all."""
        self._check_open()
        options: dict[str, Any] = dict(given)
        check_server_name(name)
        redact = Redactor(secret_values(options))
        existing = self._rows.get(name)
        if existing is not None and existing.current_status() not in REPLACEABLE:
            raise ValueError(f"server {name!r} is already connected; disconnect it first")
        own_timeout = seconds(options["timeout"], "timeout") if "timeout" in options else None
        options.setdefault("timeout", self.timeout)
        options.setdefault("connect_timeout", self.connect_timeout)
        try:
            connection = open_connection(name, target, options, self._requests,
                                         self._notifications)
        except Exception as exc:
            clean = _scrubbed(exc, redact)
            if clean is exc:
                raise
            raise clean from None
        if existing is not None:  # a failed or lost row: it goes only once the new one is valid
            await self._disconnect(name)
        row = _Row(name, connection.transport, "connecting", connection, redact=redact,
                   given=(target, dict(options), namespace), timeout=own_timeout)
        self._rows[name] = row
        try:
            if self.egress is not None and not self.egress.allows(connection.destination):
                raise Unreachable(self.egress.refusal(connection.destination))
            await connection.open()
            # An MCP connection is followed by the bench (follow.py: list changes and
            # reconnects, one path); any other client by the pegboard, as before.
            followed = getattr(connection, "mcp", None) is not None
            count = await self.pegboard.add_service(name, connection.client,
                                                    namespace=namespace, follow=not followed)
        except BaseException as exc:
            row.status, row.error = "failed", redact(str(exc))
            with contextlib.suppress(Exception):  # read before closing deletes the file
                row.stderr = redact(connection.stderr_tail())
            # Shielded, so an interrupted connect still ends its child; bounded all the same.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_BOUND_S):
                await connection.close()
            if not isinstance(exc, ToolError):  # a config mistake (collision): no row kept
                self._rows.pop(name, None)
            clean = _scrubbed(exc, redact)
            if clean is exc:
                raise
            raise clean from None
        row.status, row.error = "connected", None
        self._follow(name, connection)  # list changes and reconnects re-list (follow.py)
        self._apply_listing(name, ("tools",), "connect")
        await self._kinds_listed(name)  # with a journal or pins: the other kinds too
        return Connected(count, name, connection.transport)

    def connect(self, name: str, target: Any, /, *, namespace: Namespace = USE_SERVER_NAME,
                **options: Unpack[ConnectOptions]) -> Connected:
        """Connect ``target`` as server ``name``; its type picks the transport.

        Args:
            name: the server's local name (1 to 64 of ``[A-Za-z0-9_.-]``), the prefix of
                its tools' names unless ``namespace`` says otherwise.
            target: a command (``str`` or list: stdio), an ``http(s)://`` URL (streamable
                HTTP, or SSE), an MCP server object (in process), or any ``ToolClient`` (a
                ``Toolset``, a ``ToolBox``).
            namespace: the tools' name prefix: the server's name by default; ``None`` or
                ``""`` keeps the tools' own names.
            **options: typed keywords for the connection, documented on
                :class:`~toolbench._routing.connections.ConnectOptions`: ``env``, ``cwd``,
                ``headers``, ``transport``, ``timeout``, ``connect_timeout``,
                ``max_concurrent``, ``secrets``, ``max_message_bytes``, ``max_tools``,
                ``protocol_mode``, ``auth`` (``"oauth"``, ``tb.OAuth(...)``,
                ``tb.ClientCredentials(...)`` or an ``httpx2.Auth``: an http(s) server's
                sign-in). A ``ToolClient`` takes only ``timeout`` and
                ``connect_timeout``.

        Returns:
            How many tools the server added to the catalog: an ``int`` whose repr says what
            connected, e.g. ``<connected 'time': 2 tools (stdio)>``.

        Raises:
            Unreachable: the server did not start, answer or list its tools in time, or
                ``egress`` refused its host. Its row stays in ``servers``, marked
                ``failed``; a later ``connect`` under the same name replaces it.
            ValueError: the name is taken by a live server, or a target or option is bad.
            NameCollision: one of its tools' names is already on the pegboard.

        Example:
            >>> bench.connect("time", "mcp-server-time --local-timezone UTC")  # doctest: +SKIP
            <connected 'time': 2 tools (stdio)>
        """
        return get_loop().run(self._connect, name, target, namespace, options)

    async def aconnect(self, name: str, target: Any, /, *,
                       namespace: Namespace = USE_SERVER_NAME,
                       **options: Unpack[ConnectOptions]) -> Connected:
        """Awaitable :meth:`connect`: the same arguments, result and errors."""
        return await get_loop().arun(self._connect, name, target, namespace, options)

    async def _add(self, box: ToolBox) -> list[str]:
        """All of the box's servers, or none: a half-added box would leave names that no
        later ``add`` could take."""
        self._check_open()
        if not isinstance(box, ToolBox):
            raise TypeError(f"add() takes a ToolBox, not {box!r}; use connect() for servers")
        servers = box.servers()
        taken = [s for s in servers
                 if s in self._rows and self._rows[s].current_status() not in REPLACEABLE]
        if taken:
            raise ValueError(f"servers already connected: {taken}; nothing was added")
        for server in servers:
            if server in self._rows:  # a failed or lost row: replaced
                await self._disconnect(server)
        added: list[str] = []
        try:
            for server in servers:
                await self.pegboard.add_service(server, box)
                self._rows[server] = _Row(server, "toolbox", "connected",
                                          Connection.wrap(server, box, "toolbox"))
                added.append(server)
        except BaseException:
            for server in added:
                self.pegboard.remove_service(server)
                self._rows.pop(server, None)
            raise
        return servers

    def add(self, box: ToolBox) -> list[str]:
        """Add every server a ``ToolBox`` names (typed Python functions as tools).

        Args:
            box: the ToolBox; each of its servers becomes a row of ``servers``.

        Returns:
            The names of the servers added.

        Raises:
            TypeError: ``box`` is not a ToolBox (use ``connect`` for servers).
            ValueError: one of its servers' names is taken; nothing was added.

        Example:
            >>> box = tb.ToolBox("calc")                                # doctest: +SKIP
            >>> bench.add(box)                                          # doctest: +SKIP
            ['calc']
        """
        return get_loop().run(self._add, box)

    async def aadd(self, box: ToolBox) -> list[str]:
        """Awaitable :meth:`add`: the same argument, result and errors."""
        return await get_loop().arun(self._add, box)

    async def _disconnect(self, name: str) -> None:
        """The row and the names go first, so nothing new reaches a closing connection."""
        row = self._rows.pop(name, None)
        if row is None:
            raise KeyError(f"no server {name!r}; connected: {sorted(self._rows)}")
        if name in self.pegboard.list_services():
            self.pegboard.remove_service(name)
        self.router.unroute(name)
        self._requests.set_server_roots(name, None)
        if row.connection is not None:
            await row.connection.close()

    def disconnect(self, name: str) -> None:
        """Remove a server, its tools and its row, and close its connection.

        Args:
            name: the server's name, as in ``servers``.

        Raises:
            KeyError: no server has that name.

        Example:
            >>> bench.disconnect("time")                                # doctest: +SKIP
        """
        get_loop().run(self._disconnect, name)

    async def adisconnect(self, name: str) -> None:
        """Awaitable :meth:`disconnect`: the same argument and errors."""
        await get_loop().arun(self._disconnect, name)

    def _check_config(self, config: str | os.PathLike[str] | Mapping[str, Any],
                      stacklevel: int) -> _config.Parsed:
        """Read and check the whole config in the caller's thread; nothing starts here.

        Runs before the shared loop is involved, so a file read never blocks the loop and the
        unknown-key ``ConfigWarning`` is issued where the caller can see (and filter) it.
        """
        self._check_open()
        parsed = _config.parse(config)
        taken = sorted(e.name for e in parsed.servers if e.name in self._rows
                       and self._rows[e.name].current_status() not in REPLACEABLE)
        if taken:
            raise ValueError(f"servers already connected: {taken}; disconnect them first; "
                             "nothing was started")
        parsed.warn_unknown(stacklevel=stacklevel + 1)
        return parsed

    def load_config(self, config: str | os.PathLike[str] | Mapping[str, Any], *,
                    progress: bool | None = None) -> pd.DataFrame:
        """Connect every server of an ``mcpServers``/``servers`` config, all at once.

        The whole config is checked first, in the caller's thread, and nothing starts if
        anything is wrong. After that every server succeeds or fails on its own, whatever
        the exception: a failed row with the error, while the others connect. A name clash
        with an earlier server's tools is that server's failed row. A server with
        ``"disabled": true`` is not started and has no row.

        Args:
            config: a JSON file's path, or its parsed content (a mapping).
            progress: a progress bar while servers start (``None``: only in a notebook).

        Returns:
            The ``servers`` table.

        Raises:
            ConfigError: a mistake anywhere in the file, naming its JSON path.
            ValueError: a server's name is already connected.

        Warns:
            ConfigWarning: once, for keys the file has that toolbench does not know.

        Example:
            >>> bench.load_config("mcp.json")                           # doctest: +SKIP
        """
        parsed = self._check_config(config, stacklevel=2)
        return get_loop().run(self._connect_all, parsed, progress)

    async def aload_config(self, config: str | os.PathLike[str] | Mapping[str, Any], *,
                           progress: bool | None = None) -> pd.DataFrame:
        """Awaitable :meth:`load_config`: the same arguments, result and errors."""
        parsed = self._check_config(config, stacklevel=2)
        return await get_loop().arun(self._connect_all, parsed, progress)

    async def _connect_all(self, parsed: _config.Parsed, progress: bool | None,
                           ) -> pd.DataFrame:
        entries = parsed.servers
        bar = progress_bar(len(entries), "connecting", progress)

        async def one(entry: _config.ServerConfig) -> None:
            try:
                options = dict(entry.options)
                namespace = options.pop("namespace", USE_SERVER_NAME)
                await self._connect(entry.name, entry.target, namespace,
                                    cast(ConnectOptions, {**options, "secrets": entry.secrets}))
            except Exception as exc:  # every server on its own: the failed row tells it
                if entry.name not in self._rows:  # e.g. a NameCollision keeps no row
                    redact = Redactor(secret_values({**entry.options,
                                                     "secrets": entry.secrets}))
                    self._rows[entry.name] = _Row(entry.name, entry.transport, "failed",
                                                  error=redact(f"{type(exc).__name__}: {exc}"),
                                                  redact=redact)
            finally:
                bar.update(1)

        try:
            async with anyio.create_task_group() as tg:
                for entry in entries:
                    tg.start_soon(one, entry)
        finally:
            bar.close()
        return self._servers_frame()

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

    # -- tables ---------------------------------------------------------------------------
    def _servers_frame(self) -> pd.DataFrame:
        import pandas as pd

        rows = []
        for row in list(self._rows.values()):
            conn, redact = row.connection, row.redact
            info = conn.info() if conn is not None else {}

            def shown(value: Any, redact: Redactor = redact) -> Any:
                return redact(value) if isinstance(value, str) else value

            rows.append({
                "name": row.name, "transport": row.transport, "status": row.current_status(),
                "tools": len(self.pegboard.names_for_server(row.name)),
                "protocol": info.get("protocol"),
                "server_name": shown(info.get("server_name")),
                "server_version": shown(info.get("server_version")),
                **{key: shown(info.get(key)) for key in ("title", "description",
                                                          "instructions", "website")},
                "capabilities": info.get("capabilities"),
                "icons": info.get("icons"),
                "destination": shown(str(conn.destination)) if conn is not None else None,
                "error": shown(row.error or info.get("error")),
                "stderr_tail": shown(row.stderr or (conn.stderr_tail() if conn is not None
                                                     else "")),
                "warnings": [redact(w) for w in self._server_warnings(row.name)],
                "auth": conn.auth_text() if conn is not None else "none",
            })
        return pd.DataFrame(rows, columns=list(SERVER_COLUMNS))

    def _server_warnings(self, name: str) -> list[str]:
        """What was skipped or went wrong quietly for one server: tools left out, and a
        refresh after ``tools/list_changed`` that failed (the old tools stay)."""
        found = describe_skipped(self.pegboard.skipped(name))
        row = self._rows.get(name)
        mcp = getattr(row.connection, "mcp", None) if row is not None else None
        for tool, why in (mcp.skipped_tools if mcp is not None else []):
            found.append(f"tool {tool!r} skipped: {why}")
        failed = self.pegboard.refresh_errors.get(name)
        if failed is not None:
            found.append(f"refreshing the tool list failed, the old list stays: {failed}")
        return found

    @property
    def servers(self) -> pd.DataFrame:
        """One row per server; no secret value (env, headers) ever appears here."""
        return self._servers_frame()

    def catalog(self, server: str | None = None, search: str | None = None) -> pd.DataFrame:
        """One row per tool; ``search`` matches name, title and description, any case."""
        import pandas as pd

        needle = search.lower() if isinstance(search, str) and search else None
        rows = []
        for entry in self.pegboard.entries(server):
            spec = entry.spec
            if needle and not any(needle in (v or "").lower()
                                  for v in (entry.name, spec.title, spec.description)):
                continue
            rows.append({
                "name": entry.name, "server": entry.server, "tool": entry.tool,
                "title": spec.title, "description": spec.description,
                "parameters": spec.parameters, "required": spec.required,
                "input_schema": spec.input_schema, "output_schema": spec.output_schema,
                "annotations": spec.annotations, "icons": spec.icons, "meta": spec.meta,
                "destination": str(self.router.destination(entry.tool_id)),
                "warnings": _schema_warnings(spec.input_schema) + [
                    f"output schema: {w}" for w in _schema_warnings(spec.output_schema)
                ] if spec.output_schema is not None else _schema_warnings(spec.input_schema),
                "pin": self._pin_state(entry.tool_id),
            })
        return pd.DataFrame(rows, columns=list(CATALOG_COLUMNS))

    @property
    def logs(self) -> pd.DataFrame:
        """Every server's log messages and progress updates, oldest first (the last
        ``PER_SERVER`` of each server): ``time``, ``server``, ``kind`` (``log`` or
        ``progress``), ``level``, ``logger``, ``message``, ``data``, ``call_id`` (a progress
        update's call, as in ``records``). Text is capped; nothing here was sent by us."""
        entries = self._notifications.entries()
        redactors = {name: row.redact for name, row in self._rows.items() if row.redact.active}
        if redactors:  # a server's secrets never show, even in what it logged
            entries = [dataclasses.replace(e, message=redactors[e.server](e.message),
                                           data=_redacted_data(e.data, redactors[e.server]))
                       if e.server in redactors else e for e in entries]
        return logs_frame(entries)

    @property
    def records(self) -> pd.DataFrame:
        """Every call made through this bench (and loaded from its journal), oldest first."""
        return frame(self._store.snapshot())

    # -- calling --------------------------------------------------------------------------
    def _resolve(self, name: object) -> _Target:
        if not isinstance(name, str):
            raise TypeError(f"a tool name is a str, not {type(name).__name__} {name!r}")
        if name.startswith("tool://"):
            tid = ToolId.parse(name)
            if tid is None:
                raise Unreachable(f"malformed reference {name!r}: expected tool://server/tool")
            for entry in self.pegboard.entries(tid.server):
                if entry.tool == tid.tool:
                    return _Target(entry.name, tid, entry.spec)
            raise Unreachable(f"no tool {tid.tool!r} on server {tid.server!r}", tool=tid)
        entry = self.pegboard.entry(name)
        return _Target(entry.name, entry.tool_id, entry.spec)

    def _limit(self, server: str, timeout: float | None) -> float:
        """The call's timeout: the call's own, else its server's, else the bench's (DESIGN,
        "Which option wins"; ``None`` is the one "not given")."""
        if timeout is not None:
            return timeout
        row = self._rows.get(server)
        if row is not None and row.timeout is not None:
            return row.timeout
        return self.timeout

    def _provenance(self, provenance: Provenance | Mapping[str, Any] | None) -> Provenance:
        if provenance is None:
            base = Provenance()
        elif isinstance(provenance, Provenance):
            base = provenance
        else:
            base = Provenance.from_dict(provenance)
        return base.with_fields(cell=_cell_number())

    async def _invoke(self, target: _Target, arguments: Any, *, batch: str | None,
                      timeout: float | None, provenance: Provenance,
                      progress: ProgressShown | None = None, check: bool = True,
                      ) -> tuple[Record, Result | None, ToolError | None]:
        """Make one call and record it; a failure comes back as data, never raised.

        The server's progress updates always reach ``bench.logs`` under this call's id;
        ``progress`` (a bar, or the user's function) sees them too."""
        call_id, started = new_call_id(), utcnow()
        limit = self._limit(target.tool.server, timeout)
        row = self._rows.get(target.tool.server)
        redact = row.redact if row is not None and row.redact.active else None
        # What the record, the journal and the intent log say: a tool named after one of
        # its server's secrets is recorded without it (the call itself uses the real name).
        tool_shown = target.tool.tool if redact is None else redact(target.tool.tool)
        name_shown = target.name if redact is None else redact(target.name)
        t0 = time.perf_counter()  # reset once the call is sent: latency is the far side's
        result: Result | None = None
        error: ToolError | None = None
        recorded_args = arguments if isinstance(arguments, Mapping) else {"_invalid": arguments}
        tag = call_id if batch is None else batch  # what the journal's count is kept by
        prov = provenance.as_dict()
        durable = True
        if not _preload.ready():  # off the loop, before this call's timeout starts
            await _preload.wait()
        begun = time.perf_counter()

        def failed(exc: BaseException) -> Record:
            return make_record(
                call_id=call_id, batch=batch, started=started, server=target.tool.server,
                tool=tool_shown, name=name_shown, arguments=recorded_args,
                latency_s=time.perf_counter() - t0, provenance=prov, error=exc)

        try:
            if self._pin_blocked and target.tool in self._pin_blocked:
                raise self._pin_refusal(target.tool)
            args = check_arguments(target.tool, arguments)
            if check:
                validate_arguments(target.tool, target.spec.input_schema if target.spec else None,
                                   args)
            else:  # sent anyway; the record says so, and why it would have been refused
                prov = {**prov, **unchecked(target.tool, target.spec, args)}
            # Journaled: the intent is committed before a byte is sent (on the journal's
            # thread; this only awaits it, bounded), so a crash from here on leaves a trace.
            durable = await self._store.intent(call_id, batch, started, target.tool.server,
                                               tool_shown, name_shown, recorded_args, prov)
            # Checking the arguments and journaling the intent count inside the call's
            # timeout (DESIGN, "The trust boundary"); if they used it all, nothing is sent.
            t0 = time.perf_counter()
            remaining = limit - (t0 - begun)
            if remaining <= 0:
                raise Unreachable(
                    f"not sent: checking the arguments and recording the intent took "
                    f"{t0 - begun:.3g} s of the call's {limit:g} s timeout", tool=target.tool)
        except ToolError as exc:
            error = exc
        except anyio.get_cancelled_exc_class():
            self._store.append(failed(Unreachable("cancelled (interrupted) before it was sent",
                                                  tool=target.tool)), tag)
            raise
        except Exception as exc:  # toolbench's own bug, before sending (DESIGN)
            self._store.append(failed(mark_unsent(exc)), tag)
            raise
        else:
            # The router hands the timeout down: the client itself decides whether a
            # call that ran out of time was sent (in doubt) or never left (did not happen).
            # The outer bound is only a backstop, a little later, for a client that hangs;
            # a client that bounds itself (ours, or one the router bounds) gets none, so a
            # call has one timeout scope (each costs ~10 µs).
            on_progress = self._notifications.progress(target.tool.server, call_id, progress)

            def run() -> Awaitable[Result]:
                return self.router.call(target.tool, args, provenance, timeout=remaining,
                                        progress=on_progress)

            bound = (None if self.router.bounds_itself(target.tool)
                     else remaining + TIMEOUT_BACKSTOP_S)
            try:
                result, error = await attempt(run, limit=limit, bound=bound, tool=target.tool)
            except anyio.get_cancelled_exc_class():
                self._store.append(failed(TimedOut("cancelled (interrupted) while in flight",
                                                   tool=target.tool)), tag)
                raise
            except Exception as exc:  # the client's own bug before sending (is_unsent)
                self._store.append(failed(exc), tag)
                raise
        task_id = task_of(result, error)
        if task_id is not None:  # it ran as a server task (failed or timed out too)
            prov = {**prov, "task_id": task_id}
        record = make_record(
            call_id=call_id, batch=batch, started=started, server=target.tool.server,
            tool=tool_shown, name=name_shown, arguments=recorded_args,
            latency_s=time.perf_counter() - t0, provenance=prov,
            result=result, error=error,
        )
        if redact is not None and not record.ok:  # a failure's text is the server's words
            record = dataclasses.replace(
                record, error=None if record.error is None else redact(record.error),
                text=None if record.text is None else redact(record.text),
                content=_redacted_data(record.content, redact))
        self._store.append(record, tag)
        if error is not None and error.tool is None:
            error.tool = target.tool
        journal = self._store.journal
        if batch is None and journal is not None and (not durable or journal.degraded):
            # Its intent was durable before sending, and its outcome is in the intent log
            # (store.append wrote it); SQLite follows with the next group commit. A
            # journal that is failing says so now, not only at close.
            warn_not_durable(journal, 1, 1, f"call {name_shown}")
        return record, result, error

    async def _call(self, name: str, arguments: Mapping[str, Any] | None = None, /, *,
                    timeout: float | None = None,
                    provenance: Provenance | Mapping[str, Any] | None = None,
                    progress: Progress = None, check: bool = True, **kwargs: Any) -> Result:
        """The failed call is recorded before its error is raised: nothing is lost."""
        self._check_open()
        if not isinstance(check, bool):
            raise TypeError(f"check is True or False, not {check!r}")
        if arguments is not None and kwargs:
            raise TypeError("pass arguments as one mapping or as keywords, not both")
        if timeout is not None:
            seconds(timeout, "timeout")
        target = self._resolve(name)
        shown = progress_shown(progress, f"call {target.name}")
        try:
            _, result, error = await self._invoke(
                target, kwargs if arguments is None else arguments, batch=None,
                timeout=timeout, provenance=self._provenance(provenance), progress=shown,
                check=check,
            )
        finally:
            if isinstance(shown, ProgressBar):
                shown.close()
        if error is not None:
            raise error
        assert result is not None
        return result

    def call(self, name: str, arguments: Mapping[str, Any] | None = None, /, *,
             timeout: float | None = None,
             provenance: Provenance | Mapping[str, Any] | None = None,
             progress: Progress = None, check: bool = True, **kwargs: Any) -> Result:
        """Call one tool by pegboard name or ``tool://`` reference.

        Args:
            name: the pegboard name (``geo-distance``) or a ``tool://server/tool`` reference.
            arguments: the tool's arguments as one mapping; or pass them as keywords.
            timeout: seconds before the call fails as ``TimedOut`` (default: the server's
                ``connect(..., timeout=)``, else the bench's).
            provenance: fields recorded with the call (a ``Provenance`` or a mapping).
            progress: the server's progress updates: ``None`` shows a bar in a notebook
                (made on the first update), ``False`` none, a function is called with
                ``(progress, total, message)`` on toolbench's loop (keep it quick). Every
                update also lands in ``bench.logs``. Like ``timeout`` and ``provenance``,
                it is never sent as a tool argument.
            check: ``False`` sends arguments that fail the tool's ``inputSchema`` anyway, to
                probe the server's own validation (a ``null`` for a boolean, a missing
                required field). Serialisation rules still apply (NaN, lone surrogates,
                non-JSON values are refused). The record's ``provenance`` says so:
                ``"check": False``, and ``"schema_error"`` with the local refusal, if any.
                A tool parameter named ``check`` goes in the ``arguments`` mapping.
            **kwargs: the tool's arguments, as keywords (not together with ``arguments``).

        Returns:
            The tool's ``Result`` (text, data, content blocks, latency).

        Raises:
            ToolError: a subclass says what is known about the far side: ``Refused`` (bad
                arguments, checked locally), ``Unreachable`` (never sent), ``TimedOut``
                (may have run), ``ToolFailed`` (the tool reported an error), ``Malformed``
                (an answer that breaks the protocol). The record is written first.

        Example:
            >>> bench.call("geo-distance", from_city="London", to_city="Paris").data
            {'result': 343.557}
        """
        return get_loop().run(self._call, name, arguments, timeout=timeout,
                              provenance=provenance, progress=progress, check=check, **kwargs)

    async def acall(self, name: str, arguments: Mapping[str, Any] | None = None, /, *,
                    timeout: float | None = None,
                    provenance: Provenance | Mapping[str, Any] | None = None,
                    progress: Progress = None, check: bool = True, **kwargs: Any) -> Result:
        """Awaitable :meth:`call`: the same arguments, result and errors."""
        return await get_loop().arun(self._call, name, arguments, timeout=timeout,
                                     provenance=provenance, progress=progress, check=check,
                                     **kwargs)

    # -- many calls -----------------------------------------------------------------------
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
        records = await self._batch(calls, f"compare {name}", provenance, timeout=timeout,
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
            from toolbench._bench import cluster as _cluster

            _cluster.check_cluster(self, cluster, target.tool.server)
        arg_sets = as_cases(cases, {})
        slots: list[Record | None] = [None] * len(arg_sets)
        calls = []
        for index, args in enumerate(arg_sets):
            done = (self._store.resume_record(target.tool.server, target.tool.tool, args,
                                              retry_in_doubt=retry_in_doubt)
                    if resume and isinstance(args, Mapping) else None)
            if done is not None:
                slots[index] = done
            else:
                calls.append((index, target, args))
        if cluster is not None:
            records = await _cluster.map_on_cluster(
                self, cluster, target, [(index, args) for index, _, args in calls],
                concurrency=concurrency, progress=progress, timeout=timeout,
                provenance=self._provenance(provenance))
        else:
            records = await self._batch(calls, f"map {target.name}", provenance,
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
        ``toolbench._bench.cluster``).

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

    # -- display ----------------------------------------------------------------------
    def __repr__(self) -> str:
        try:
            state = "closed" if self._closed else "open"
            return (f"<Bench {state}: {counted(len(self._rows), 'server')}, "
                    f"{counted(self.pegboard.tool_count(), 'tool')}, "
                    f"{counted(len(self._store), 'record')}>")
        except Exception:
            return "<Bench>"
