"""The catalog: what servers offer besides the pegboard's tools, and how it follows them.

``Follower`` (``follow.py``: re-lists on list changes and reconnects), ``Listings``
(``listing.py``: resources, templates, prompts and the prompt-name index), ``Completions``,
``bench.tools`` handles (``handles.py``) and the faces. It may import
``toolbench._bench.overtime``, ``servers``, and the layers below ``_bench``.
"""
