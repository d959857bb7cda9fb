"""The eval's faces on ``Bench``: ``evaluate`` and ``aevaluate``.

``EvalFaces`` holds no state: each public method keeps its signature and docstring here and
hands off to ``Evals`` (``evaluate.py``) in one step, on the shared loop.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from toolbench._bench.calls.retry import MAX_RETRY_WAIT_S
from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd
    from distributed import Client as DaskClient

    from toolbench._bench.models.evaluate import Evals


class EvalFaces:
    """Score servers by how well a model uses their tools; a face over ``Evals``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        evals: Evals

    def evaluate(self, model: Any, cases: Any, servers: Iterable[str] | str | None = None, *,
                 repeats: int = 1, steps: int = 1, concurrency: int = 4,
                 journal: str | os.PathLike[str] | None = None, resume: bool = False,
                 model_timeout: float = 120.0, progress: bool | None = None,
                 cluster: DaskClient | None = None, retries: int = 0,
                 max_retry_wait: float = MAX_RETRY_WAIT_S, rate: str | None = None) -> pd.DataFrame:
        """Run every case against every server that has its tools; one row per case x server
        x repeat, scored.

        A case is ``{"id", "prompt", "expect": [{"tool", "arguments", "match"}], "forbid",
        "order"}`` with bare tool names (``distance``), so one case runs on every server that
        has the tool. ``steps=1`` (default) asks the model once, offering the server's tools,
        and scores its first reply without executing anything; ``steps=N`` runs the model
        with the tools for up to N steps, every call through the bench and recorded.
        Everything is checked before the model is asked anything.

        Args:
            model: ``model(messages, tools)``, sync or async, in the OpenAI chat format
                (``tb.ScriptedModel``, ``tb.models.openai(client, model=...)``, your own).
            cases: a list of case dicts, a DataFrame (a row each), or a ``.json``,
                ``.jsonl`` or ``.yaml`` file (see ``tb.load_cases``).
            servers: only these servers (default: every connected server with tools).
            repeats: how many times each case runs on each server (models vary).
            steps: the model replies a run may take; 1 executes nothing.
            concurrency: model asks in flight at once.
            journal: a file (``eval.jsonl``) each finished row is appended to before the eval
                moves on, so a killed eval can resume; not the bench's own journal.
            resume: take the rows the journal already holds instead of asking again (a row
                whose model failed is asked again).
            model_timeout: seconds a model reply may take; past it the row's ``error`` says so.
            progress: a progress bar (``None``: only for long evals).
            cluster: a ``dask.distributed.Client`` (the ``dask`` extra): the model is asked on
                its workers, ``concurrency`` at a time per task, and rows come back into the
                journal and the result as on one machine. ``steps=1`` only: a step-1 row needs
                no connection; tool calls on the workers are not supported. The model travels
                pickled (a notebook's function by value, a module's by reference).
            retries: with ``steps>1``, how many times to try again a tool call that did not
                happen because the server was busy or away (HTTP 429/503 before it ran
                anything), as ``map`` does; a call that may have run is never retried.
                Tool calls only: a model's own failure is the row's ``error`` (a resumed
                eval asks again), and ``steps=1`` sends nothing, so it has no effect there.
            max_retry_wait: the longest wait before a retry, in seconds.
            rate: with ``steps>1``, at most this many tool calls per server (``"10/s"``,
                ``"600/min"``), one bucket per server shared by every row of the eval;
                each record's ``queued_ms`` says how long its call waited. Tool calls only.

        Returns:
            An eval frame: ``case``, ``server``, ``repeat``, ``expected``, ``called``,
            ``tool_ok``, ``args_ok``, ``order_ok``, ``extra_calls``, ``forbidden``,
            ``passed``, ``steps``, ``tokens_in``, ``tokens_out``, ``model_ms``, ``tool_ms``,
            ``error``, ``run`` and ``tokenizer`` (``usage``, or what counted the tokens).
            ``df.tb.scores()``, ``df.tb.confusion()`` and ``df.tb.plot_scores()`` read it.

        Raises:
            CaseError: a case with an unknown key, no prompt, or a tool no server has (a
                ValueError naming the case and the key).
            ValueError: an unknown server, a bad number, ``resume`` without ``journal``, a
                journal file that is not an eval journal, ``cluster`` with ``steps>1`` or
                with ``retries``/``rate``, or a bad ``retries``, ``max_retry_wait`` or
                ``rate`` (the rules of ``map``).

        Example:
            >>> model = tb.ScriptedModel([{"tool": "geo-distance",
            ...     "arguments": {"from_city": "London", "to_city": "Paris"}}])  # doctest: +SKIP
            >>> df = bench.evaluate(model, [{"id": "lp", "prompt": "London to Paris?",
            ...     "expect": ["distance"]}])  # doctest: +SKIP
            >>> df.tb.scores()  # doctest: +SKIP
        """
        return get_loop().run(self.evals.evaluate, model, cases, servers, repeats=repeats,
                              steps=steps, concurrency=concurrency, journal=journal,
                              resume=resume, model_timeout=model_timeout, progress=progress,
                              cluster=cluster, retries=retries,
                              max_retry_wait=max_retry_wait, rate=rate)

    async def aevaluate(self, model: Any, cases: Any,
                        servers: Iterable[str] | str | None = None, *, repeats: int = 1,
                        steps: int = 1, concurrency: int = 4,
                        journal: str | os.PathLike[str] | None = None, resume: bool = False,
                        model_timeout: float = 120.0, progress: bool | None = None,
                        cluster: DaskClient | None = None, retries: int = 0,
                        max_retry_wait: float = MAX_RETRY_WAIT_S,
                        rate: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`evaluate`: the same arguments, result and errors."""
        return await get_loop().arun(self.evals.evaluate, model, cases, servers,
                                     repeats=repeats, steps=steps, concurrency=concurrency,
                                     journal=journal, resume=resume,
                                     model_timeout=model_timeout, progress=progress,
                                     cluster=cluster, retries=retries,
                                     max_retry_wait=max_retry_wait, rate=rate)
