"""``bench.evaluate``: score servers by how well a model uses their tools.

Every case runs against every chosen server that has the tools it expects (bare names, so
``distance`` means geo's ``distance`` on geo and geo_precise's on geo_precise: the same
comparison as ``compare``, with a model choosing), ``repeats`` times. Each run is one row.

``steps=1`` asks the model once, offering the server's tools (as ``bench.tool_specs`` gives
them, names mapped back), scores its first reply and executes nothing: the cheap, safe eval of
tool choice and arguments. ``steps>1`` is a real run (``Runs.arun``): every call goes through
the bench (egress, pins, the argument check, the journal, a record with provenance ``case``,
``eval``, ``repeat``), and every call the model made in the run is scored. ``retries`` and
``rate`` apply to those calls (``steps=1`` sends none): one bucket per server for the whole
eval, shared by its rows, so ``concurrency`` runs together keep to the rate.

Why workers pulling from one queue: ``concurrency`` asks are in flight at once, never more,
whatever the number of cases, so 10,000 cases hold 10,000 small rows and ``concurrency``
conversations, not 10,000 coroutines. Each worker yields to the loop after every row, so a
model that answers at once (a scripted one, on the loop) never starves a neighbour's call; and
the bulk work before and after the rows (checking and hashing the cases, each server's specs,
the result frame) runs in a worker thread. ``cluster=`` asks on Dask workers instead
(``eval_cluster.py``, ``steps=1`` only).

Resuming: with ``journal=`` each finished row is appended to that file before the eval moves
on (``eval_journal.py``); ``resume=True`` takes the finished rows from it and asks the model
only for the others. A row whose model failed (a timeout, a 429) is asked again.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from toolbench._bench.calls.retry import (
    MAX_RETRY_WAIT_S,
    batch_buckets,
    check_max_retry_wait,
    check_retries,
)
from toolbench._bench.models.cases import Case, CaseError, as_cases
from toolbench._bench.models.eval_journal import EvalJournal, Key, fingerprint, key_of
from toolbench._bench.models.model import ModelFailed, ask, model_name
from toolbench._bench.models.specs import specs_without_secrets
from toolbench._bench.progress.bars import progress_bar
from toolbench._core.checks import seconds, whole
from toolbench._core.ids import did_you_mean

if TYPE_CHECKING:
    import pandas as pd
    from distributed import Client as DaskClient

    from toolbench._bench.models.run import Run
    from toolbench._bench.models.specs import ToolSpecs
    from toolbench._bench.report.tokens import TokenCounter
    from toolbench._bench.servers.servers import Servers
    from toolbench._core.redact import Redactor
    from toolbench._routing.pegboard_names import PegEntry

COLUMNS = ("case", "server", "repeat", "expected", "called", "tool_ok", "args_ok", "order_ok",
           "extra_calls", "forbidden", "passed", "steps", "tokens_in", "tokens_out",
           "model_ms", "tool_ms", "error", "run", "tokenizer")
"""An eval frame's columns: DESIGN's, then ``tokenizer`` (``usage`` when the model reported
its tokens, else the tokenizer that counted them: ``cl100k_base`` or ``estimate``)."""
TEXT_OR_NONE = ("expected", "called", "forbidden", "error", "run", "tokenizer")
"""Columns kept as objects, so a missing value stays None (pandas 3 would make it NaN)."""
NOT_OFFERED = " (not offered)"
"""Added to a called name that no offered tool has: it never matches an expected tool."""


class RunsLike(Protocol):
    """What evaluate needs of ``Runs`` (``runs.py``): one run of the model, recorded."""

    async def arun(self, model: Any, prompt: str | list[dict[str, Any]], *,
                   servers: Iterable[str] | None = ..., max_steps: int = ...,
                   model_timeout: float = ...,
                   provenance: Mapping[str, Any] | None = ...,
                   specs: ToolSpecs | None = ..., retries: int = ...,
                   max_retry_wait: float = ..., buckets: Mapping[str, Any] | None = ...,
                   ) -> Run: ...


@dataclass(frozen=True, slots=True)
class Offer:
    """One server's tools as the model sees them, and the way back to bare names."""

    server: str
    specs: ToolSpecs
    tools: list[dict[str, Any]]
    bare: dict[str, str]
    """provider-facing name → the tool's own name (``geo-distance`` → ``distance``)."""
    recorded: dict[str, str]
    """pegboard name as a record shows it (a secret redacted) → the tool's own name."""

    def called(self, name: str) -> str:
        """A name the model called, as a bare tool name (or marked not offered)."""
        bare = self.bare.get(name)
        return bare if bare is not None else f"{name}{NOT_OFFERED}"


@dataclass(frozen=True, slots=True)
class Plan:
    """The checked inputs of one evaluate."""

    cases: list[Case]
    offers: dict[str, Offer]
    units: list[tuple[Case, str, int]]
    keys: list[Key]
    """Each unit's journal key, in the same order."""
    fingerprint: str


class Evals:
    """``bench.evaluate``: keeps nothing of its own between evals."""

    def __init__(self, servers: Servers, runs: RunsLike | None) -> None:
        self._servers = servers
        self._runs = runs

    # -- planning ---------------------------------------------------------------------------
    async def plan(self, model: Any, cases: Any, servers: Iterable[str] | str | None,
                   repeats: int, steps: int) -> Plan:
        """Check everything before the model is asked anything: servers, cases, tool names.

        What the bench holds is read on the loop; the rest (checking 10,000 cases, hashing
        them, building each server's specs) runs in a worker thread, so the loop's other
        work (a neighbour's call) goes on meanwhile."""
        pegboard = self._servers.pegboard
        if servers is None:
            chosen = [s for s in self._servers.names() if pegboard.entries(s)]
        else:
            chosen = [servers] if isinstance(servers, str) else list(dict.fromkeys(servers))
            for name in chosen:
                if name not in self._servers:
                    raise ValueError(f"unknown server {name!r}; "
                                     f"{self._servers.unknown(name)}")
        if not chosen:
            raise ValueError("evaluate needs a connected server with tools; none is")
        entries = {s: pegboard.entries(s) for s in chosen}
        everywhere = {e.tool for e in pegboard.entries()}
        redactors = {s: self._servers.redactor(s) for s in chosen}  # specs never carry them
        mark = fingerprint(model_name(model), steps)
        return await asyncio.to_thread(_plan, cases, entries, everywhere, repeats, mark,
                                       redactors)

    # -- running ----------------------------------------------------------------------------
    async def evaluate(self, model: Any, cases: Any, servers: Iterable[str] | str | None = None,
                       *, repeats: int = 1, steps: int = 1, concurrency: int = 4,
                       journal: str | os.PathLike[str] | None = None, resume: bool = False,
                       model_timeout: float = 120.0, progress: bool | None = None,
                       cluster: DaskClient | None = None, retries: int = 0,
                       max_retry_wait: float = MAX_RETRY_WAIT_S,
                       rate: str | None = None) -> pd.DataFrame:
        """One row per case x server x repeat, in that order (see the module's docstring)."""
        self._servers.check_open()
        if not callable(model):
            raise TypeError(f"model is a function(messages, tools), not "
                            f"{type(model).__name__} {model!r}")
        whole(repeats, "repeats")
        whole(steps, "steps")
        whole(concurrency, "concurrency")
        timeout = seconds(model_timeout, "model_timeout")
        retries, max_retry_wait = check_retries(retries), check_max_retry_wait(max_retry_wait)
        buckets = batch_buckets(rate, self._servers.names())  # checks the rate
        if cluster is not None and (retries or rate is not None):
            raise ValueError("evaluate(cluster=...) takes no retries= or rate=: a cluster runs "
                             "steps=1 only, which sends no tool call to retry or pace; drop "
                             "them, or run the eval without the cluster")
        send = {"retries": retries, "max_retry_wait": max_retry_wait, "buckets": buckets}
        if resume and journal is None:
            raise ValueError("resume=True needs journal=: the file the earlier eval wrote its "
                             "rows to")
        if steps > 1 and self._runs is None:
            raise ValueError("steps > 1 needs the bench's runs; this bench has none")
        plan = await self.plan(model, cases, servers, repeats, steps)
        if cluster is not None:  # checked before anything runs or ships
            from toolbench._bench.models import eval_cluster

            eval_cluster.check_cluster(cluster, steps, model)
        book = None
        if journal is not None:
            book = await asyncio.to_thread(EvalJournal, journal, load=resume)
        try:
            if book is not None:
                book.warn_damaged()  # on the loop, where the eval's other warnings are
            rows = await self._rows(model, plan, steps, concurrency, timeout, book, progress,
                                    cluster, send)
        finally:
            if book is not None:
                book.close()
        if book is not None:
            book.warn_unwritten(len(rows))
        return await asyncio.to_thread(_frame, rows)

    async def _rows(self, model: Any, plan: Plan, steps: int, concurrency: int,
                    timeout: float, book: EvalJournal | None, progress: bool | None,
                    cluster: DaskClient | None, send: dict[str, Any]) -> list[dict[str, Any]]:
        slots: list[dict[str, Any] | None] = [None] * len(plan.units)
        todo: list[tuple[int, Key]] = []
        for index, key in enumerate(plan.keys):
            done = book.finished(key) if book is not None else None
            if done is not None:
                slots[index] = {c: done.get(c) for c in COLUMNS}
            else:
                todo.append((index, key))
        keys = dict(todo)
        bar = progress_bar(len(todo), "evaluate", progress)

        def finished(index: int, row: dict[str, Any]) -> None:
            """A row is in the journal before it counts as done."""
            if book is not None:
                book.write(keys[index], row)
            slots[index] = row
            bar.update()

        try:
            if cluster is not None:
                from toolbench._bench.models import eval_cluster

                await eval_cluster.evaluate_on_cluster(
                    cluster, model, [(index, *plan.units[index]) for index, _ in todo],
                    plan.offers, timeout=timeout, concurrency=concurrency,
                    partition=ask_rows, failed=failed_row, finished=finished)
            else:
                eval_id = uuid.uuid4().hex
                counter = Counting()

                async def one(index: int) -> None:
                    case, server, repeat = plan.units[index]
                    offer = plan.offers[server]
                    if steps == 1:
                        row = await first_reply(model, case, offer, repeat, timeout, counter)
                    else:
                        row = await self._run(model, case, offer, repeat, steps, timeout,
                                              eval_id, counter, send)
                    finished(index, row)

                await bounded([index for index, _ in todo], one, concurrency)
        finally:
            bar.close()
        return [row for row in slots if row is not None]

    async def _run(self, model: Any, case: Case, offer: Offer, repeat: int, steps: int,
                   timeout: float, eval_id: str, counter: Counting,
                   send: dict[str, Any]) -> dict[str, Any]:
        """``steps>1``: a real run on this server's tools; every call it made is scored.
        ``send``: the eval's ``retries``, ``max_retry_wait`` and shared ``buckets``."""
        assert self._runs is not None
        run = await self._runs.arun(
            model, case.prompt, servers=[offer.server], max_steps=steps, model_timeout=timeout,
            provenance={"case": case.id, "eval": eval_id, "repeat": repeat}, specs=offer.specs,
            **send)
        called = []
        model_ms = tool_ms = 0.0
        replies = 0
        for step in run.rows:
            if step.kind in ("tool", "refused"):
                name = str(step.tool)
                bare = offer.bare.get(name) or offer.recorded.get(name)
                arguments = step.arguments if isinstance(step.arguments, dict) else None
                called.append((bare or f"{name}{NOT_OFFERED}", arguments))
                if step.kind == "tool":
                    tool_ms += step.ms or 0.0
            elif step.kind in ("model", "answer"):
                replies += 1
                model_ms += step.ms or 0.0
            elif step.kind == "error":
                model_ms += step.ms or 0.0
        if run.usage:
            tokens: tuple[Any, Any, Any] = (run.usage.get("input"), run.usage.get("output"),
                                            "usage")
        else:
            await counter.ready(offer)  # the whole conversation per reply: off the loop
            tokens = await asyncio.to_thread(counter.count_run, offer, run.messages)
        return score_row(case, offer.server, repeat, called, error=run.error, steps=replies,
                    model_ms=model_ms, tool_ms=tool_ms, tokens=tokens, run=run.id)


async def bounded(items: list[int], work: Callable[[int], Awaitable[None]],
                  concurrency: int) -> None:
    """``work(item)`` for every item, ``concurrency`` at once: workers pulling from one
    iterator, each yielding to the loop after every item; the first failure cancels the rest."""
    queue: Iterator[int] = iter(items)

    async def worker() -> None:
        for item in queue:  # one shared iterator: each item is taken once
            await work(item)
            await asyncio.sleep(0)  # a model that answers at once never starves the loop

    tasks = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(items)))]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def first_reply(model: Any, case: Case, offer: Offer, repeat: int, timeout: float,
                      counter: Counting) -> dict[str, Any]:
    """``steps=1``: the model's first reply, scored; nothing is executed."""
    messages = _messages(case.prompt)
    try:
        turn = await ask(model, messages, offer.tools, timeout=timeout)
    except ModelFailed as exc:
        return score_row(case, offer.server, repeat, [], error=exc.reason, steps=0,
                    model_ms=None, tool_ms=0.0, tokens=(None, None, None), run=None)
    called = [(offer.called(c.name), c.arguments) for c in turn.tool_calls]
    if turn.usage:
        tokens = (turn.usage.get("input"), turn.usage.get("output"), "usage")
    else:
        await counter.ready(offer)
        tokens = counter.count(offer, messages, [turn.message])
    return score_row(case, offer.server, repeat, called, error=None, steps=1,
                model_ms=turn.model_ms, tool_ms=0.0, tokens=tokens, run=None)


async def ask_rows(model: Any, offers: dict[str, Offer], units: list[tuple[int, Case, str, int]],
                   timeout: float, concurrency: int) -> list[tuple[int, dict[str, Any]]]:
    """``steps=1`` rows ``(index, case, server, repeat)``, scored: a cluster's task."""
    counter = Counting()
    rows: dict[int, dict[str, Any]] = {}
    by_index = {unit[0]: unit for unit in units}

    async def one(index: int) -> None:
        _, case, server, repeat = by_index[index]
        rows[index] = await first_reply(model, case, offers[server], repeat, timeout, counter)

    await bounded(list(by_index), one, concurrency)
    return [(index, rows[index]) for index in by_index]


def failed_row(unit: tuple[int, Case, str, int], error: str) -> dict[str, Any]:
    """The row of a case whose asking failed outside the model (a lost cluster task)."""
    _, case, server, repeat = unit
    return score_row(case, server, repeat, [], error=error, steps=0, model_ms=None,
                     tool_ms=0.0, tokens=(None, None, None), run=None)


def _plan(cases: Any, entries: dict[str, list[PegEntry]], everywhere: set[str], repeats: int,
          mark: str, redactors: Mapping[str, Redactor | None]) -> Plan:
    """The checked cases, each server's offer, and every row's unit and journal key (run in
    a worker thread: pure work over what the loop read)."""
    checked = as_cases(cases)
    chosen = list(entries)
    tools = {s: {e.tool for e in found} for s, found in entries.items()}
    offered = sorted(set().union(*tools.values()))
    units: list[tuple[Case, str, int]] = []
    keys: list[Key] = []
    for case in checked:
        for position, expect in enumerate(case.expect):
            if not any(expect.tool in have for have in tools.values()):
                raise CaseError(
                    f"case {case.id!r}: key 'expect[{position}]': no server "
                    f"({', '.join(chosen)}) has a tool named {expect.tool!r}"
                    f"{did_you_mean(expect.tool, offered)}")
        for position, tool in enumerate(case.forbid):
            if tool not in everywhere:
                raise CaseError(f"case {case.id!r}: key 'forbid[{position}]': no server "
                                f"has a tool named {tool!r}"
                                f"{did_you_mean(tool, sorted(everywhere))}")
        wanted = {e.tool for e in case.expect}
        runs_on = [s for s in chosen if wanted <= tools[s]]
        if not runs_on:
            raise CaseError(f"case {case.id!r}: key 'expect': no server has all of "
                            f"{sorted(wanted)}; each has only some")
        digest = case.digest()
        for server in runs_on:
            for repeat in range(repeats):
                units.append((case, server, repeat))
                keys.append(key_of(mark, case.id, digest, server, repeat))
    offers = {s: _offer(s, found, redactors.get(s)) for s, found in entries.items()}
    return Plan(checked, offers, units, keys, mark)


def _offer(server: str, entries: list[PegEntry], redact: Redactor | None) -> Offer:
    """The server's tools as the model sees them: its secrets hidden (a tool named after one
    is offered under the redacted name, which ``specs.names`` maps back), as in a run."""
    specs = specs_without_secrets([(e.name, e.spec) for e in entries], lambda _name: redact,
                                  "openai")
    by_name = {e.name: e.tool for e in entries}
    bare = {provider: by_name[pegboard] for provider, pegboard in specs.names.items()
            if pegboard in by_name}
    recorded = {(redact(e.name) if redact is not None else e.name): e.tool for e in entries}
    return Offer(server, specs, list(specs), bare, recorded)


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The eval frame (built in a worker thread: 20,000 rows take a few hundred ms)."""
    import pandas as pd

    return pd.DataFrame({c: pd.Series([row[c] for row in rows],
                                      dtype=object if c in TEXT_OR_NONE else None)
                         for c in COLUMNS}, columns=list(COLUMNS))


def _messages(prompt: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [dict(m) for m in prompt]


def score_row(case: Case, server: str, repeat: int, called: list[tuple[str, Any]], *,
         error: str | None, steps: int, model_ms: float | None, tool_ms: float,
         tokens: tuple[Any, Any, Any], run: str | None) -> dict[str, Any]:
    """Score one conversation's tool calls against the case."""
    names = [name for name, _ in called]
    expected = [e.tool for e in case.expect]
    remaining = list(names)
    for tool in expected:  # multiset: [distance] expected, [distance, distance] called
        if tool in remaining:
            remaining.remove(tool)
    tool_ok = not names if not expected else len(remaining) == len(names) - len(expected)
    used: set[int] = set()
    args_ok = True
    for expect in case.expect:
        found = next((i for i, (name, arguments) in enumerate(called)
                      if i not in used and name == expect.tool and expect.accepts(arguments)),
                     None)
        if found is None:
            args_ok = False
        else:
            used.add(found)
    order_ok = True
    if case.order == "strict":
        position = 0
        for tool in expected:
            while position < len(names) and names[position] != tool:
                position += 1
            if position == len(names):
                order_ok = False
                break
            position += 1
    forbidden = [t for t in dict.fromkeys(names) if t in case.forbid]
    passed = error is None and tool_ok and args_ok and order_ok and not forbidden
    return {
        "case": case.id, "server": server, "repeat": repeat, "expected": expected,
        "called": names, "tool_ok": tool_ok, "args_ok": args_ok, "order_ok": order_ok,
        "extra_calls": len(remaining), "forbidden": forbidden, "passed": passed,
        "steps": steps, "tokens_in": tokens[0], "tokens_out": tokens[1],
        "model_ms": model_ms, "tool_ms": tool_ms, "error": error, "run": run,
        "tokenizer": tokens[2],
    }


class Counting:
    """Token counts for a model that reports no usage: the report's tokenizer (the best one
    installed), each server's tool list counted once."""

    def __init__(self) -> None:
        self._counter: TokenCounter | None = None
        self._tools: dict[str, int] = {}

    async def ready(self, offer: Offer) -> None:
        """Load the tokenizer and count the server's tools off the loop: reading cl100k_base's
        vocabulary takes a few hundred milliseconds, once per process, and a catalog of
        thousands of tools is megabytes of text."""
        if self._counter is None:
            from toolbench._bench.report.tokens import counter

            self._counter = await asyncio.to_thread(counter, None)
        if offer.server not in self._tools:
            found = await asyncio.to_thread(self._counter.count, _json(offer.tools))
            self._tools.setdefault(offer.server, found)

    def _get(self) -> TokenCounter:
        assert self._counter is not None, "await ready(offer) first"
        return self._counter

    def _tools_tokens(self, offer: Offer) -> int:
        return self._tools[offer.server]

    def count(self, offer: Offer, asked: list[dict[str, Any]],
              answered: list[dict[str, Any]]) -> tuple[int, int, str]:
        counter = self._get()
        return (self._tools_tokens(offer) + counter.count(_json(asked)),
                counter.count(_json(answered)), counter.name)

    def count_run(self, offer: Offer, messages: list[dict[str, Any]]) -> tuple[int, int, str]:
        """Each reply read the conversation before it and the tools; it wrote its message."""
        counter = self._get()
        tokens_in = tokens_out = 0
        for index, message in enumerate(messages):
            if message.get("role") == "assistant":
                tokens_in += self._tools_tokens(offer) + counter.count(_json(messages[:index]))
                tokens_out += counter.count(_json([message]))
        return tokens_in, tokens_out, counter.name


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
