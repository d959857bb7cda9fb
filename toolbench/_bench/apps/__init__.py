"""MCP Apps: a server's own view of a tool, found, checked, framed and bridged.

``meta`` (what a tool's ``_meta.ui`` declares), ``policy`` (the frame's CSP, ``allow``,
height), ``views`` (``Apps``: fetch, cache, open), ``bridge`` (``Bridge``: the host side of
one view's JSON-RPC), ``host`` (``BenchHost``: the bench as a bridge sees it) and ``faces``.
It may import ``calls``, ``servers``, ``journal`` and the layers below ``_bench``.
"""
