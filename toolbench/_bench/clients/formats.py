"""Each client's format, recognised by its content and put in toolbench's keys.

=================  ==========================================  ============================
format             where                                       servers under
=================  ==========================================  ============================
``mcpServers``     Claude Desktop, Claude Code, Cursor,         ``mcpServers`` (Claude Code
                   Windsurf, Gemini CLI, toolbench itself       also ``projects.<cwd>``)
``vscode``         VS Code ``mcp.json`` (and the old            ``servers`` + ``inputs``
                   ``settings.json`` ``mcp`` object)
``codex``          Codex ``config.toml``                        ``[mcp_servers.NAME]``
``zed``            Zed ``settings.json``                        ``context_servers``
=================  ==========================================  ============================

Each client's own keys are renamed to toolbench's (``servers.config``), and every other key
is passed on as written, so the file's unknown keys are warned about once, by JSON path, as
for toolbench's own files. A server that is switched off (``disabled: true``, ``enabled:
false``) is passed on as disabled and nothing else of it is read (its ``envFile`` may well
be missing). The variables VS Code and Cursor write (``${env:NAME}``, ``${userHome}``,
``${workspaceFolder}``, ``${pathSeparator}``) become values or toolbench's ``${NAME}``;
``${input:id}`` becomes a placeholder variable whose value is asked for
(``clients.inputs``), so it expands, and is hidden, as a ``${VAR}`` value is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench._bench.clients.files import read_env_file
from toolbench._bench.servers.config import ConfigError

FORMATS = ("mcpServers", "vscode", "codex", "zed")
SETTINGS_FILES = frozenset({"settings.json", ".claude.json", "config.toml"})
"""Files where MCP servers share the file with the client's other settings: the other
top-level keys are the client's own, not unknown keys."""
_VARIABLE = re.compile(r"\$\{(env|input):([^}]*)\}|\$\{(userHome|workspaceFolder|"
                       r"pathSeparator|/)\}")
INPUT_PREFIX = "TOOLBENCH_INPUT_"
_BARE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class Translated:
    """A client's file in toolbench's keys, and the VS Code inputs its servers use."""

    source: str
    format: str
    label: str
    servers: dict[str, Any]
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each ``${input:id}`` used by a server that runs: its declaration, by id."""
    placeholders: dict[str, str] = field(default_factory=dict)
    """input id -> the placeholder variable that stands for it."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Top-level keys kept so they are warned about (a plain ``mcp.json`` only)."""
    skipped: list[str] = field(default_factory=list)
    """Servers left out, and why (a Zed extension's server, which Zed itself runs)."""


def detect(data: Any, source: str) -> tuple[str, str, Any]:
    """``(format, label, servers)`` of a parsed file, or a ``ConfigError`` naming what it
    found: the top-level keys, since those say which client wrote it."""
    if not isinstance(data, dict):
        raise ConfigError(source, "$", f"expected an object, got {type(data).__name__}")
    if "mcpServers" in data and "servers" in data:
        raise ConfigError(source, "$", "both 'mcpServers' and 'servers' are present; keep one")
    if isinstance(data.get("mcp_servers"), dict):
        return "codex", "mcp_servers", data["mcp_servers"]
    if isinstance(data.get("context_servers"), dict):
        return "zed", "context_servers", data["context_servers"]
    if "mcpServers" in data:
        return "mcpServers", "mcpServers", data["mcpServers"]
    if "servers" in data:
        return "vscode", "servers", data["servers"]
    nested = data.get("mcp")
    if isinstance(nested, dict) and "servers" in nested:
        return "vscode", "mcp.servers", nested["servers"]
    found = ", ".join(repr(str(k)) for k in list(data)[:8]) or "nothing"
    raise ConfigError(source, "$", "no MCP servers found: expected 'mcpServers' (Claude, "
                      "Cursor, Windsurf, Gemini), 'servers' (VS Code), '[mcp_servers.NAME]' "
                      f"(Codex) or 'context_servers' (Zed); found {found}")


def count_servers(data: Any) -> int:
    """How many servers a parsed file names (for ``client_configs``); 0 if none."""
    try:
        _format, _label, servers = detect(data, "")
    except ConfigError:
        return 0
    return len(servers) if isinstance(servers, dict) else 0


def translate(data: Any, source: str, *, client: str | None = None,
              cwd: str | None = None, environ: Mapping[str, str] | None = None) -> Translated:
    """The servers of a parsed file in toolbench's keys (checked later, by ``servers.config``)."""
    env = os.environ if environ is None else environ
    fmt, label, servers = detect(data, source)
    if not isinstance(servers, dict):
        raise ConfigError(source, f"$.{label}", "expected an object mapping names to servers")
    servers = dict(servers)
    if fmt == "mcpServers" and os.path.basename(source) == ".claude.json":
        project = (data.get("projects") or {}).get(cwd or os.getcwd())  # Claude Code's local
        if isinstance(project, dict) and isinstance(project.get("mcpServers"), dict):
            servers.update(project["mcpServers"])
    own_settings = client is not None or os.path.basename(source) in SETTINGS_FILES
    result = Translated(source, fmt, label, {})
    if fmt in ("mcpServers", "vscode") and label != "mcp.servers" and not own_settings:
        own = (label, "inputs") if fmt == "vscode" else (label,)  # inputs are VS Code's
        result.extra = {k: v for k, v in data.items() if k not in own}
    declared = _declared_inputs(data, fmt, label, source)
    gemini = fmt == "mcpServers" and (client == "gemini" or _looks_like_gemini(servers))
    workspace = _workspace(source, cwd)
    for name, entry in servers.items():
        path = f"$.{label}.{name}"
        if not isinstance(entry, dict):
            result.servers[name] = entry  # servers.config names the mistake
            continue
        if _switched_off(entry, source, path):
            result.servers[name] = {"disabled": True}
            continue
        if fmt == "zed" and entry.get("source") == "extension":
            result.skipped.append(f"{name!r} (a Zed extension's server: Zed runs it)")
            continue
        def variables(value: Any, where: str, name: str = name) -> Any:
            return _substitute(value, where, source, name, workspace, declared, result)

        entry = {k: variables(v, f"{path}.{k}") for k, v in entry.items()}
        entry.pop("disabled", None)
        entry.pop("enabled", None)
        shape = {"mcpServers": _mcp_servers, "vscode": _plain, "codex": _codex,
                 "zed": _zed}[fmt]
        result.servers[name] = _env_file(shape(entry, gemini, env), source, path, workspace)
    return result


def _looks_like_gemini(servers: Mapping[str, Any]) -> bool:
    keys = {k for e in servers.values() if isinstance(e, dict) for k in e}
    return bool(keys & {"httpUrl", "trust", "includeTools", "excludeTools"})


def _workspace(source: str, cwd: str | None) -> str:
    """``${workspaceFolder}``: the folder above ``.vscode``/``.cursor``, else the cwd."""
    folder = Path(source).resolve().parent
    if folder.name in (".vscode", ".cursor", ".gemini", ".zed", ".codex"):
        return str(folder.parent)
    return cwd or os.getcwd()


def _switched_off(entry: Mapping[str, Any], source: str, path: str) -> bool:
    for key, off_when in (("disabled", True), ("enabled", False)):
        if key in entry:
            if not isinstance(entry[key], bool):
                raise ConfigError(source, f"{path}.{key}", f"expected true or false, got "
                                  f"{type(entry[key]).__name__}")
            if entry[key] is off_when:
                return True
    return False


def _declared_inputs(data: Mapping[str, Any], fmt: str, label: str,
                     source: str) -> dict[str, dict[str, Any]]:
    if fmt != "vscode":
        return {}
    holder = data.get("mcp") if label == "mcp.servers" else data
    inputs = holder.get("inputs", []) if isinstance(holder, dict) else []
    where = "$.mcp.inputs" if label == "mcp.servers" else "$.inputs"
    if not isinstance(inputs, list):
        raise ConfigError(source, where, "expected a list of inputs")
    declared: dict[str, dict[str, Any]] = {}
    for i, item in enumerate(inputs):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ConfigError(source, f"{where}[{i}]", "an input is an object with an 'id'")
        declared[item["id"]] = item
    return declared


def _substitute(value: Any, where: str, source: str, server: str, workspace: str,
                declared: Mapping[str, dict[str, Any]], result: Translated) -> Any:
    """VS Code's and Cursor's variables in every string of an entry (lists and objects too)."""
    if isinstance(value, list):
        return [_substitute(v, f"{where}[{i}]", source, server, workspace, declared, result)
                for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _substitute(v, f"{where}.{k}", source, server, workspace, declared, result)
                for k, v in value.items()}
    if not isinstance(value, str) or "${" not in value:
        return value

    def one(match: re.Match[str]) -> str:
        kind, name, fixed = match.group(1), match.group(2), match.group(3)
        if kind == "env":
            return "${" + name + "}"
        if kind == "input":
            if name not in declared:
                known = ", ".join(map(repr, declared)) or "none"
                raise ConfigError(source, where, f"${{input:{name}}} (server {server!r}) names "
                                  f"no input declared in 'inputs' (declared: {known})")
            result.inputs[name] = declared[name]
            holder = result.placeholders.setdefault(
                name, f"{INPUT_PREFIX}{len(result.placeholders)}")
            return "${" + holder + "}"
        if fixed == "userHome":
            return str(Path.home())
        if fixed == "workspaceFolder":
            return workspace
        return os.sep

    return _VARIABLE.sub(one, value)


def _plain(entry: dict[str, Any], _gemini: bool, _env: Mapping[str, str]) -> dict[str, Any]:
    return entry


def _mcp_servers(entry: dict[str, Any], gemini: bool,
                 _env: Mapping[str, str]) -> dict[str, Any]:
    """Windsurf's ``serverUrl``; Gemini's ``httpUrl`` (streamable HTTP), its ``url`` (SSE
    unless a ``type`` says otherwise) and its ``timeout`` (milliseconds)."""
    if "serverUrl" in entry and "url" not in entry:
        entry["url"] = entry.pop("serverUrl")
    if "httpUrl" in entry:
        entry["url"] = entry.pop("httpUrl")
        entry.setdefault("type", "http")
    elif gemini and "url" in entry and "type" not in entry:
        entry["type"] = "sse"
    if gemini and isinstance(entry.get("timeout"), int | float) and entry["timeout"] > 0:
        entry["timeout"] = entry["timeout"] / 1000
    if gemini and isinstance(entry.get("env"), dict):  # Gemini also expands a bare $NAME
        entry["env"] = {k: _BARE.sub(r"${\1}", v) if isinstance(v, str) else v
                        for k, v in entry["env"].items()}
    return entry


def _codex(entry: dict[str, Any], _gemini: bool, env: Mapping[str, str]) -> dict[str, Any]:
    """Codex's keys: ``startup_timeout_sec``/``_ms``, ``tool_timeout_sec``, ``env_vars``
    (forwarded from the environment when set), ``bearer_token_env_var``, ``http_headers``
    and ``env_http_headers`` (header -> variable)."""
    renames: dict[str, tuple[str, Callable[[Any], Any]]] = {
        "startup_timeout_sec": ("connect_timeout", lambda v: v),
        "startup_timeout_ms": ("connect_timeout",
                               lambda v: v / 1000 if isinstance(v, int | float) else v),
        "tool_timeout_sec": ("timeout", lambda v: v),
    }
    for key, (ours, convert) in renames.items():
        if key in entry:
            entry[ours] = convert(entry.pop(key))
    names = entry.pop("env_vars", None)
    if isinstance(names, list):
        forwarded = {n: "${" + n + "}" for n in names if isinstance(n, str) and n in env}
        entry["env"] = {**forwarded, **(entry.get("env") or {})}
    headers: dict[str, Any] = dict(entry.pop("http_headers", None) or {})
    for header, variable in dict(entry.pop("env_http_headers", None) or {}).items():
        headers[header] = "${" + str(variable) + "}"
    token = entry.pop("bearer_token_env_var", None)
    if isinstance(token, str):
        headers["Authorization"] = "Bearer ${" + token + "}"
    if headers:
        entry["headers"] = {**headers, **(entry.get("headers") or {})}
    return entry


def _zed(entry: dict[str, Any], _gemini: bool, _env: Mapping[str, str]) -> dict[str, Any]:
    """Zed's older ``"command": {"path", "args", "env"}`` and its ``source``/``settings``."""
    command = entry.get("command")
    if isinstance(command, dict):
        entry["command"] = command.get("path")
        for key in ("args", "env"):
            if key in command:
                entry[key] = command[key]
    entry.pop("source", None)
    entry.pop("settings", None)
    return entry


def _env_file(entry: dict[str, Any], source: str, path: str, workspace: str) -> dict[str, Any]:
    """``envFile``: its values, under the entry's own ``env`` (which wins)."""
    if "envFile" not in entry:
        return entry
    name = entry.pop("envFile")
    if not isinstance(name, str):
        raise ConfigError(source, f"{path}.envFile", "expected a path (a string)")
    where = os.path.join(workspace, os.path.expanduser(name))
    values = read_env_file(where, source, f"{path}.envFile")
    own = entry.get("env")
    entry["env"] = {**values, **own} if isinstance(own, dict) else values
    return entry
