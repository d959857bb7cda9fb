"""The connection doctor: one server's connection tried step by step (stdio or HTTP), each
step with its outcome, time and evidence; and its face.

It may import ``toolbench._bench.clients``, ``servers``, and the layers below ``_bench``.
"""
