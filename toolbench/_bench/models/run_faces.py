"""The runs' faces on ``Bench``: ``run`` and ``arun``, blocking and awaitable.

``RunFaces`` holds no state: each public method keeps its signature and docstring here and
hands off to ``Runs`` (``runs.py``) in one step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from toolbench._bench.calls.retry import MAX_RETRY_WAIT_S
from toolbench._loop import get_loop

if TYPE_CHECKING:
    from toolbench._bench.models.run import Run
    from toolbench._bench.models.runs import Runs
    from toolbench._bench.models.specs import ToolSpecs


class RunFaces:
    """A model using the bench's tools, every call recorded; a face over ``Runs``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        runs: Runs

    def run(self, model: Callable[..., Any], prompt: str | list[dict[str, Any]], *,
            servers: str | Iterable[str] | None = None,
            tools: str | Iterable[str] | None = None, system: str | None = None,
            max_steps: int = 8, model_timeout: float = 120.0, max_result_chars: int = 20_000,
            provenance: Mapping[str, Any] | None = None,
            specs: ToolSpecs | None = None, retries: int = 0,
            max_retry_wait: float = MAX_RETRY_WAIT_S, rate: str | None = None) -> Run:
        """Hand the bench's tools to ``model`` and let it work on ``prompt``, step by step.

        Each step asks the model for its next message, then runs every tool call it made
        through the bench (egress, pins, the argument check, the journal and a record, with
        provenance ``{"run", "step", "model"}``) and hands each result back as a tool
        message. A call of a tool the model was not offered (a made-up name, another
        server's tool), or with arguments that are not a JSON object, fail the tool's
        schema, or exceed 1 MB, is refused: never sent, recorded as ``Refused``, and told
        to the model as a tool error. The run stops when the model answers without a tool
        call (``stopped="answered"``), after ``max_steps`` replies (``"max_steps"``), or
        when the model fails (``"error"``): it raised, took longer than ``model_timeout``,
        or sent neither text nor tool calls. A model's failure never raises: it is the
        run's ``error``, and every call made before it stays recorded.

        Args:
            model: ``model(messages, tools)``, sync or async, in the OpenAI chat format,
                returning the assistant's message (a dict, the ``openai`` client's message,
                a ``tb.Reply(message, usage=...)``, or plain text). ``tb.ScriptedModel``
                is an offline one; ``tb.models.openai(client, model=...)`` wraps a client.
            prompt: the user's request, or a list of OpenAI-format messages to start from.
            servers: offer only these servers' tools (default: every server's).
            tools: offer only these tools (pegboard names, or a tool's own name).
            system: a system message put first.
            max_steps: the most model replies (1 to 1,000); a step is one reply and the
                tool calls it makes.
            model_timeout: seconds one reply may take (a sync model runs in a worker
                thread; one that hangs is left behind and the run ends).
            max_result_chars: the most characters of one result handed back to the model;
                the cut is said in the message, and each record's provenance keeps the
                cap (``"max_result_chars"``). Records keep the full result.
            provenance: more fields recorded with each call (e.g. ``{"case": "c1"}``).
            specs: the tools to offer, as ``bench.tool_specs(format="openai")`` made them
                (instead of ``servers``/``tools``).
            retries: how many times to try again a tool call that did not happen because
                the server was busy or away (HTTP 429/503 before it ran anything, a refused
                reconnect), as ``call`` and ``map`` do; a call that may have run is never
                retried. Each attempt is its own record in ``bench.records``; the run keeps
                the last (``attempts``, and ``provenance["retried"]``).
            max_retry_wait: the longest wait before a retry, in seconds (a server's
                ``Retry-After`` is honoured up to it).
            rate: at most this many of the run's tool calls per server (``"10/s"``,
                ``"600/min"``), one bucket per server for the whole run; a call waits its
                turn within its timeout, and its record's ``queued_ms`` says how long.

        Returns:
            A ``Run``: ``messages``, ``steps`` (DataFrame), ``calls`` (its records),
            ``text``, ``usage``, ``stopped``, ``error``; in a notebook an escaped
            transcript with a card per tool call.

        Raises:
            TypeError, ValueError: a bad argument (the message names it: ``retries``,
                ``max_retry_wait`` and ``rate`` by the rules of ``map``), or a server or
                tool to offer that is not on the bench.

        Example:
            >>> model = tb.ScriptedModel([{"tool": "geo-distance", "arguments": {
            ...     "from_city": "London", "to_city": "Paris"}}, "About 344 km."])
            >>> bench.run(model, "How far is Paris from London?").text  # doctest: +SKIP
            'About 344 km.'
        """
        return get_loop().run(self.runs.arun, model, prompt, servers=servers, tools=tools,
                              system=system, max_steps=max_steps, model_timeout=model_timeout,
                              max_result_chars=max_result_chars, provenance=provenance,
                              specs=specs, retries=retries, max_retry_wait=max_retry_wait,
                              rate=rate)

    async def arun(self, model: Callable[..., Any], prompt: str | list[dict[str, Any]], *,
                   servers: str | Iterable[str] | None = None,
                   tools: str | Iterable[str] | None = None, system: str | None = None,
                   max_steps: int = 8, model_timeout: float = 120.0,
                   max_result_chars: int = 20_000,
                   provenance: Mapping[str, Any] | None = None,
                   specs: ToolSpecs | None = None, retries: int = 0,
                   max_retry_wait: float = MAX_RETRY_WAIT_S, rate: str | None = None) -> Run:
        """Awaitable :meth:`run`: the same arguments, result and errors."""
        return await get_loop().arun(self.runs.arun, model, prompt, servers=servers,
                                     tools=tools, system=system, max_steps=max_steps,
                                     model_timeout=model_timeout,
                                     max_result_chars=max_result_chars, provenance=provenance,
                                     specs=specs, retries=retries,
                                     max_retry_wait=max_retry_wait, rate=rate)
