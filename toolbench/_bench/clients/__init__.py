"""The servers a person already has: other MCP clients' config files (where each client keeps
them, and each format read into toolbench's keys), VS Code's ``${input:id}`` questions, and
MCP Registry ``server.json`` entries; and their faces.

It may import ``toolbench._bench.servers``, ``progress``, and the layers below ``_bench``.
"""
