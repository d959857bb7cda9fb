"""Cassettes: ``Replays`` (a recording run again, changes marked), serving a recording as an
MCP server, and the face.

It may import ``toolbench._bench.many``, ``servers``, ``overtime``, ``journal``, and the
layers below ``_bench``.
"""
