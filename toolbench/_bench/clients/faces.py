"""The faces of the servers a person already has: ``load_config`` (any client's file, or a
client by name) and ``connect_package`` (an MCP Registry ``server.json``).

``ClientFaces`` holds no state: it reads and translates (``clients.reading``,
``clients.registry``) in the caller's thread, and hands the result to ``Servers``
(``toolbench._bench.servers.servers``), which checks and connects as for any config.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolbench._bench.clients.reading import ConfigSource, read_client_config
from toolbench._bench.clients.registry import choose, load_entry
from toolbench._bench.servers.failed import warn_failed
from toolbench._bench.servers.table import servers_frame
from toolbench._loop import get_loop
from toolbench._routing.pegboard import USE_SERVER_NAME

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.servers.connected import Connected
    from toolbench._bench.servers.servers import Servers


class ClientFaces:
    """Other clients' configs and registry entries, connected; a face over ``Servers``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        connections: Servers

    def load_config(self, config: ConfigSource | None = None, *, client: str | None = None,
                    inputs: Mapping[str, str] | None = None,
                    progress: bool | None = None) -> pd.DataFrame:
        """Connect every server of a config file, all at once: toolbench's own, or any MCP
        client's (recognised by its content), or a client's own file by name.

        Formats: ``mcpServers`` (Claude Desktop, Claude Code, Cursor, Windsurf's
        ``serverUrl``, Gemini CLI's ``httpUrl``), VS Code's ``servers`` with ``inputs``,
        Codex's TOML ``[mcp_servers.NAME]``, Zed's ``context_servers``; JSON with comments is
        read. Each format's keys (``type``, ``url``, ``headers``, ``env``, ``envFile``,
        ``cwd``, ``disabled``/``enabled``, timeouts) become toolbench's. The file is only
        read, never written.

        The whole config is checked first, in the caller's thread, and nothing starts if
        anything is wrong. After that every server succeeds or fails on its own, whatever
        the exception: a failed row with the error, while the others connect. A name clash
        with an earlier server's tools is that server's failed row. A server that is
        switched off (``"disabled": true``, ``enabled = false``) is not started and has no
        row.

        Args:
            config: a file's path, or toolbench's config as a mapping; ``None`` with
                ``client``.
            client: read this client's own file (``tb.client_configs()`` lists where each
                keeps it): ``claude-desktop``, ``claude-code``, ``cursor``, ``vscode``,
                ``windsurf``, ``codex``, ``gemini`` or ``zed``. A project's file in the
                working directory comes first.
            inputs: answers to VS Code ``${input:id}`` questions, by id. Unanswered ones are
                asked in a notebook form (a password stays hidden and is never kept);
                elsewhere they are a ``ConfigError`` naming them.
            progress: a progress bar while servers start (``None``: only in a notebook).

        Returns:
            The ``servers`` table.

        Raises:
            ConfigError: a mistake anywhere in the file, naming the file, the JSON path or
                line; a missing ``envFile``; an unanswered or undeclared input.
            FileNotFoundError: ``client``'s file is nowhere (the message names each place).
            ValueError: a server's name is already connected, or the client is unknown.

        Warns:
            ConfigWarning: once, for keys the file has that toolbench does not know; and
                once, naming every server that failed to start and why.

        Example:
            >>> bench.load_config("mcp.json")                           # doctest: +SKIP
            >>> bench.load_config(client="cursor")                      # doctest: +SKIP
        """
        parsed = self.connections.check_config(
            read_client_config(config, client=client, inputs=inputs), stacklevel=2)
        get_loop().run(self.connections.connect_all, parsed, progress)
        warn_failed(self.connections, [e.name for e in parsed.servers], stacklevel=2)
        return servers_frame(self.connections)

    async def aload_config(self, config: ConfigSource | None = None, *,
                           client: str | None = None, inputs: Mapping[str, str] | None = None,
                           progress: bool | None = None) -> pd.DataFrame:
        """Awaitable :meth:`load_config`: the same arguments, result and errors (inputs are
        not asked for here: pass ``inputs=``)."""
        parsed = self.connections.check_config(
            read_client_config(config, client=client, inputs=inputs, ask=False), stacklevel=2)
        await get_loop().arun(self.connections.connect_all, parsed, progress)
        warn_failed(self.connections, [e.name for e in parsed.servers], stacklevel=2)
        return servers_frame(self.connections)

    def connect_package(self, server_json: str | os.PathLike[str] | Mapping[str, Any],
                        name: str | None = None, **values: str) -> Connected:
        """Connect an MCP Registry entry: its npm package (``npx -y``), its PyPI package (an
        installed console script, else ``uvx``), or its remote URL.

        Nothing is fetched from the registry: ``server_json`` is the entry itself.

        Args:
            server_json: the ``server.json`` file's path, or its content (a mapping).
            name: the server's name (default: the entry's name after its last ``/``).
            **values: the declared arguments, environment variables, headers and URL
                variables, each by its name as a keyword (``--local-timezone`` is
                ``local_timezone``); the rest take their declared value or default.

        Returns:
            How many tools the server added, as ``connect`` returns it.

        Raises:
            ValueError: a required input has no value (named), a value matches no declared
                input, or the entry has nothing toolbench can run (what it saw is named).
            Unreachable: the server did not start or answer, as for ``connect``.

        Example:
            >>> bench.connect_package("server.json", local_timezone="UTC")  # doctest: +SKIP
            <connected 'time': 2 tools (stdio)>
        """
        chosen = choose(load_entry(server_json), name, values)
        return get_loop().run(self.connections.connect, chosen.name, chosen.target,
                              USE_SERVER_NAME, chosen.connect_options())

    async def aconnect_package(self, server_json: str | os.PathLike[str] | Mapping[str, Any],
                               name: str | None = None, **values: str) -> Connected:
        """Awaitable :meth:`connect_package`: the same arguments, result and errors."""
        chosen = choose(load_entry(server_json), name, values)
        return await get_loop().arun(self.connections.connect, chosen.name, chosen.target,
                                     USE_SERVER_NAME, chosen.connect_options())
