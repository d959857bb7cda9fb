"""``load_config``'s first step: which file, which format, the inputs answered; the result
is what ``servers.config`` checks (a ``ClientConfig``: toolbench's keys, the file's name).

A mapping in toolbench's own format is passed on untouched, as before this module; a file
of any client's format is read here (read-only) and translated (``clients.formats``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

from toolbench._bench.clients.files import load_file
from toolbench._bench.clients.formats import translate
from toolbench._bench.clients.inputs import answer_inputs
from toolbench._bench.clients.locations import CLIENTS, find_config
from toolbench._bench.servers.config import ClientConfig, ConfigError, ConfigWarning

ConfigSource = str | os.PathLike[str] | Mapping[str, Any]


def read_client_config(config: ConfigSource | None, *, client: str | None = None,
                       inputs: Mapping[str, str] | None = None, ask: bool = True,
                       stacklevel: int = 2) -> Mapping[str, Any]:
    """The config to check: a path (any client's format), a mapping, or ``client``'s own
    file (``locations.find_config``). Asks for VS Code inputs (``clients.inputs``) unless
    ``ask`` is False."""
    if client is not None and client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; known clients: {', '.join(CLIENTS)}")
    if config is None:
        if client is None:
            raise TypeError("load_config() needs a config (a path or a mapping) or client=")
        config = find_config(client)
    if isinstance(config, Mapping):
        if client is None and ("mcpServers" in config
                               or ("servers" in config and "inputs" not in config)):
            return config  # toolbench's own format: exactly as before
        source, data = "<config dict>", dict(config)
    else:
        source = os.fspath(config)
        data = load_file(source)
    try:
        translated = translate(data, source, client=client)
    except ConfigError as exc:
        if exc.path == "$" and isinstance(data, dict) and source.endswith(".json"):
            plain = ClientConfig(data)
            plain.source = source
            from toolbench._bench.servers.config import parse

            parse(plain)  # toolbench's own message (a near-miss key is named); raises
        raise
    if translated.skipped:
        warnings.warn(f"{source}: left out {', '.join(translated.skipped)}", ConfigWarning,
                      stacklevel=stacklevel + 1)
    key = "servers" if translated.format == "vscode" else "mcpServers"
    result = ClientConfig({key: translated.servers, **translated.extra})
    result.source = source
    result.label = translated.label
    if translated.placeholders:
        result.environ = answer_inputs(translated, inputs, ask=ask)
    return result
