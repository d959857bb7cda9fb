"""Server configuration files: the ``mcpServers`` format of desktop MCP clients, and ``servers``.

Every mistake is reported with the file and the JSON path where it sits, because the person
fixing it has the file open, not our code.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench._ids import SERVER_RULE, is_server_name

TYPES = ("stdio", "http", "sse")
_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ValueError):
    """A configuration mistake, located by source and JSON path."""

    def __init__(self, source: str, path: str, message: str) -> None:
        self.source, self.path = source, path
        super().__init__(f"{source}: {path}: {message}")


@dataclass(frozen=True)
class ServerConfig:
    """One server's settings after expansion; ``target`` is what ``Bench.connect`` takes."""

    name: str
    target: str | list[str]
    transport: str
    options: dict[str, Any] = field(default_factory=dict)


def _expand(value: str, source: str, path: str, server: str, environ: Mapping[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        raise ConfigError(
            source, path,
            f"environment variable ${{{name}}} is not set (server {server!r}); "
            f"set it or write ${{{name}:-default}}",
        )

    return _VAR_RE.sub(substitute, value)


def _string(value: Any, source: str, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(source, path, f"expected a string, got {type(value).__name__} "
                          f"{json.dumps(value, default=str)[:60]}")
    return value


def _string_map(value: Any, source: str, path: str) -> dict[str, str]:
    if not isinstance(value, dict):
        kind = type(value).__name__
        raise ConfigError(source, path, f"expected an object of strings, got {kind}")
    return {str(k): _string(v, source, f"{path}.{k}") for k, v in value.items()}


def read(config: str | os.PathLike[str] | Mapping[str, Any],
         environ: Mapping[str, str] | None = None) -> list[ServerConfig]:
    """Parse and expand a config file or dict into server settings (nothing connects here)."""
    env = os.environ if environ is None else environ
    if isinstance(config, Mapping):
        source, data = "<config dict>", dict(config)
    else:
        source = os.fspath(config)
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(source, "$", f"cannot read the file: {exc.strerror or exc}") from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                source, "$", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from exc
    if not isinstance(data, dict):
        raise ConfigError(source, "$", "expected an object with 'mcpServers' or 'servers'")
    key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    if key is None:
        raise ConfigError(source, "$", "expected a top-level 'mcpServers' or 'servers' object")
    servers = data[key]
    if not isinstance(servers, dict):
        raise ConfigError(source, f"$.{key}", "expected an object mapping names to servers")
    return [_server(name, entry, source, f"$.{key}.{name}", env)
            for name, entry in servers.items()]


def _server(name: str, entry: Any, source: str, path: str,
            env: Mapping[str, str]) -> ServerConfig:
    if not is_server_name(name):
        raise ConfigError(source, path, f"invalid server name {name!r}: a server name is "
                          f"{SERVER_RULE}")
    if not isinstance(entry, dict):
        raise ConfigError(source, path, f"expected an object, got {type(entry).__name__}")

    def expand(value: str, where: str) -> str:
        return _expand(value, source, f"{path}.{where}", name, env)

    declared = entry.get("type", entry.get("transport"))
    if declared is not None:
        declared = _string(declared, source, f"{path}.type")
        if declared == "streamable-http" or declared == "streamableHttp":
            declared = "http"
        if declared not in TYPES:
            raise ConfigError(source, f"{path}.type",
                              f"unknown server type {declared!r}; known types: {list(TYPES)}")
    kind = declared or ("stdio" if "command" in entry else "http" if "url" in entry else None)
    if kind is None:
        raise ConfigError(source, path, "a server needs 'command' (stdio) or 'url' (http/sse)")
    options: dict[str, Any] = {}
    if kind == "stdio":
        command = expand(_string(entry.get("command"), source, f"{path}.command"), "command")
        if not command.strip():
            raise ConfigError(source, f"{path}.command", "the command is empty")
        args = entry.get("args", [])
        if not isinstance(args, list):
            raise ConfigError(source, f"{path}.args", "expected a list of strings")
        target: str | list[str] = [command] + [
            expand(_string(a, source, f"{path}.args[{i}]"), f"args[{i}]")
            for i, a in enumerate(args)
        ]
        if "env" in entry:
            options["env"] = {k: expand(v, f"env.{k}")
                              for k, v in _string_map(entry["env"], source, f"{path}.env").items()}
        if "cwd" in entry:
            options["cwd"] = expand(_string(entry["cwd"], source, f"{path}.cwd"), "cwd")
    else:
        url = expand(_string(entry.get("url"), source, f"{path}.url"), "url")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(source, f"{path}.url",
                              f"URL {url!r} must start with http:// or https://")
        target = url
        if "headers" in entry:
            options["headers"] = {
                k: expand(v, f"headers.{k}")
                for k, v in _string_map(entry["headers"], source, f"{path}.headers").items()
            }
        if kind == "sse":
            options["transport"] = "sse"
    for key in ("timeout", "max_concurrent"):
        if key in entry:
            value = entry[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(source, f"{path}.{key}", f"expected a positive number, "
                                  f"got {value!r}")
            options[key] = value
    if "namespace" in entry:
        options["namespace"] = entry["namespace"]
    return ServerConfig(name, target, kind, options)
