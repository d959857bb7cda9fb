"""The requests of one MCP connection besides ``tools/call``, one module per kind: the one
paginator and ``tools/list`` (``listing``), resources and prompts (``resources``), completions
(``completions``), subscriptions and change streams (``subscriptions``), and tools that run as
tasks (``tasks``), and the client's own side of tasks (``receiver``: sampling and elicitation
run as tasks a server polls).

Each takes the connection as an ``McpSession`` (``toolbench._transports.mcp.session``), or a
narrower Protocol of its own, never as ``McpClient``. They may import ``toolbench._core``,
``toolbench._transports.wire`` and ``.notifications``, and of ``toolbench._transports.mcp`` only
``session``, ``about`` and ``events``: never ``client``, ``lifecycle`` or ``calls``, which
import them.
"""
