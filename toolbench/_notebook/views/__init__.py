"""Escaped HTML of the bench's tables, results, compare and diff frames, and what a server says
about itself.

May import the layers below the notebook and ``ask/`` (a link shown safely); never
``explorer/``.
"""
