"""Transports (layer 1): one ``ToolClient`` per kind of server, each purely async.

- ``mcp/``: one MCP connection (``McpClient``: stdio, streamable HTTP, SSE or in process);
- ``auth/``: signing in to a protected HTTP server (OAuth, client credentials, the token store);
- ``wire/``: bounded bytes (the stdio transport, message and discovery limits, a child's
  stderr);
- ``toolset/``: many tools at one address, with lanes (``Toolset``), and serving them;
- ``toolbox.py``: typed Python functions as tools; ``server_requests.py``: answering a server's
  sampling, elicitation and roots requests; ``notifications.py``: the log messages servers send.

May import ``toolbench._core`` and third-party packages only, never a layer above (routing, the
loop, the bench, the notebook). Inside, ``mcp/`` sits on top: it may import ``auth/``,
``wire/``, ``notifications`` and ``server_requests``; those import nothing else of
``_transports``.
"""
