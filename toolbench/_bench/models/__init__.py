"""A model in the loop: the model function (``model.py``), tool specs in a provider's format
(``specs.py``), runs (``runs.py``), the sampling handler (``sampler.py``), evals and their
faces.

It may import ``toolbench._bench.many``, ``calls``, ``catalog``, ``servers``, ``journal``,
``progress``, ``apps``, and the layers below ``_bench``.
"""
