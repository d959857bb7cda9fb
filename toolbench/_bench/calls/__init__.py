"""One call, read or prompt fetch through the bench: ``Calls`` (``calling.py``), ``Fetches``
(``fetches.py``), the one broad catch they share (``attempt.py``) and their faces.

It may import ``toolbench._bench.catalog``, ``overtime``, ``servers``, ``journal``,
``progress``, and the layers below ``_bench``.
"""
