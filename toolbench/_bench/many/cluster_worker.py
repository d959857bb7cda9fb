"""``map(..., cluster=)``, the worker's side: a bench per server configuration, and the task.

A :class:`BenchPlugin` (a Dask ``WorkerPlugin``) keeps one bench per server configuration
per worker, built on first use from a :class:`ServerSpec` (what the driver's
``connect``/``load_config`` was given), and closed when the worker shuts down.
:func:`run_partition` is the task: it asks the driver for grants (:class:`_Granter`) and makes
each granted call on that bench. The bench is typed by :class:`WorkerBench`, the little a
worker needs of it (its servers, its calls, ``close``); its class travels in the spec, so
this module imports no bench. See ``toolbench._bench.many.cluster`` for the protocol.

Only ``toolbench._bench.many.cluster`` imports this module (and Dask imports it on workers).
It may import ``distributed``, ``toolbench._bench.calls``, ``toolbench._bench.servers``,
``toolbench._bench.journal`` and ``_core``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio
from distributed import Queue, WorkerPlugin, get_client, get_worker

from toolbench._bench.journal.record import Record, make_record, new_call_id, utcnow
from toolbench._core.errors import ToolError, Unreachable
from toolbench._core.ids import Provenance
from toolbench._loop import get_loop

if TYPE_CHECKING:
    from distributed import Worker

    from toolbench._bench.calls.calling import Calls
    from toolbench._bench.servers.servers import Servers
    from toolbench._routing.connections import ConnectOptions

PLUGIN_NAME = "toolbench-benches"
TOPIC = "toolbench-grants"
"""The Dask event topic on which workers ask the driver for grants (ids only, no data)."""
GRANT_WAIT_S = 60.0
"""The most a worker waits for a grant (and never longer than the call's own timeout)."""
TOKEN_REFUSED = ("not sent: the server refused the access token the driver shared (HTTP 401); "
                 "the driver refreshes its sign-in and sends the call again")
"""A shared-credentials call the server turned away before running anything: the driver
finds its records by this text (``toolbench._bench.many.cluster``)."""


class WorkerBench(Protocol):
    """What a worker needs of its bench: its servers, its calls, and closing it."""

    @property
    def connections(self) -> Servers: ...

    @property
    def calls(self) -> Calls: ...

    def close(self) -> None: ...


@dataclass(frozen=True, repr=False)
class ServerSpec:
    """What a worker needs to connect a server as the driver did; it holds secrets.

    Its repr names the server only: Dask logs a failed task's arguments.
    """

    name: str
    target: str | list[str]
    options: dict[str, Any]
    namespace: Any
    bench_options: dict[str, Any]
    bench_type: Callable[..., WorkerBench]
    """The driver's bench class: pickled by reference, so the worker builds the same kind
    without this module importing the class (the bench layer imports this one)."""
    key: str = field(default="")
    """A digest of everything above: the worker's cache key (not secret-bearing text)."""
    shared: bool = False
    """The driver's access token travels in ``options["headers"]`` (``share_credentials``):
    a 401 is :data:`TOKEN_REFUSED`, and a newer token replaces this server's bench."""

    def __repr__(self) -> str:
        return f"ServerSpec({self.name!r})"


class BenchPlugin(WorkerPlugin):
    """One Bench per server configuration per worker, closed when the worker shuts down."""

    idempotent = True
    name = PLUGIN_NAME

    def setup(self, worker: Worker) -> None:
        self._lock = threading.Lock()
        self._benches: dict[str, WorkerBench] = {}
        self._token_keys: dict[str, str] = {}  # server -> the spec key of its newest token
        self.limiters: dict[str, anyio.CapacityLimiter] = {}  # touched on the loop only

    async def teardown(self, worker: Worker) -> None:
        await asyncio.to_thread(self.close_all)

    def close_all(self) -> None:
        with self._lock:
            benches, self._benches = list(self._benches.values()), {}
        for bench in benches:
            with contextlib.suppress(Exception):
                bench.close()

    def bench(self, spec: ServerSpec) -> WorkerBench:
        """This worker's bench for ``spec``, connected (again, if its server failed)."""
        with self._lock:  # one connect at a time per worker: tasks share what it makes
            bench = self._benches.get(spec.key)
            if bench is None and spec.shared:  # a newer token: the old one's bench goes
                self._close_other_tokens(spec)
            if bench is None:
                opts = spec.bench_options
                bench = spec.bench_type(timeout=opts["timeout"],
                                        connect_timeout=opts["connect_timeout"],
                                        separator=opts["separator"], egress=opts["egress"])
                self._benches[spec.key] = bench
            row = bench.connections.row(spec.name)
            status = row.current_status() if row is not None else None
            if status not in ("connected", "connecting"):
                get_loop().run(bench.connections.connect, spec.name, spec.target,
                               spec.namespace, cast("ConnectOptions", dict(spec.options)))
            return bench


    def _close_other_tokens(self, spec: ServerSpec) -> None:
        """A newer shared token for a server: the bench of its older one is closed (under
        the lock), so a worker holds one connection per signed-in server."""
        old = self._token_keys.get(spec.name)
        self._token_keys[spec.name] = spec.key
        stale = self._benches.pop(old, None) if old is not None else None
        if stale is not None:
            with contextlib.suppress(Exception):
                stale.close()


def _refused_token(spec: ServerSpec, error: str | None) -> bool:
    """Whether a shared-credentials failure is the server turning the token away (401)."""
    return spec.shared and error is not None and "HTTP 401" in error


def _token_refused(record: Record) -> Record:
    """The record of a call the server turned away for its token: not sent, as a 401 means
    the server ran nothing; the driver refreshes and sends it again."""
    return dataclasses.replace(record, ok=False, disposition=Unreachable.disposition.value,
                               error_type="Unreachable", error=TOKEN_REFUSED, text=None,
                               structured=None, content=[])


class _Granter:
    """A task run's side of the grant protocol: one request in flight, batching the rest."""

    def __init__(self, job: str, part: int, run: str, wait: float) -> None:
        """Made in the task's own thread (Dask finds its worker and client there)."""
        self.job, self.part, self.run, self.wait = job, part, run, wait
        self.loop: asyncio.AbstractEventLoop | None = None  # set on the loop, before asking
        self._worker = get_worker()
        self._reply = Queue(f"toolbench-{job}-{run}", client=get_client())
        self._cond = threading.Condition()
        self._pending: list[tuple[int, asyncio.Future[bool | None]]] = []
        self._stop = False
        self._thread = threading.Thread(target=self._serve, name="toolbench-grants",
                                        daemon=True)
        self._thread.start()

    def ask(self, index: int) -> asyncio.Future[bool | None]:
        """On the loop: True granted, None refused (another run has it), False no answer."""
        assert self.loop is not None
        fut: asyncio.Future[bool | None] = self.loop.create_future()
        with self._cond:
            self._pending.append((index, fut))
            self._cond.notify()
        return fut

    def _serve(self) -> None:
        seq = 0
        while True:
            with self._cond:
                while not self._pending and not self._stop:
                    self._cond.wait()
                if self._stop:
                    waiting, self._pending = self._pending, []
                    self._answer(waiting, {})
                    return
                waiting, self._pending = self._pending, []
            seq += 1
            answer: dict[int, bool | None] = {}
            try:
                self._worker.log_event(TOPIC, {"job": self.job, "part": self.part,
                                               "run": self.run, "seq": seq,
                                               "cases": [i for i, _ in waiting]})
                while True:
                    reply = self._reply.get(timeout=self.wait)
                    if reply.get("seq") == seq:
                        granted = set(reply.get("granted", ()))
                        answer = {i: (True if i in granted else None) for i, _ in waiting}
                        break
            except Exception:  # no answer in time, or the scheduler is gone: nothing is sent
                answer = {}
            self._answer(waiting, answer)

    def _answer(self, waiting: list[tuple[int, asyncio.Future[bool | None]]],
                answer: Mapping[int, bool | None]) -> None:
        def resolve() -> None:
            for index, fut in waiting:
                if not fut.done():
                    fut.set_result(answer.get(index, False))

        if self.loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits
            self.loop.call_soon_threadsafe(resolve)

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._thread.join(5.0)
        with contextlib.suppress(Exception):
            self._reply.close()


def _failed_all(cases: Sequence[tuple[int, Any]], spec: ServerSpec, tool: str, batch: str,
                provenance: Mapping[str, Any] | None, error: ToolError
                ) -> list[tuple[int, Record]]:
    prov = Provenance.from_dict(provenance)
    return [(index, make_record(
        call_id=new_call_id(), batch=batch, started=utcnow(), server=spec.name, tool=tool,
        name=tool, arguments=args if isinstance(args, Mapping) else {"_invalid": args},
        latency_s=None, provenance=prov.with_fields(case=index).as_dict(), error=error))
        for index, args in cases]


def run_partition(spec: ServerSpec, job: str, part: int, tool: str, batch: str,
                  cases: list[tuple[int, Any]], concurrency: int, timeout: float | None,
                  provenance: dict[str, Any] | None) -> list[tuple[int, Record]]:
    """The task: make this partition's granted calls on this worker's bench."""
    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN_NAME)
    if not isinstance(plugin, BenchPlugin):  # registered before this worker joined? never
        raise RuntimeError("toolbench's worker plugin is missing on this worker")
    try:
        bench = plugin.bench(spec)
    except ToolError as exc:  # the server did not start here: nothing was sent
        if _refused_token(spec, str(exc)):
            exc = Unreachable(TOKEN_REFUSED)
        return _failed_all(cases, spec, tool, batch, provenance, exc)
    wait = min(bench.connections.timeout if timeout is None else timeout, GRANT_WAIT_S)
    granter = _Granter(job, part, uuid.uuid4().hex, wait)
    try:
        return get_loop().run(_run_cases, plugin, bench, spec, granter, tool, batch, cases,
                              concurrency, timeout, provenance)
    finally:
        granter.close()


async def _run_cases(plugin: BenchPlugin, bench: WorkerBench, spec: ServerSpec, granter: _Granter,
                     tool: str, batch: str, cases: list[tuple[int, Any]], concurrency: int,
                     timeout: float | None, provenance: dict[str, Any] | None
                     ) -> list[tuple[int, Record]]:
    try:
        target = bench.calls.resolve(f"tool://{spec.name}/{tool}")
    except ToolError as exc:
        return _failed_all(cases, spec, tool, batch, provenance, exc)
    limiter = plugin.limiters.get(spec.key)
    if limiter is None:
        limiter = plugin.limiters[spec.key] = anyio.CapacityLimiter(concurrency)
    limiter.total_tokens = concurrency
    granter.loop = asyncio.get_running_loop()
    wait = granter.wait
    base = Provenance.from_dict(provenance)
    out: list[tuple[int, Record]] = []

    async def one(index: int, args: Any) -> None:
        async with limiter:
            granted = await granter.ask(index)
            if granted is None:  # granted to an earlier run of this task: not ours to send
                return
            if granted is False:
                out.append(_failed_all([(index, args)], spec, tool, batch, provenance,
                                       Unreachable("not sent: the driver gave no grant within "
                                                   f"{wait:g} s",
                                                   tool=target.tool))[0])
                return
            record, _, _ = await bench.calls.invoke(target, args, batch=batch, timeout=timeout,
                                               provenance=base.with_fields(case=index))
            if _refused_token(spec, record.error):
                record = _token_refused(record)
            out.append((index, record))

    async with anyio.create_task_group() as tg:
        for index, args in cases:
            tg.start_soon(one, index, args)
    return out
