"""Many calls at once: ``Batches`` (``compare``, ``map``), ``FetchBatches`` (reads and prompt
fetches in bulk), the lanes they run in (``batch.py``), Dask clusters (``cluster.py``, the
driver; ``cluster_worker.py``, the workers) and the faces.

It may import ``toolbench._bench.calls``, ``catalog``, ``servers``, ``journal``,
``progress``, and the layers below ``_bench``.
"""
