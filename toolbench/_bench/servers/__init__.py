"""The bench's servers: ``Servers`` (rows, settings, roots, log level), configuration files,
names on the bench, the ``servers`` table, hiding secrets, and the faces.

It may import ``toolbench._bench.journal``, ``progress``, and the layers below ``_bench``.
"""
