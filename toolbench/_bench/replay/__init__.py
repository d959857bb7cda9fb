"""Cassettes: replaying a recording, and serving one as an MCP server.

Holds ``recording`` (a journal read into a Recording; it imports no MCP server), ``kinds``
(the served resources, templates and prompts), ``serve`` (the served server,
``serve_recording`` and the ``serve-recording`` command; above ``kinds``), ``replay``
(``Replays``: ``bench.replay``) and ``faces`` (its public face). May import the layers below
``_bench`` (``_core``, ``_transports``, ``_routing``, ``_loop``) and, inside ``_bench``, the
journal (``journal/``), the servers (``servers/``), the catalog snapshots (``overtime/``)
and the batches (``many/``).
"""
