"""One call through the bench: resolve the name, check, journal, send, record.

``Calls`` keeps nothing of its own. :meth:`Calls.invoke` is the one path every tool call
takes (``call`` and ``acall``, and each call of ``compare``, ``map`` and ``replay``):
whatever its outcome, it leaves one record, and a failure comes back as data; ``call``
raises only after that record exists. It reads the servers (timeouts, redactors), the pins'
guard (is the tool blocked) and the router, and appends to the record store.

It may import ``toolbench._bench.servers``, ``toolbench._bench.overtime``,
``toolbench._bench.journal``, ``toolbench._bench.progress``, ``_transports`` and ``_core``.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from toolbench._bench.calls.attempt import attempt
from toolbench._bench.calls.plan import CallPlan
from toolbench._bench.calls.retry import (
    MAX_RETRY_WAIT_S,
    Pacing,
    check_max_retry_wait,
    check_retries,
    retry_wait,
    retryable,
    room_for_attempt,
    take_turn,
)
from toolbench._bench.calls.tracing import traced
from toolbench._bench.journal.journal import warn_not_durable
from toolbench._bench.journal.record import Record, make_record, new_call_id, utcnow
from toolbench._bench.progress.progress import Progress, ProgressBar, ProgressShown, progress_shown
from toolbench._bench.servers.failed import failed_server_error
from toolbench._bench.servers.naming import Target, resolve
from toolbench._bench.servers.scrub import redacted_failure
from toolbench._core.arguments import check_arguments
from toolbench._core.checks import seconds
from toolbench._core.client import Result
from toolbench._core.errors import TimedOut, ToolError, Unreachable, mark_unsent
from toolbench._core.ids import Provenance
from toolbench._core.rates import TokenBucket
from toolbench._core.schema import preload as _preload
from toolbench._core.schema.validate import unchecked, validate_arguments
from toolbench._transports.mcp.methods.tasks import task_of

if TYPE_CHECKING:
    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.overtime.guard import PinGuard
    from toolbench._bench.servers.servers import Servers
    from toolbench._routing.pegboard import PegBoard, PegEntry
    from toolbench._routing.router import ToolRouter

_log = logging.getLogger(__name__)
ResultHook = Callable[[Any, Record, Result], Awaitable[None]]
"""Told of each successful single call: its pegboard entry (or None), record and result."""
TIMEOUT_BACKSTOP_S = 2.0
"""How long after a call's timeout the bench stops waiting for a client that did not."""

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


class Calls:
    """``call``/``acall`` and the one path of every tool call."""

    def __init__(self, servers: Servers, guard: PinGuard, store: RecordStore,
                 router: ToolRouter, pegboard: PegBoard, *, trace_payloads: bool = False
                 ) -> None:
        self._servers = servers
        self.servers = servers  # read by the call's span (calls/tracing.py)
        self.trace_payloads = trace_payloads  # arguments and results as span attributes
        self._guard = guard
        self._store = store
        self._router = router
        self._pegboard = pegboard
        self._schema_checker_ready = False
        self._result_hooks: list[ResultHook] = []
        self.pacing = Pacing(servers)

    def on_result(self, hook: ResultHook) -> None:
        """Await ``hook(entry, record, result)`` after each successful single ``call`` (MCP
        Apps give the result its view); a hook's failure never fails the call."""
        self._result_hooks.append(hook)

    def resolve(self, name: object) -> Target:
        """The tool ``name`` names; a name of a server that failed says that server failed,
        and why (``servers/failed.py``), rather than "no tool named ..."."""
        try:
            return resolve(self._pegboard, name)
        except Unreachable:
            assert isinstance(name, str)
            failed = failed_server_error(self._servers, name, self._pegboard.separator)
            if failed is None:
                raise
            raise failed from None

    def _entry_of(self, target: Target) -> PegEntry | None:
        """The pegboard's entry for a call's tool, by its name: a lookup, not a scan of the
        server's tools (the scan cost each call to a 10,000-tool server ~1 ms: 1,199 against
        193 µs per synchronous call)."""
        try:
            entry = self._pegboard.entry(target.name)
        except ToolError:  # re-listed without it meanwhile
            return None
        return entry if entry.tool_id == target.tool else None

    def shown(self, target: Target) -> tuple[str, str]:
        """The tool's own name and its pegboard name as records, the journal, progress bars,
        warnings and Dask keys show them: without the server's secrets (a server may name a
        tool after one). Redaction is deterministic, so a later process with the same
        configuration shows the same names, which is what ``map(resume=True)`` matches."""
        redact = self._servers.redactor(target.tool.server)
        if redact is None:
            return target.tool.tool, target.name
        return redact(target.tool.tool), redact(target.name)

    @traced  # an OpenTelemetry span around the call, when tracing is on (calls/tracing.py)
    async def invoke(self, target: Target, arguments: Any, *, batch: str | None,
                      timeout: float | None, provenance: Provenance,
                      progress: ProgressShown | None = None, check: bool = True,
                      retries: int = 0, max_retry_wait: float = MAX_RETRY_WAIT_S,
                      rate: TokenBucket | None = None, plan: CallPlan | None = None,
                      ) -> tuple[Record, Result | None, ToolError | None]:
        """Make one call and record it; a failure comes back as data, never raised.

        The server's progress updates always reach ``bench.logs`` under this call's id;
        ``progress`` (a bar, or the user's function) sees them too. With ``retries``, a
        failure that did not happen is tried again (``calls/retry.py``), each attempt its
        own journaled call, all of them within the call's one timeout; the last attempt's
        record and outcome come back. ``rate`` is the batch's own bucket for this server (the
        server's own, from ``connect(..., rate=)``, applies too); the wait is ``queued_ms``.
        ``plan`` is what the calls of one operation to this tool share (``calls/plan.py``):
        given, ``target``, ``timeout`` and ``rate`` are the plan's; it is re-checked here.
        """
        if plan is None:
            plan = CallPlan(target, timeout, rate)
        plan = plan.current(self._servers, self._pegboard, self._router, self.pacing)
        limit = plan.limit
        if not self._schema_checker_ready:  # loaded before any deadline below is set
            await self._checker_loaded()
        if not retries:
            return await self._once(plan, arguments, batch, limit, provenance, progress, check)
        # Retries: the bookkeeping below is a few µs; a failed attempt pays the rest.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        retried: list[dict[str, Any]] = []

        def again(error: ToolError, took_s: float) -> float | None:  # the wait, if retried
            if len(retried) >= retries or not retryable(error):
                return None
            wait = retry_wait(error, len(retried) + 1, max_retry_wait)
            return wait if loop.time() + wait + room_for_attempt(took_s) < deadline else None

        while True:
            record, result, error = await self._once(
                plan, arguments, batch, deadline - loop.time(), provenance, progress, check,
                retried=retried, again=again)
            if error is None or record.provenance is None or (
                    "retry_wait_ms" not in record.provenance):
                return record, result, error
            wait_s = record.provenance["retry_wait_ms"] / 1000.0
            retried.append({"call_id": record.call_id, "error_type": record.error_type,
                            "error": record.error, "wait_ms": record.provenance["retry_wait_ms"]})
            await asyncio.sleep(wait_s)

    async def _checker_loaded(self) -> None:
        """Wait for the argument checker's one-time import (off the loop), outside every
        call's timeout: a first map with retries once spent its whole timeout on it and made
        one attempt per case."""
        if not _preload.ready():
            await _preload.wait()
        self._schema_checker_ready = _preload.ready()  # once imported, it stays imported

    async def _once(self, plan: CallPlan, arguments: Any, batch: str | None, limit: float,
                    provenance: Provenance, progress: ProgressShown | None, check: bool,
                    *, retried: list[dict[str, Any]] | None = None,
                    again: Callable[[ToolError, float], float | None] | None = None,
                    ) -> tuple[Record, Result | None, ToolError | None]:
        """One attempt: its own call id, intent and record. ``again`` decides, before the
        record is kept, whether a failure will be retried (its record then says after what
        wait: ``provenance["retry_wait_ms"]``); ``retried`` lists the attempts before it."""
        call_id, started = new_call_id(), utcnow()
        attempts = 1 + len(retried) if retried else 1
        queued_ms: float | None = None
        target, redact, buckets = plan.target, plan.redact, plan.buckets
        # What the record, the journal and the intent log say: a tool named after one of
        # its server's secrets is recorded without it (the call itself uses the real name).
        tool_shown, name_shown = plan.tool_shown, plan.name_shown
        t0 = time.perf_counter()  # reset once the call is sent: latency is the far side's
        result: Result | None = None
        error: ToolError | None = None
        recorded_args = arguments if isinstance(arguments, Mapping) else {"_invalid": arguments}
        tag = call_id if batch is None else batch  # what the journal's count is kept by
        prov = provenance.as_dict()
        if retried:  # a retry: its intent says which attempt
            prov = {**prov, "attempt": attempts}
        durable = True
        if not self._schema_checker_ready:  # off the loop, before this call's timeout starts
            await self._checker_loaded()
        begun = time.perf_counter()

        def failed(exc: BaseException) -> Record:
            return make_record(
                call_id=call_id, batch=batch, started=started, server=target.tool.server,
                tool=tool_shown, name=name_shown, arguments=recorded_args,
                latency_s=time.perf_counter() - t0, provenance=prov, error=exc,
                attempts=attempts, queued_ms=queued_ms)

        try:
            if self._guard.active:
                if self._guard.relisting_now:  # a re-list in flight: checked against it
                    await self._guard.listed(target.tool, limit - (time.perf_counter() - begun))
                if target.tool in self._guard.blocked:
                    raise self._guard.refusal(target.tool)
            args = check_arguments(target.tool, arguments)
            if check:
                validate_arguments(target.tool, target.spec.input_schema if target.spec else None,
                                   args)
            else:  # sent anyway; the record says so, and why it would have been refused
                prov = {**prov, **unchecked(target.tool, target.spec, args)}
            if buckets:  # a rate: wait for the turn (before the intent: nothing is unknown)
                now = asyncio.get_running_loop().time()
                waited = take_turn(buckets, now, now + limit - (time.perf_counter() - begun),
                                   target.tool.server, target.tool)
                if waited > 0.0:  # a token at hand costs no sleep and no loop iteration
                    await asyncio.sleep(waited)
                queued_ms = waited * 1000.0
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
            on_progress = self._servers.notifications.progress(target.tool.server, call_id,
                                                               progress)

            def run() -> Awaitable[Result]:  # with pins, checked again at the session (#26)
                sent = self._router.call(target.tool, args, provenance, timeout=remaining,
                                         progress=on_progress)
                return self._guard.rechecked(target.tool, sent) if self._guard.active else sent

            bound = None if plan.bound else remaining + TIMEOUT_BACKSTOP_S
            try:
                result, error = await attempt(run, limit=limit, bound=bound, tool=target.tool)
            except anyio.get_cancelled_exc_class():
                self._store.append(failed(TimedOut("cancelled (interrupted) while in flight",
                                                   tool=target.tool)), tag)
                raise
            except Exception as exc:  # the client's own bug before sending (is_unsent)
                self._store.append(failed(exc), tag)
                raise
        # A call that ran as a server task (failed or timed out too) keeps the task's id.
        task_id = result.task_id if error is None and result is not None else task_of(
            result, error)
        if task_id is not None:
            prov = {**prov, "task_id": task_id}
        if error is not None and again is not None:
            wait = again(error, time.perf_counter() - t0)  # the attempt, not its queue
            if wait is not None:  # retried: this attempt's record says after what wait
                prov = {**prov, "retry_wait_ms": round(wait * 1000.0, 3)}
            elif retried:  # the last of several attempts: its error counts them
                error.detail = f"{error.detail} (after {attempts} attempts)"
                error.args = (error.detail,)
        if retried and "retry_wait_ms" not in prov:  # the last: what came before, and why
            prov = {**prov, "retried": list(retried)}
        record = make_record(
            call_id=call_id, batch=batch, started=started, server=target.tool.server,
            tool=tool_shown, name=name_shown, arguments=recorded_args,
            latency_s=time.perf_counter() - t0, provenance=prov,
            result=result, error=error, attempts=attempts, queued_ms=queued_ms,
        )
        if redact is not None:  # a failure's text is the server's words
            record = redacted_failure(record, redact)
        self._store.append(record, tag)
        if error is not None and error.tool is None:
            error.tool = target.tool
        if error is not None and redact is not None:  # a tool named after a secret (#37)
            error.hide(redact)
        journal = self._store.journal
        if batch is None and journal is not None and (not durable or journal.degraded):
            # Its intent was durable before sending, and its outcome is in the intent log
            # (store.append wrote it); SQLite follows with the next group commit. A
            # journal that is failing says so now, not only at close.
            warn_not_durable(journal, 1, 1, f"call {name_shown}")
        return record, result, error

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None, /, *,
                    timeout: float | None = None,
                    provenance: Provenance | Mapping[str, Any] | None = None,
                    progress: Progress = None, check: bool = True, retries: int = 0,
                    max_retry_wait: float = MAX_RETRY_WAIT_S, **kwargs: Any) -> Result:
        """The failed call is recorded before its error is raised: nothing is lost."""
        self._servers.check_open()
        if not isinstance(check, bool):
            raise TypeError(f"check is True or False, not {check!r}")
        retries = check_retries(retries)
        max_retry_wait = check_max_retry_wait(max_retry_wait)
        if arguments is not None and kwargs:
            raise TypeError("pass arguments as one mapping or as keywords, not both")
        if timeout is not None:
            seconds(timeout, "timeout")
        target = self.resolve(name)
        shown = progress_shown(progress, f"call {self.shown(target)[1]}")
        try:
            record, result, error = await self.invoke(
                target, kwargs if arguments is None else arguments, batch=None,
                timeout=timeout, provenance=provenance_of(provenance), progress=shown,
                check=check, retries=retries, max_retry_wait=max_retry_wait,
            )
        finally:
            if isinstance(shown, ProgressBar):
                shown.close()
        if error is not None:
            raise error
        assert result is not None
        for hook in self._result_hooks:
            try:
                await hook(self._entry_of(target), record, result)
            except Exception as exc:  # a view that cannot be prepared leaves the result be
                _log.warning("preparing the result of %s failed: %s: %s", record.call_id,
                             type(exc).__name__, exc)
        return result


def provenance_of(provenance: Provenance | Mapping[str, Any] | None) -> Provenance:
    """What a call records as its provenance: what it was given, and the running cell."""
    if provenance is None:
        base = Provenance()
    elif isinstance(provenance, Provenance):
        base = provenance
    else:
        base = Provenance.from_dict(provenance)
    return base.with_fields(cell=_cell_number())
