"""Bundled demo MCP servers: offline, small, and deliberately different.

Three servers share the tool name ``distance`` but answer it three ways, so comparing them
teaches something:

- ``geo``: ``distance`` on a sphere (haversine), off by up to ~0.5 %; also ``city``,
  ``cities``, ``nearest`` and ``world_map`` (a PNG image).
- ``geo_precise``: ``distance`` on the WGS-84 ellipsoid (Vincenty), good to millimetres;
  also ``city`` and ``bearing``.
- ``flaky``: ``distance`` on a flat map (equirectangular), off by percent across oceans, slow,
  and failing some calls on purpose; also ``city``, ``status`` and ``wait``.

Apart from these three (and not started by :func:`config`): ``beyond`` (resources, prompts,
logs, progress, requests back to the client), ``protected`` (OAuth sign-in), ``limited`` (over
streamable HTTP, a server that answers 429 and 503 beyond its rate) and ``atlas`` (an
MCP App: ``show_map`` brings its own HTML view, the cities on a map, with a button that calls
``distance`` back through the host).

Each runs over stdio as ``python -m toolbench.demo.<name>``. :func:`config` returns the
``mcpServers`` mapping that desktop MCP clients (and ``Bench.load_config``) read.

This module imports nothing heavy: the servers' own modules import ``mcp`` when they run.
"""

from toolbench.demo.launch import SERVERS, command, config, python_path_env

__all__ = ["SERVERS", "command", "config", "python_path_env"]
