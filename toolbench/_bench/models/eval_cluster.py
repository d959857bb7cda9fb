"""``bench.evaluate(..., cluster=client)``: the model's asks on a Dask cluster's workers.

Why only ``steps=1``: a step-1 row asks the model once and executes nothing, so a worker needs
the model, the cases and each server's tool list (plain data, shipped with the task), and no
connection at all. That is where an eval's time goes (the model), and what spreads well. A
``steps>1`` row calls tools; on a cluster those calls would need each worker's own
connections and the driver's grants that make ``map(..., cluster=)`` exact after a lost
worker (``many/cluster.py``). That is not built: ``cluster=`` with ``steps>1`` is refused
before anything runs.

Only this module and ``many/cluster.py`` (whose partition outcome and cancelling it shares)
import ``distributed`` (the ``dask`` extra), and only ``evaluate(..., cluster=)`` imports this
module.

**Partitions.** The rows to ask travel in partitions cut as ``map``'s are (``many/cluster.py``:
about four per worker thread, at most ``MAX_PARTITION`` rows each), one Dask task each, under
an explicit key (``toolbench-eval-3-1a2b3c4d``). A task runs its rows ``concurrency`` at a time
on the worker (its own event loop, in the worker's thread) and returns them scored. The driver
writes each partition's rows to the eval journal as the partition finishes, so ``resume=True``
works as on one machine; the progress bar counts rows.

**What a failure costs.** A model that cannot be pickled is a ``ValueError`` before any task
runs. A worker lost mid-partition: Dask runs the task again elsewhere, and its rows are asked
again (a model ask changes nothing, unlike a tool call). A task that fails for good
(``KilledWorker``, a model the workers cannot import): each of its rows is an error row that
says so, never an exception, and a resumed eval asks for it again. An interrupt cancels the
tasks not finished; the rows already written stay.

The model travels pickled (Dask uses cloudpickle): a function defined in a notebook travels by
value, a module's function by reference (the module must be importable on the workers).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from distributed import Client, as_completed

from toolbench._bench.many.cluster import (
    cancel_unfinished,
    check_client,
    partition_outcome,
    partitions,
)

if TYPE_CHECKING:
    from distributed import Future

CANCEL_BOUND_S = 15.0
"""How long cancelling after an interrupt may take."""

Unit = tuple[int, Any, str, int]
"""(row index, case, server, repeat)."""
Rows = list[tuple[int, dict[str, Any]]]
Partition = Callable[[Any, dict[str, Any], list[Unit], float, int],
                     Coroutine[Any, Any, Rows]]
"""What asks for a partition's rows: ``evaluate.ask_rows``, handed in (evaluate imports this
module, so this one may not import it) and shipped to the workers by reference."""


def check_cluster(cluster: Any, steps: int, model: Any) -> None:
    """Refuse, before anything runs, what cannot work (a model that cannot be pickled
    included: Dask would fail it in a background thread, with a message about its graph)."""
    check_client(cluster)
    if steps != 1:
        raise ValueError(f"evaluate(cluster=...) runs steps=1 evals (the model's first reply, "
                         f"no tool call), not steps={steps}: tool calls on the workers are not "
                         "supported. Run steps>1 without cluster=")
    import cloudpickle  # type: ignore[import-untyped]

    try:
        cloudpickle.dumps(model)
    except Exception as exc:  # whatever the model's own pickling raises
        raise ValueError(f"the model cannot be sent to the cluster's workers (Dask pickles "
                         f"it): {type(exc).__name__}: {exc}") from exc


def eval_partition(partition: Partition, model: Any, offers: dict[str, Any],
                   units: list[Unit], timeout: float, concurrency: int) -> Rows:
    """A Dask task: score ``units`` on this worker, ``concurrency`` asks at a time, on an
    event loop of its own (the worker's thread has none)."""
    return asyncio.run(partition(model, offers, units, timeout, concurrency))


async def evaluate_on_cluster(client: Client, model: Any, units: list[Unit],
                              offers: dict[str, Any], *, timeout: float, concurrency: int,
                              partition: Partition,
                              failed: Callable[[Unit, str], dict[str, Any]],
                              finished: Callable[[int, dict[str, Any]], None]) -> None:
    """Ask for ``units`` on the cluster with ``partition``; ``finished(index, row)`` for each
    row, on the loop, as its partition comes back (``failed(unit, why)`` makes the rows of a
    task that failed for good)."""
    if not units:
        return
    job = uuid.uuid4().hex
    threads = await anyio.to_thread.run_sync(lambda: sum(client.nthreads().values()))
    parts = partitions(units, threads)
    wanted = {server for _, _, server, _ in units}
    shipped = {name: offer for name, offer in offers.items() if name in wanted}
    futures: list[Future[Any]] = []

    def submit() -> tuple[list[Future[Any]], as_completed]:
        made = [client.submit(eval_partition, partition, model, shipped, part, timeout,
                              concurrency,
                              key=f"toolbench-eval-{n}-{job[:8]}", pure=False)
                for n, part in enumerate(parts)]
        return made, as_completed(made)

    try:
        futures, done = await anyio.to_thread.run_sync(submit)
        number_of = {f.key: n for n, f in enumerate(futures)}
        for _ in futures:
            future = await anyio.to_thread.run_sync(next, done, abandon_on_cancel=True)
            outcome = await anyio.to_thread.run_sync(partition_outcome, future, "rows")
            part = parts[number_of[future.key]]
            if isinstance(outcome, BaseException):
                why = (f"the Dask task asking for this row failed: {type(outcome).__name__}: "
                       f"{outcome}")
                for unit in part:
                    finished(unit[0], failed(unit, why))
            else:
                for index, row in outcome:
                    finished(index, row)
    except BaseException:
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_BOUND_S):
            await cancel_unfinished(client, futures)
        raise
