"""Many calls at once: ``compare``, ``map``, reads and fetches in bulk, Dask clusters."""
