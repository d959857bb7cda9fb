"""Signing in to a protected MCP server over HTTP: the ``auth=`` option (``options``), one
connection's sign-in (``state``: ``AuthState``, built on the SDK's OAuth providers), the flow
as it runs (``flow``: the person's step, what an authorization server may not do), the person's
step itself (``signin``, with the loopback listener ``loopback`` and the pasted address
``callback``), and the token store (``tokens``).

May import ``toolbench._core`` and the ``mcp`` SDK's auth; nothing else of ``_transports``.
"""
