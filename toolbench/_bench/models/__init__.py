"""A model in the loop: the model function (``model.py``), tool specs in a provider's format
(``specs.py``, its face ``spec_faces.py``), the provider adapters (``adapters.py``), runs
(``runs.py``), the sampling handler (``sampler.py``), evals and their faces.

It may import ``toolbench._bench.many``, ``calls``, ``catalog``, ``servers``, ``journal``,
``progress``, ``apps``, ``report`` (the portability rules), and the layers below ``_bench``.
"""
