"""Layer 5, what a notebook shows: the notebook ``Bench`` (``bench``), the ``df.tb`` accessor,
the explorer and its sections (``explorer/``), escaped HTML views (``views/``), and a person's
part, the ask widgets and forms (``ask/``).

May import every layer below (``_core``, ``_transports``, ``_routing``, ``_loop``, ``_bench``)
and the bundled ``demo``; never ``_cli``.
"""
