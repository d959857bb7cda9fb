"""Bounded bytes: what a server may send, enforced where it arrives. The stdio transport
(``stdio``: linear in a line's length, capped), message and discovery limits (``limits``), the
``tools/list`` count taken before a reply is parsed (``precount``), legacy SSE's client with
its GET stream capped per event and counted (``sse``), reading a dropped message's id
(``sniff``), and a child's stderr (``stderr``).

May import ``toolbench._core`` only; nothing else of ``_transports``.
"""
