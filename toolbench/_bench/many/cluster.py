"""``Bench.map(name, cases, cluster=client)``: the same map on a Dask cluster's workers.

Only this module imports ``distributed`` (the ``dask`` extra), and only ``map(..., cluster=)``
and ``evaluate(..., cluster=)`` (``models/eval_cluster.py``) import this module: the core
never pays for Dask.

The driver's side is here; the worker's (``ServerSpec``, ``BenchPlugin``, the task) is
``toolbench._bench.many.cluster_worker``. Neither imports the bench: the driver is handed
its collaborators (:class:`Driver`: servers, calls, records, and the bench's class to build
on workers), a worker's bench is typed by ``cluster_worker.WorkerBench``.

**Workers.** A :class:`BenchPlugin` (a Dask ``WorkerPlugin``, registered with
``client.register_plugin``, idempotent) keeps one ``Bench`` per server configuration per
worker, built on first use from what the driver's ``connect``/``load_config`` was given
(:class:`ServerSpec`: a stdio command or an http(s) URL, with its env, headers and options),
reused by every later task, and closed in the plugin's ``teardown`` when the worker shuts
down: its stdio children end with it (a worker killed outright closes their stdin, and a
server exits on end of input). ``concurrency`` caps the calls in flight to that server *per
worker* (one limiter per configuration, shared by the worker's threads), so a job has up to
``concurrency`` x workers calls in flight per server.

**Partitions.** The cases travel in partitions (about four per worker thread, at most
``MAX_PARTITION`` cases each), one Dask task each, under an explicit key built from the tool
name, the partition number and the job (``toolbench-map-echo-3-1a2b3c4d``). Records come back
as partitions finish, into the driver's ``records`` and journal; the progress bar counts calls.

**Grants: what makes a lost worker exact.** A worker sends no call before the driver has
granted it: the worker asks (a Dask event on topic ``toolbench-grants``, batching whatever
calls are waiting), the driver writes each granted call's *intent* into its own journal
(``RecordStore.intent``, committed before the answer, exactly as a local call does before it
is sent), then answers on a Dask queue private to that task run. The driver grants each case
at most once, ever. So:

- *A worker killed mid-partition*: Dask runs the task again elsewhere; the new run asks
  for every case of the partition and is granted only those never granted before. A case
  granted to the dead run without a reported record becomes ``in_doubt`` (``TimedOut``: it
  may have run); a case never granted runs on the new worker. Nothing that may have landed
  runs twice, and nothing that never started is left out. If Dask gives up on the task
  (``KilledWorker``), its never-granted cases are ``Unreachable`` (did not happen).
- *The driver killed*: every call a worker may have sent has a committed intent in the
  journal, which reopening turns into ``in_doubt``; ``resume=True`` skips those and runs the
  rest. A worker that outlives its driver gets no more grants, so it sends nothing more.
- *An interrupt in the driver*: tasks not started are cancelled, no grant is given after
  it, and calls granted but not reported are recorded ``in_doubt``.
- *A grant that does not come* within the call's timeout (bounded by ``GRANT_WAIT_S``): the
  call is not sent (``Unreachable``).

**Signed-in servers** travel only with ``share_credentials=True``: the spec carries the
sign-in's access token as an ``Authorization`` header (never the refresh token, which stays
in the driver's store), and a worker whose call the server turns away with HTTP 401 records
it ``Unreachable`` (``cluster_worker.TOKEN_REFUSED``: nothing ran). The driver then makes one
request through its own connection, whose sign-in refreshes an expired token (or signs in
again), and sends those calls once more in a job of their own; both attempts are records.

**Secrets.** env and header values (a shared token too) travel only inside Dask's messages
(the task's arguments, pickled), never in a task key, a queue or topic name, an event, or a
log line: :class:`ServerSpec`'s repr (which Dask logs when a task fails) names the server
only. A tool named after a secret travels by its real name in the task's arguments (the
worker calls it); its key, and the driver's intents and records, use the name redacted
(``Calls.shown``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import math
import pickle
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
from distributed import Client, Queue, as_completed

from toolbench._bench.journal.journal import warn_not_durable
from toolbench._bench.journal.record import Record, make_record, new_call_id, utcnow
from toolbench._bench.many.cluster_worker import (
    TOKEN_REFUSED,
    TOPIC,
    BenchPlugin,
    ServerSpec,
    WorkerBench,
    run_partition,
)
from toolbench._bench.progress.bars import progress_bar
from toolbench._bench.servers.scrub import redacted_failure
from toolbench._core.errors import TimedOut, ToolError, Unreachable

if TYPE_CHECKING:
    from distributed import Future

    from toolbench._bench.calls.calling import Calls
    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.servers.naming import Target
    from toolbench._bench.servers.servers import Servers
    from toolbench._core.ids import Provenance

PARTITIONS_PER_THREAD = 4
MAX_PARTITION = 500
CANCEL_BOUND_S = 15.0
"""How long cleaning up after an interrupt may take (cancelling futures, recording)."""
LOST_ERROR = ("the Dask worker running it was lost before reporting (the call was granted "
              "and may have run)")
_KEY_SAFE = re.compile(r"[^A-Za-z0-9_.]+")
_Item = TypeVar("_Item")


@dataclass(frozen=True)
class Driver:
    """What the driver's side needs: the bench's servers, calls and records, and the class a
    worker builds its own bench from."""

    servers: Servers
    calls: Calls
    store: RecordStore
    bench_type: Callable[..., WorkerBench]


def _spec(servers: Servers, bench_type: Callable[..., WorkerBench], server: str,
          share_credentials: bool = False) -> ServerSpec:
    row = servers.row(server)
    given = row.given if row is not None else None
    if row is None or given is None or not isinstance(given[0], (str, list, tuple)):
        transport = row.transport if row is not None else "unknown"
        raise ValueError(
            f"server {server!r} ({transport}) cannot run on a Dask cluster: a worker rebuilds a "
            "server from a stdio command or an http(s) URL, and an in-process server, a "
            "ToolBox, a Toolset or a client object cannot travel; call map() without "
            "cluster= for it")
    target, options, namespace = given
    shared = options.get("auth") is not None
    if shared and not share_credentials:
        raise ValueError(
            f"server {server!r} signs in (auth={type(options['auth']).__name__}): its sign-in "
            "and tokens stay in this process and cannot travel to Dask workers; only static "
            "headers can. Call map() without cluster= for it, or with share_credentials=True "
            "to send the workers its access token (never the refresh token)")
    if shared:
        options = _with_token(servers, server, options)
    bench_options = {"timeout": servers.timeout, "connect_timeout": servers.connect_timeout,
                     "separator": servers.pegboard.separator,
                     "egress": None if servers.egress is None else sorted(servers.egress.hosts)}
    spec = ServerSpec(server, list(target) if isinstance(target, tuple) else target,
                      dict(options), namespace, bench_options, bench_type, shared=shared)
    kind = getattr(spec.bench_type, "__qualname__", "")
    digest = hashlib.sha256(pickle.dumps((spec.name, spec.target, sorted(
        (k, repr(v)) for k, v in spec.options.items()), spec.namespace,
        sorted(bench_options.items()), kind))).hexdigest()
    return dataclasses.replace(spec, key=digest)


def _with_token(servers: Servers, server: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the sign-in replaced by its access token, as a static header: all a
    worker gets of it (``share_credentials=True``). The token is a secret of the worker's
    connection like any header value, so its messages and records never show it."""
    token = servers.mcp(server).access_token()
    if token is None:
        raise ValueError(
            f"server {server!r} has no access token to share with Dask workers: sign in first "
            "(connect, or a call), with tb.OAuth or tb.ClientCredentials (a custom httpx2.Auth "
            "has no token toolbench can read)")
    headers = {**(options.get("headers") or {}), "Authorization": f"Bearer {token}"}
    return {**{k: v for k, v in options.items() if k != "auth"}, "headers": headers}


async def _renewed(driver: Driver, spec: ServerSpec) -> ServerSpec | None:
    """After workers got a 401: one request through the driver's own connection, whose
    sign-in refreshes an expired token (or signs in again); the spec with the new token, or
    None when the token did not change (the refused calls stay ``Unreachable``)."""
    mcp = driver.servers.mcp(spec.name)
    before = mcp.access_token()
    with contextlib.suppress(ToolError):  # a listing: ``ping`` is gone from 2026-07-28
        await mcp.request("tools/list", lambda sdk: sdk.list_tools())
    if mcp.access_token() in (None, before):
        return None
    return _spec(driver.servers, driver.bench_type, spec.name, share_credentials=True)


def check_cluster(servers: Servers, bench_type: Callable[..., WorkerBench], cluster: Any,
                  server: str, share_credentials: bool = False) -> None:
    """Refuse, before anything runs, what cannot work: not a Client, or a server that
    cannot travel."""
    check_client(cluster)
    _spec(servers, bench_type, server, share_credentials)


def check_client(cluster: Any) -> None:
    """Refuse what is not a running, synchronous ``dask.distributed.Client`` (shared with
    ``evaluate(..., cluster=)``)."""
    if not isinstance(cluster, Client):
        raise TypeError(f"cluster must be a dask.distributed.Client, not "
                        f"{type(cluster).__name__} {cluster!r:.80}")
    if cluster.asynchronous:
        raise ValueError("cluster must be a synchronous dask.distributed.Client (this one was "
                         "made with asynchronous=True)")
    if cluster.status != "running":
        raise ValueError(f"the dask.distributed.Client is {cluster.status}, not running")


@dataclass
class _Part:
    cases: list[tuple[int, Any]]
    run: str | None = None
    dead: set[str] = field(default_factory=set)
    granted: dict[int, str] = field(default_factory=dict)  # case index -> call_id
    done: bool = False


class _Ledger:
    """The driver's grants: each case at most once, its intent committed before the answer."""

    def __init__(self, driver: Driver, client: Client, job: str, batch: str, target: Target,
                 parts: list[_Part], provenance: Provenance) -> None:
        self.store, self.client, self.job, self.batch = driver.store, client, job, batch
        self.target, self.parts, self.provenance = target, parts, provenance
        # What records, intents and the journal say: a tool named after a secret, redacted.
        self.tool_shown, self.name_shown = driver.calls.shown(target)
        self.redact = driver.servers.redactor(target.tool.server)
        self.args = {index: args for part in parts for index, args in part.cases}
        self.stopping = False
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.loop = asyncio.get_running_loop()
        self.replies: dict[str, Queue] = {}
        self.records: dict[int, Record] = {}

    def on_event(self, msg: dict[str, Any]) -> None:
        """On Dask's client thread: hand the request to the loop."""
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.inbox.put_nowait, msg)

    async def serve(self) -> None:
        async with anyio.create_task_group() as tg:
            while True:
                tg.start_soon(self._grant, await self.inbox.get())

    async def _grant(self, msg: dict[str, Any]) -> None:
        try:
            number, run, seq = int(msg["part"]), str(msg["run"]), msg["seq"]
            part = self.parts[number]
            wanted = [int(i) for i in msg["cases"]]
        except (KeyError, TypeError, ValueError, IndexError):
            return  # not ours to answer: nobody waits on a malformed request
        granted: list[int] = []
        if not (self.stopping or part.done or run in part.dead):
            if part.run != run:
                if part.run is not None:  # a new run of the task: the earlier one is lost
                    part.dead.add(part.run)
                part.run = run
            tool, started = self.target.tool, utcnow()
            intents = []
            for index in wanted:
                if index in part.granted or index not in self.args:
                    continue
                call_id = part.granted[index] = new_call_id()
                granted.append(index)
                args = self.args[index]
                intents.append(self.store.intent(
                    call_id, self.batch, started, tool.server, self.tool_shown, self.name_shown,
                    args if isinstance(args, Mapping) else {"_invalid": args},
                    self.provenance.with_fields(case=index).as_dict()))
            await asyncio.gather(*intents)  # committed (or the journal gave up, as locally)
        reply = self.replies.get(run)
        try:
            if reply is None:
                reply = self.replies[run] = await anyio.to_thread.run_sync(
                    lambda: Queue(f"toolbench-{self.job}-{run}", client=self.client))
            await anyio.to_thread.run_sync(reply.put, {"seq": seq, "granted": granted})
        except Exception:  # the worker will not hear: its calls stay unsent (granted: in doubt)
            return

    def finish(self, number: int, result: list[tuple[int, Record]] | BaseException) -> int:
        """Record a finished partition: its records, in doubt or not run for the rest."""
        part = self.parts[number]
        part.done = True
        store, tool, batch = self.store, self.target.tool, self.batch
        reported: set[int] = set()
        if isinstance(result, list):
            for index, record in result:
                if index in reported or index not in self.args:
                    continue
                reported.add(index)
                record = dataclasses.replace(record, call_id=part.granted.get(index)
                                             or new_call_id(), batch=batch,
                                             tool=self.tool_shown, name=self.name_shown)
                if self.redact is not None:  # a worker's own failure may name the tool
                    record = redacted_failure(record, self.redact)
                store.append(record, batch)
                self.records[index] = record
            why = LOST_ERROR
        else:
            why = f"{type(result).__name__}: {result}"
            if self.redact is not None:  # Dask's messages quote task keys and arguments
                why = self.redact(why)
        for index, args in part.cases:
            if index in reported:
                continue
            granted = part.granted.get(index)
            error: ToolError = (TimedOut(why, tool=tool) if granted is not None else
                                Unreachable(f"not run: the cluster could not run its partition "
                                            f"({why})", tool=tool))
            record = make_record(
                call_id=granted or new_call_id(), batch=batch, started=utcnow(),
                server=tool.server, tool=self.tool_shown, name=self.name_shown,
                arguments=args if isinstance(args, Mapping) else {"_invalid": args},
                latency_s=None, provenance=self.provenance.with_fields(case=index).as_dict(),
                error=error)
            store.append(record, batch)
            self.records[index] = record
        return len(part.cases)

    def abandon(self) -> None:
        """After an interrupt: granted calls not reported are in doubt; the rest did not run."""
        self.stopping = True
        tool = self.target.tool
        for part in self.parts:
            if part.done:
                continue
            part.done = True
            for index, args in part.cases:
                call_id = part.granted.get(index)
                if call_id is None:
                    continue
                self.store.append(make_record(
                    call_id=call_id, batch=self.batch, started=utcnow(), server=tool.server,
                    tool=self.tool_shown, name=self.name_shown,
                    arguments=args if isinstance(args, Mapping) else {"_invalid": args},
                    latency_s=None,
                    provenance=self.provenance.with_fields(case=index).as_dict(),
                    error=TimedOut("interrupted while in flight on a Dask worker", tool=tool)),
                    self.batch)

    def close_replies(self) -> None:
        for queue in self.replies.values():
            with contextlib.suppress(Exception):
                queue.close()


_LEDGERS: dict[str, _Ledger] = {}
"""Jobs running in this process, by job id: where grant requests are routed."""


def _on_grant_event(event: tuple[float, Any]) -> None:
    msg = event[1] if isinstance(event, tuple) and len(event) == 2 else None
    if isinstance(msg, dict):
        ledger = _LEDGERS.get(str(msg.get("job")))
        if ledger is not None:
            ledger.on_event(msg)


def partitions(items: list[_Item], threads: int) -> list[list[_Item]]:
    """``items`` cut into about ``PARTITIONS_PER_THREAD`` partitions per worker thread, at
    most ``MAX_PARTITION`` each, in order (shared with ``evaluate(..., cluster=)``)."""
    size = max(1, min(MAX_PARTITION, math.ceil(len(items) / (max(threads, 1) *
                                                             PARTITIONS_PER_THREAD))))
    return [items[i:i + size] for i in range(0, len(items), size)]


def _task_key(tool_shown: str, number: int, job: str) -> str:
    """A partition's Dask key, from the tool's name as records show it (a tool named after
    a secret is redacted first, then cut): keys are logged and shown on the dashboard."""
    tool = tool_shown
    return f"toolbench-map-{_KEY_SAFE.sub('_', tool)[:60]}-{number}-{job[:8]}"


def partition_outcome(future: Future[Any], holds: str = "records") -> list[Any] | BaseException:
    """A finished partition task's list, or why there is none (blocking: run in a thread).

    Shared with ``evaluate(..., cluster=)`` (``models/eval_cluster.py``), whose partitions
    return rows: ``holds`` names what the list should hold, for the error when it is not a
    list."""
    try:
        if future.status == "error":
            exc = future.exception()
            return exc if isinstance(exc, BaseException) else RuntimeError(str(exc))
        if future.status == "cancelled":
            return RuntimeError("the task was cancelled")
        value = future.result()
    except Exception as exc:
        return exc
    if not isinstance(value, list):
        return TypeError(f"a partition returned {type(value).__name__}, not {holds}")
    return value


async def cancel_unfinished(client: Client, futures: list[Future[Any]]) -> None:
    """Cancel the tasks not finished yet, quietly (the client may be gone already): after an
    interrupt or a failure, inside a shielded, bounded scope (``CANCEL_BOUND_S``)."""
    pending = [f for f in futures if not f.done()]
    if pending:
        with contextlib.suppress(Exception):
            await anyio.to_thread.run_sync(client.cancel, pending)


async def map_on_cluster(driver: Driver, client: Client, target: Target,
                         calls: list[tuple[int, Any]], *, concurrency: int,
                         progress: bool | None, timeout: float | None,
                         provenance: Provenance, share_credentials: bool = False
                         ) -> list[Record]:
    """Run ``calls`` (case index, arguments) on the cluster; records in ``calls`` order.

    With shared credentials, the calls a server turned away for the token (a 401: nothing
    ran) are sent once more, in a job of their own, after the driver's sign-in renewed it;
    both attempts are in the records."""
    if not calls:
        return []
    spec = _spec(driver.servers, driver.bench_type, target.tool.server, share_credentials)
    job = functools.partial(_job, driver, client, target=target, concurrency=concurrency,
                            progress=progress, timeout=timeout, provenance=provenance)
    records = await job(spec, calls)
    refused = [(index, args) for index, args in calls
               if spec.shared and records[index].error == TOKEN_REFUSED]
    renewed = await _renewed(driver, spec) if refused else None
    if renewed is not None:
        records.update(await job(renewed, refused))
    return [records[index] for index, _ in calls]


async def _job(driver: Driver, client: Client, spec: ServerSpec, calls: list[tuple[int, Any]],
               *, target: Target, concurrency: int, progress: bool | None,
               timeout: float | None, provenance: Provenance) -> dict[int, Record]:
    """One job on the cluster: its partitions, grants and records, by case index."""
    job, batch = uuid.uuid4().hex, uuid.uuid4().hex
    tool_shown, name_shown = driver.calls.shown(target)
    label = f"map {name_shown} on the cluster"
    threads = await anyio.to_thread.run_sync(
        lambda: (client.register_plugin(BenchPlugin()), sum(client.nthreads().values()))[1])
    parts = [_Part(chunk) for chunk in partitions(calls, threads)]
    ledger = _Ledger(driver, client, job, batch, target, parts, provenance)
    _LEDGERS[job] = ledger
    bar = progress_bar(len(calls), label, progress)
    futures: list[Future[Any]] = []
    number_of: dict[Any, int] = {}
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ledger.serve)

            def submit() -> tuple[list[Future[Any]], as_completed]:
                client.subscribe_topic(TOPIC, _on_grant_event)  # before any task can ask
                made = [client.submit(run_partition, spec, job, n, target.tool.tool, batch,
                                      part.cases, concurrency, timeout, provenance.as_dict(),
                                      key=_task_key(tool_shown, n, job), pure=False)
                        for n, part in enumerate(parts)]
                return made, as_completed(made)

            futures, finished = await anyio.to_thread.run_sync(submit)
            number_of = {f.key: n for n, f in enumerate(futures)}
            for _ in futures:
                future = await anyio.to_thread.run_sync(next, finished, abandon_on_cancel=True)
                outcome = await anyio.to_thread.run_sync(partition_outcome, future)
                bar.update(ledger.finish(number_of[future.key], outcome))
            tg.cancel_scope.cancel()
    except BaseException:
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND_S):
            ledger.abandon()
            await cancel_unfinished(client, futures)
        raise
    finally:
        _LEDGERS.pop(job, None)
        bar.close()
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND_S):
            await anyio.to_thread.run_sync(ledger.close_replies)
    journal = driver.store.journal
    if journal is not None:
        warn_not_durable(journal, await driver.store.settle(batch), len(calls), label)
    return ledger.records
