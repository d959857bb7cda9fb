"""One MCP connection, ``McpClient`` (``client.py``), built from one concept per module:

- the connection: ``lifecycle`` (open, own, settle, lose, close), ``attempt`` (one attempt
  and its owner task's signals), ``recovery`` (the retry window, the reconnect under way),
  ``wire`` (the transport handed to the SDK, watched and capped);
- the requests: ``calls`` (``call`` and every request's envelope), ``tracking`` (what each
  request went through), ``errors`` (the error table), and ``methods/`` (listings,
  resources and prompts, completions, subscriptions, tasks);
- what the server says: ``events`` (list changes and connects), ``about`` (its self-portrait,
  capped), ``compat`` (where the SDK is stricter than the protocol);
- ``session``: the status, ``SEND_CHECK`` and ``McpSession``, the face of the client the
  modules below it type against, so none of them imports ``client``.

May import ``toolbench._core``, ``toolbench._transports.auth``, ``.wire``, ``.notifications``
and ``.server_requests``, and the ``mcp`` SDK; nothing above ``_transports``.
"""
