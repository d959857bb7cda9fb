"""``bench.run``: a model uses the bench's tools, every call through the bench.

``Runs`` keeps nothing of its own. :meth:`Runs.arun` loops: ask the model (``model.py``)
with the offered tools in the OpenAI format (``specs.py``); send each tool call it makes
through ``Calls.invoke``, the one path of every call, so egress, pins, the argument check,
the journal and the record all apply, with provenance ``{"run", "step", "model"}``; hand
each outcome back as a tool message (``run.py``); stop when the model answers without a tool
call, at ``max_steps``, or when the model fails. ``retries`` and ``rate`` are ``map``'s
(checked by the same rules, ``calls/retry.py``), with one batch bucket per server made once
per run, so a run's calls keep to the rate together. A call the model was not offered, or whose
arguments cannot be used, is refused here: never sent, but recorded (as ``Calls`` records a
refusal before sending) and told to the model. A model's failure is the run's ``error``;
nothing raises out of a run but a mistake in its own arguments (or an interrupt).

It may import ``toolbench._bench.calls``, ``journal``, ``servers``, ``models`` siblings, and
the layers below ``_bench``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolbench._bench.calls.calling import provenance_of
from toolbench._bench.calls.retry import (
    MAX_RETRY_WAIT_S,
    batch_buckets,
    check_max_retry_wait,
    check_retries,
)
from toolbench._bench.journal.record import Record, make_record, new_call_id, utcnow
from toolbench._bench.models.model import ModelFailed, ToolCall, ask, model_name
from toolbench._bench.models.run import (
    Run,
    Step,
    add_usage,
    handed_back,
    refusal_message,
)
from toolbench._bench.models.specs import ToolSpecs, secret_free_specs
from toolbench._core.errors import Refused, ToolError
from toolbench._core.ids import Provenance

if TYPE_CHECKING:
    from toolbench._bench.calls.calling import Calls
    from toolbench._bench.journal.store import RecordStore
    from toolbench._bench.servers.naming import Target
    from toolbench._bench.servers.servers import Servers
    from toolbench._core.client import Result, ToolSpec
    from toolbench._core.rates import TokenBucket
    from toolbench._routing.pegboard import PegBoard, PegEntry

__all__ = ["MAX_STEPS_LIMIT", "NO_SERVER", "Runs", "offered_tools"]

_log = logging.getLogger(__name__)
ResultHook = Callable[[Any, Record, "Result"], Awaitable[None]]
MAX_STEPS_LIMIT = 1_000
"""The most steps one run may be given: a model that never stops still ends."""
NO_SERVER = "(none)"
"""The server of a record of a tool no server has (a made-up name): not a legal server name,
so it is never taken for one (a journal needs one)."""
_SHOWN_NAMES = 20  # offered names listed in a refusal told to the model
_SHOWN_INVALID = 1_000  # characters of unusable arguments kept in the record


class Runs:
    """``run``/``arun``: the tool-use loop of one model over the bench's tools."""

    def __init__(self, servers: Servers, pegboard: PegBoard, calls: Calls, store: RecordStore,
                 attach: ResultHook | None = None) -> None:
        self._servers = servers
        self._pegboard = pegboard
        self._calls = calls
        self._store = store
        self._attach = attach  # gives a result its MCP Apps view, as a single call's gets

    def specs(self, servers: str | Iterable[str] | None = None,
              tools: str | Iterable[str] | None = None) -> ToolSpecs:
        """The tools a run offers, in the OpenAI format, without any server's secrets."""
        return secret_free_specs(self._servers, self._pegboard,
                                 offered_tools(self._pegboard, servers, tools), "openai")

    async def arun(self, model: Callable[..., Any], prompt: str | list[dict[str, Any]], *,
                   servers: str | Iterable[str] | None = None,
                   tools: str | Iterable[str] | None = None, system: str | None = None,
                   max_steps: int = 8, model_timeout: float = 120.0,
                   max_result_chars: int = 20_000,
                   provenance: Mapping[str, Any] | None = None,
                   specs: ToolSpecs | None = None, retries: int = 0,
                   max_retry_wait: float = MAX_RETRY_WAIT_S, rate: str | None = None,
                   buckets: Mapping[str, TokenBucket] | None = None) -> Run:
        """Run the loop; the :class:`Run` says how it ended (a model's failure included).

        ``buckets`` (an eval's, one per server for all its rows) stands in for ``rate``'s own.
        """
        self._servers.check_open()
        if not callable(model):
            raise TypeError(f"model is a function(messages, tools), not "
                            f"{type(model).__name__} {model!r}")
        messages = _conversation(prompt, system)
        _count(max_steps, "max_steps", 1, MAX_STEPS_LIMIT)
        _count(max_result_chars, "max_result_chars", 1, None)
        if (isinstance(model_timeout, bool) or not isinstance(model_timeout, int | float)
                or not math.isfinite(model_timeout) or model_timeout <= 0):
            raise ValueError(f"model_timeout is a positive, finite number of seconds, not "
                             f"{model_timeout!r}")
        retries, max_retry_wait = check_retries(retries), check_max_retry_wait(max_retry_wait)
        if buckets is None:  # checks the rate; made once, before anything runs
            buckets = batch_buckets(rate, self._servers.names())
        elif rate is not None:
            raise ValueError("give a run rate= or buckets=, not both")
        extra = Provenance.from_dict(provenance).as_dict()  # checked before anything runs
        if specs is None:
            specs = self.specs(servers, tools)
        elif not isinstance(specs, ToolSpecs) or specs.format != "openai":
            raise ValueError(f"specs= takes bench.tool_specs(format='openai'), not {specs!r}")
        run = Run(id=new_call_id(), model=model_name(model), messages=messages)
        base = {**extra, "run": run.id, "model": run.model, "max_result_chars": max_result_chars}
        offered = list(specs.tools)
        for step in range(1, max_steps + 1):
            asked = time.perf_counter()
            try:
                turn = await ask(model, list(run.messages), offered, timeout=model_timeout)
            except ModelFailed as exc:
                run.stopped, run.error = "error", exc.reason
                run.rows.append(Step(step, "error", ok=False, error=exc.reason,
                                     ms=(time.perf_counter() - asked) * 1000))
                return run
            run.messages.append(turn.message)
            run.usage = add_usage(run.usage, turn.usage)
            tokens = sum(turn.usage.values()) if turn.usage else None
            if not turn.tool_calls:
                run.rows.append(Step(step, "answer", ms=turn.model_ms, tokens=tokens))
                run.text, run.stopped = turn.text, "answered"
                return run
            run.rows.append(Step(step, "model", ms=turn.model_ms, tokens=tokens))
            prov = provenance_of({**base, "step": step})
            for call in turn.tool_calls:
                await self._tool(run, step, call, specs, prov, max_result_chars,
                                 retries=retries, max_retry_wait=max_retry_wait,
                                 buckets=buckets)
        run.stopped = "max_steps"
        return run

    async def _tool(self, run: Run, step: int, call: ToolCall, specs: ToolSpecs,
                    prov: Provenance, max_chars: int, *, retries: int, max_retry_wait: float,
                    buckets: Mapping[str, TokenBucket]) -> None:
        """One tool call of the model: refused here, or sent through ``Calls.invoke`` (with
        the run's retries, and its bucket for the call's server). With retries, the record
        kept here is the last attempt's (``attempts``; ``provenance["retried"]`` lists the
        others, which ``bench.records`` holds like any call's)."""
        name = specs.pegboard_name(call.name)
        wanted = name if name is not None else call.name
        target: Target | None = None
        if wanted in self._pegboard:  # a plain lookup: no "did you mean" for a made-up name
            try:
                target = self._calls.resolve(wanted)
            except (ToolError, TypeError, ValueError):
                target = None
        told = ""  # what the model is told besides the refusal: the names it may use
        if name is None:
            refusal, told = _not_offered(call.name, target), _offered(specs)
        elif target is None:
            refusal = f"tool {name!r} is no longer on the bench (its server went away)"
        elif call.problem is not None:
            refusal = f"the arguments of {call.name!r} cannot be used: {call.problem}"
        else:
            refusal = None
        if refusal is not None:
            redact = self._servers.redactor(target.tool.server) if target is not None else None
            if redact is not None:  # the model may name a tool named after a secret (#37)
                refusal = redact(refusal)
            record = self._refuse(call, target, refusal, prov)
            run.records.append(record)
            run.rows.append(Step(step, "refused", tool=record.name, arguments=_shown(call),
                                 ok=False, error=refusal, call_id=record.call_id))
            run.messages.append(_tool_message(call, refusal_message(refusal + told)))
            return
        assert target is not None and call.arguments is not None
        record, result, error = await self._calls.invoke(
            target, call.arguments, batch=None, timeout=None, provenance=prov, retries=retries,
            max_retry_wait=max_retry_wait, rate=buckets.get(target.tool.server))
        if result is not None and error is None and self._attach is not None:
            try:
                await self._attach(self._entry(target), record, result)
            except Exception as exc:  # a view that cannot be prepared leaves the result be
                _log.warning("preparing the result of %s failed: %s: %s", record.call_id,
                             type(exc).__name__, exc)
        shown_result = result if result is not None else getattr(error, "result", None)
        if shown_result is not None:
            run.results[record.call_id] = shown_result
        run.records.append(record)
        kind = "refused" if error is not None and isinstance(error, Refused) else "tool"
        run.rows.append(Step(step, kind, tool=record.name, arguments=call.arguments,
                             ok=record.ok, ms=record.latency_ms, error=record.error,
                             call_id=record.call_id))
        run.messages.append(_tool_message(call, handed_back(result, error, max_chars)))

    def _refuse(self, call: ToolCall, target: Target | None, detail: str,
                prov: Provenance) -> Record:
        """A record of a call refused before sending, kept like any other (journal too)."""
        if target is not None:
            tool_shown, name_shown = self._calls.shown(target)
            server, error = target.tool.server, Refused(detail, tool=target.tool)
        else:
            named = _cut(call.name, 200) or "(no name)"  # a journal needs one
            server, tool_shown, name_shown = NO_SERVER, named, named
            error = Refused(detail)
        record = make_record(
            call_id=new_call_id(), batch=None, started=utcnow(), server=server,
            tool=tool_shown, name=name_shown,
            arguments=call.arguments if call.arguments is not None else {
                "_invalid": _cut(call.raw_arguments)},
            latency_s=None, provenance=prov.as_dict(), error=error)
        self._store.append(record, record.call_id)
        return record

    def _entry(self, target: Target) -> PegEntry | None:
        try:
            entry = self._pegboard.entry(target.name)
        except ToolError:
            return None
        return entry if entry.tool_id == target.tool else None


def offered_tools(pegboard: PegBoard, servers: str | Iterable[str] | None,
                  tools: str | Iterable[str] | None) -> list[tuple[str, ToolSpec]]:
    """``(pegboard name, spec)`` of the tools a run offers: every tool, or those of
    ``servers``, narrowed to ``tools`` (pegboard names, or a tool's own name).

    Raises:
        ValueError: a server that is not on the bench, or a tool no offered server has.
    """
    wanted_servers = _names(servers, "servers")
    if wanted_servers is None:
        entries = pegboard.entries()
    else:
        missing = [s for s in wanted_servers if pegboard.namespace_of(s) is None]
        if missing:
            raise ValueError(f"servers: {missing[0]!r} is not on the bench (it has "
                             f"{', '.join(map(repr, pegboard.list_services())) or 'none'})")
        entries = [e for s in wanted_servers for e in pegboard.entries(s)]
    wanted_tools = _names(tools, "tools")
    if wanted_tools is not None:
        unknown = [t for t in wanted_tools
                   if not any(t in (e.name, e.tool) for e in entries)]
        if unknown:
            raise ValueError(f"tools: no offered server has a tool {unknown[0]!r}")
        chosen = set(wanted_tools)
        entries = [e for e in entries if e.name in chosen or e.tool in chosen]
    return [(e.name, e.spec) for e in entries]


def _names(value: str | Iterable[str] | None, what: str) -> list[str] | None:
    if value is None:
        return None
    names = [value] if isinstance(value, str) else list(value)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"{what} are names (str), not {type(bad[0]).__name__} {bad[0]!r}")
    return names


def _conversation(prompt: str | list[dict[str, Any]], system: str | None
                  ) -> list[dict[str, Any]]:
    """The opening messages: ``system`` (if any), then the prompt as a user message, or the
    caller's own messages (copied)."""
    if system is not None and not isinstance(system, str):
        raise TypeError(f"system is a str, not {type(system).__name__} {system!r}")
    head = [{"role": "system", "content": system}] if system else []
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError("prompt is empty: give the model something to do")
        return [*head, {"role": "user", "content": prompt}]
    if isinstance(prompt, list) and prompt and all(
            isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in prompt):
        return [*head, *(dict(m) for m in prompt)]
    raise TypeError(f"prompt is a str or a non-empty list of OpenAI-format messages "
                    f"(dicts with a 'role'), not {_cut(repr(prompt), 200)}")


def _count(value: object, what: str, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        bound = f"from {low:,} to {high:,}" if high is not None else f"of at least {low:,}"
        raise ValueError(f"{what} is a whole number {bound}, not {value!r}")


def _not_offered(name: str, target: Target | None) -> str:
    where = (f" (it is a tool of server {target.tool.server!r}, which this run does not offer)"
             if target is not None else "")
    return f"tool {_cut(name, 200)!r} was not offered to the model{where}"


def _offered(specs: ToolSpecs) -> str:
    """The names the model may call, as it was given them (for the model, not the record)."""
    offered = list(specs.names)
    listed = ", ".join(offered[:_SHOWN_NAMES]) + (
        f" and {len(offered) - _SHOWN_NAMES:,} more" if len(offered) > _SHOWN_NAMES else "")
    return f"; offered: {listed or 'none'}"


def _tool_message(call: ToolCall, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.id, "content": content}


def _shown(call: ToolCall) -> Any:
    return call.arguments if call.arguments is not None else _cut(call.raw_arguments)


def _cut(text: str, limit: int = _SHOWN_INVALID) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
