"""A many-tools provider at one address (``toolset``: ``Toolset``, its ``help`` manifest and
dispatch), its lanes, slots and locks (``lanes``), and serving it as an MCP server (``serve``).

May import ``toolbench._core`` and the ``mcp`` SDK's server; nothing else of ``_transports``.
"""
