"""The requests of one MCP connection besides ``tools/call``, one module per kind: the one
paginator and ``tools/list`` (``listing``), resources and prompts (``resources``), completions
(``completions``), subscriptions and change streams (``subscriptions``), and tools that run as
tasks (``tasks``).

Each takes the connection as an ``McpSession`` (``toolbench._transports.mcp.session``), never
as ``McpClient``, which imports them. They may import ``toolbench._core``, ``session``, ``about``
and ``toolbench._transports.wire``; nothing else of ``toolbench._transports.mcp``.
"""
