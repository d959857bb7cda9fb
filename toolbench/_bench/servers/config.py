"""Server configuration files: the ``mcpServers`` format of desktop MCP clients, and ``servers``.

Every mistake is reported with the file and the JSON path where it sits, because the person
fixing it has the file open, not our code.

**The whole file is checked before anything starts.** A bad timeout, cap, URL, namespace or
server name anywhere is a ``ConfigError`` and no server of that file is started: half a config
running is harder to reason about than none. What can only go wrong later (a server that will
not start, a name clash between two servers' tools) is each server's own business.

**``"disabled": true``** leaves the server out entirely: it is not checked beyond its name and
its ``disabled`` value, not expanded (its variables are often unset, which is why it was
disabled), not started and not listed in ``Bench.servers``.

**Unknown keys** give one ``ConfigWarning`` that names every one of them by JSON path (desktop
clients add their own keys, such as ``autoApprove``; a typo such as ``"timout"`` must not pass
in silence either).

**Secrets.** Every value that ``${VAR}`` expansion took from the environment, and every
``env`` and ``headers`` value, lands in ``ServerConfig.secrets``; the bench and the MCP client
redact them from everything they show. Error messages here quote the value as written in the
file (with ``${VAR}`` unexpanded), never the expanded value.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

from toolbench._core.checks import is_seconds, is_whole
from toolbench._core.files import NotRegularFile, TooLarge, read_capped
from toolbench._core.ids import SERVER_RULE, did_you_mean, is_server_name
from toolbench._transports.wire.limits import check_max_message_bytes, check_max_tools

TYPES = ("stdio", "http", "sse")
_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
SERVER_KEYS = frozenset({"type", "transport", "command", "args", "env", "cwd", "url", "headers",
                         "timeout", "connect_timeout", "max_concurrent", "namespace",
                         "disabled", "max_message_bytes", "max_tools", "protocol_mode",
                         "auth", "roots", "toolbench"})
_STDIO_ONLY = ("command", "args", "env", "cwd")
_HTTP_ONLY = ("url", "headers", "auth")


class ConfigError(ValueError):
    """A configuration mistake, located by source and JSON path."""

    def __init__(self, source: str, path: str, message: str) -> None:
        self.source, self.path = source, path
        super().__init__(f"{source}: {path}: {message}")


class ConfigWarning(UserWarning):
    """Something in a config file was ignored (an unknown key)."""


class ClientConfig(dict[str, Any]):
    """The hook for other clients' formats (``toolbench._bench.clients``): a config read from
    a client's own file and put in toolbench's keys. It keeps the file's name (``source``),
    the key its servers sit under there (``label``, for JSON paths in errors) and the values
    of variables that are not in the environment (``environ``: a VS Code input's answer),
    which expand and are hidden as ``${VAR}`` values are."""

    source: str = "<config dict>"
    label: str | None = None
    environ: Mapping[str, str] | None = None


@dataclass(frozen=True, repr=False)
class ServerConfig:
    """One server's settings after expansion; ``target`` is what ``Bench.connect`` takes.

    ``secrets`` holds every value that must never be shown (see the module docstring); the
    repr hides them, and hides env and header values whatever they are.
    """

    name: str
    target: str | list[str]
    transport: str
    options: dict[str, Any] = field(default_factory=dict)
    secrets: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        shown = {k: (sorted(v) if k in ("env", "headers") else v)
                 for k, v in self.options.items()}
        text = (f"ServerConfig(name={self.name!r}, transport={self.transport!r}, "
                f"target={self.target!r}, options={shown!r})")
        for secret in sorted(self.secrets, key=len, reverse=True):
            if len(secret) >= 4:
                text = text.replace(secret, "[redacted]")
        return text


@dataclass(frozen=True)
class Parsed:
    """A whole config, checked: the servers to start, the disabled ones, the unknown keys."""

    source: str
    servers: list[ServerConfig]
    disabled: list[str]
    unknown: list[str]

    def warn_unknown(self, stacklevel: int = 2) -> None:
        """One ``ConfigWarning`` naming every unknown key (with the known key it most likely
        meant), if there are any."""
        if self.unknown:
            named = ", ".join(path + (_meant(path.rsplit(".", 1)[-1])
                                      if path.count(".") >= 3 else "")  # a server's key
                              for path in self.unknown)
            warnings.warn(
                f"{self.source}: ignored unknown keys {named} "
                f"(a server knows {', '.join(sorted(SERVER_KEYS))})",
                ConfigWarning, stacklevel=stacklevel + 1,
            )


def _variants(value: str) -> set[str]:
    """A secret as it may be echoed back: as is, URL-quoted, or inside a JSON string."""
    return {value, quote(value), quote(value, safe=""), quote_plus(value),
            json.dumps(value)[1:-1]}


class _Expander:
    """``${VAR}`` and ``${VAR:-default}`` for one server; remembers what came from the env."""

    def __init__(self, source: str, server: str, environ: Mapping[str, str]) -> None:
        self.source, self.server, self.environ = source, server, environ
        self.secrets: set[str] = set()

    def __call__(self, value: str, path: str) -> str:
        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in self.environ:
                found = self.environ[name]
                if found:
                    self.secrets |= _variants(found)
                return found
            if default is not None:
                return default  # written in the file itself: not a secret
            raise ConfigError(
                self.source, path,
                f"environment variable ${{{name}}} is not set (server {self.server!r}); "
                f"set it or write ${{{name}:-default}}",
            )

        return _VAR_RE.sub(substitute, value)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {json.dumps(value, default=str)[:60]}"


def _string(value: Any, source: str, path: str, *, secret: bool = False) -> str:
    if not isinstance(value, str):
        shown = type(value).__name__ if secret else _describe(value)
        raise ConfigError(source, path, f"expected a string, got {shown}")
    return value


def _string_map(value: Any, source: str, path: str) -> dict[str, str]:
    """An object of strings; a wrong value is named by key only (it may be a secret)."""
    if not isinstance(value, dict):
        kind = type(value).__name__
        raise ConfigError(source, path, f"expected an object of strings, got {kind}")
    return {str(k): _string(v, source, f"{path}.{k}", secret=True) for k, v in value.items()}


def _seconds(value: Any, source: str, path: str) -> float:
    if not is_seconds(value):
        raise ConfigError(source, path, f"expected a positive, finite number of seconds, "
                          f"got {_describe(value)}")
    return value


def _count(value: Any, source: str, path: str) -> int:
    if not is_whole(value):
        raise ConfigError(source, path, f"expected a positive integer, got {_describe(value)}")
    return value


def _shown_url(raw: str) -> str:
    """The URL as written, query values hidden (tokens travel there)."""
    base, sep, query = raw.partition("?")
    if not sep:
        return raw
    return base + "?" + "&".join(f"{kv.split('=', 1)[0]}=..." for kv in query.split("&") if kv)


def _check_url(url: str, raw: str, source: str, path: str) -> None:
    shown = _shown_url(raw)
    if not url.lower().startswith(("http://", "https://")):
        raise ConfigError(source, path, f"URL {shown!r} must start with http:// or https://")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise ConfigError(source, path, f"URL {shown!r} is malformed: {exc}") from None
    if not parts.hostname:
        raise ConfigError(source, path, f"URL {shown!r} has no host "
                          "(write http://HOST[:PORT]/path)")


MAX_CONFIG_BYTES = 16 * 2**20
"""A config file larger than this is refused (a real one is a few kilobytes)."""


def read_text(source: str) -> str:
    """A config file's text: a regular file only (a FIFO or ``/dev/zero`` would hang or
    never end), at most ``MAX_CONFIG_BYTES``; otherwise a ``ConfigError`` naming it."""
    try:
        raw = read_capped(source, MAX_CONFIG_BYTES, follow_links=True)
    except NotRegularFile:
        raise ConfigError(source, "$", "not a regular file (a config is a JSON file)") from None
    except TooLarge:
        raise ConfigError(source, "$", f"larger than {MAX_CONFIG_BYTES:,} bytes; a config "
                                       "is a small JSON file") from None
    except OSError as exc:
        raise ConfigError(source, "$", f"cannot read the file: {exc.strerror or exc}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(source, "$", f"not UTF-8 text: {exc.reason} at byte {exc.start}"
                          ) from exc


def load_json(source: str) -> Any:
    """A config file read (:func:`read_text`) and parsed; a ``ConfigError`` for bad JSON,
    nesting too deep to parse included."""
    text = read_text(source)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            source, "$", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError:
        raise ConfigError(source, "$", "nested too deeply to read (a config is a few levels "
                                       "deep)") from None


def parse(config: str | os.PathLike[str] | Mapping[str, Any],
          environ: Mapping[str, str] | None = None) -> Parsed:
    """Check and expand a whole config file or dict; warns about nothing, starts nothing."""
    env = os.environ if environ is None else environ
    if isinstance(config, ClientConfig) and config.environ is not None:
        env = {**env, **config.environ}
    if isinstance(config, Mapping):
        source, data = getattr(config, "source", "<config dict>"), dict(config)
    else:
        source = os.fspath(config)
        data = load_json(source)
    if not isinstance(data, dict):
        raise ConfigError(source, "$", "expected an object with 'mcpServers' or 'servers'")
    if "mcpServers" in data and "servers" in data:
        raise ConfigError(source, "$", "both 'mcpServers' and 'servers' are present; keep one")
    key = "mcpServers" if "mcpServers" in data else "servers" if "servers" in data else None
    if key is None:
        raise ConfigError(source, "$", "expected a top-level 'mcpServers' or 'servers' object"
                          + _top_level_typo(data))
    servers = data[key]
    if not isinstance(servers, dict):
        raise ConfigError(source, f"$.{key}", "expected an object mapping names to servers")
    unknown = [f"$.{k}" for k in data if k != key]
    parsed: list[ServerConfig] = []
    disabled: list[str] = []
    label = getattr(config, "label", None) or key
    for name, entry in servers.items():
        path = f"$.{label}.{name}"
        if not is_server_name(name):
            raise ConfigError(source, path, f"invalid server name {name!r}: a server name is "
                              f"{SERVER_RULE}")
        if not isinstance(entry, dict):
            raise ConfigError(source, path, f"expected an object, got {type(entry).__name__}")
        unknown.extend(f"{path}.{k}" for k in entry if k not in SERVER_KEYS)
        off = entry.get("disabled", False)
        if not isinstance(off, bool):
            raise ConfigError(source, f"{path}.disabled", f"expected true or false, got "
                              f"{_describe(off)}")
        if off:
            disabled.append(name)
            continue
        parsed.append(_server(name, entry, source, path, env))
    return Parsed(source, parsed, disabled, unknown)


def read(config: str | os.PathLike[str] | Mapping[str, Any],
         environ: Mapping[str, str] | None = None) -> list[ServerConfig]:
    """The servers to start (disabled ones left out); warns once about unknown keys."""
    parsed = parse(config, environ)
    parsed.warn_unknown(stacklevel=2)
    return parsed.servers


def _auth(value: object, expand: Callable[[str, str], str], source: str, path: str) -> Any:
    """``"auth"``: ``"oauth"``, or ``{"type": "oauth" | "client_credentials", ...}`` with
    ``${VAR}`` expanded in every string (and in each of ``scopes``)."""
    from toolbench._transports.auth.state import auth_from_config

    if isinstance(value, dict):
        expanded: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(item, str):
                expanded[key] = expand(item, f"auth.{key}")
            elif isinstance(item, list) and all(isinstance(s, str) for s in item):
                expanded[key] = [expand(s, f"auth.{key}[{i}]") for i, s in enumerate(item)]
            else:
                expanded[key] = item
        value = expanded
    try:
        return auth_from_config(value)
    except (ValueError, TypeError) as exc:
        raise ConfigError(source, path, f"invalid auth: {exc}") from None


def _unknown_keys(entry: Mapping[str, Any]) -> str:
    """``"; it has the unknown key 'comand' (did you mean 'command'?)"``, or ``""``: a typo
    is the usual reason a server lacks what it needs."""
    found = [k for k in entry if k not in SERVER_KEYS]
    if not found:
        return ""
    parts = ", ".join(repr(key) + _meant(str(key)) for key in found[:5])
    noun = "key" if len(found) == 1 else "keys"
    return f"; it has the unknown {noun} {parts}"


def _top_level_typo(data: Mapping[str, Any]) -> str:
    """``"; found 'mcpServer' (did you mean 'mcpServers'?)"`` when a top-level key is close
    to one of the two, else the keys found: a config without either is usually a typo."""
    import difflib

    wanted = {"mcpservers": "mcpServers", "servers": "servers"}
    for key in data:
        close = difflib.get_close_matches(str(key).lower(), list(wanted), n=1)
        if close:
            return f"; found {str(key)!r} (did you mean {wanted[close[0]]!r}?)"
    found = ", ".join(repr(str(k)) for k in list(data)[:5])
    return f"; found {found}" if found else "; it is empty"


def _meant(key: str) -> str:
    """``" (did you mean 'command'?)"`` for a server key close to a known one, else ``""``."""
    hint = did_you_mean(key, SERVER_KEYS)
    return f" ({hint[2:]})" if hint else ""


def _server(name: str, entry: dict[str, Any], source: str, path: str,
            env: Mapping[str, str]) -> ServerConfig:
    expander = _Expander(source, name, env)

    def expand(value: str, where: str) -> str:
        return expander(value, f"{path}.{where}")

    declared = entry.get("type", entry.get("transport"))
    if declared is not None:
        where = f"{path}.type" if "type" in entry else f"{path}.transport"
        declared = _string(declared, source, where)
        if declared in ("streamable-http", "streamableHttp"):
            declared = "http"
        if declared not in TYPES:
            raise ConfigError(source, where,
                              f"unknown server type {declared!r}; known types: {list(TYPES)}")
    if declared is None and "command" in entry and "url" in entry:
        raise ConfigError(source, path, "both 'command' and 'url' are given; keep one, or "
                          "say which with 'type'")
    kind = declared or ("stdio" if "command" in entry else "http" if "url" in entry else None)
    if kind is None:
        raise ConfigError(source, path, "a server needs 'command' (stdio) or 'url' (http/sse)"
                          + _unknown_keys(entry))
    foreign = _HTTP_ONLY if kind == "stdio" else _STDIO_ONLY
    for key in foreign:
        if key in entry:
            raise ConfigError(source, f"{path}.{key}",
                              f"{key!r} does not apply to a {kind} server")
    options: dict[str, Any] = {}
    secrets: set[str] = set()
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
            secrets.update(options["env"].values())
        if "cwd" in entry:
            options["cwd"] = expand(_string(entry["cwd"], source, f"{path}.cwd"), "cwd")
    else:
        raw = _string(entry.get("url"), source, f"{path}.url")
        url = expand(raw, "url")
        _check_url(url, raw, source, f"{path}.url")
        target = url
        if "headers" in entry:
            options["headers"] = {
                k: expand(v, f"headers.{k}")
                for k, v in _string_map(entry["headers"], source, f"{path}.headers").items()
            }
            secrets.update(options["headers"].values())
        if "auth" in entry:
            options["auth"] = _auth(entry["auth"], expand, source, f"{path}.auth")
            secrets.update(v for v in (getattr(options["auth"], "client_secret", None),
                                       getattr(options["auth"], "private_key", None)) if v)
        if kind == "sse":
            options["transport"] = "sse"
    for key in ("timeout", "connect_timeout"):
        if key in entry:
            options[key] = _seconds(entry[key], source, f"{path}.{key}")
    if "max_concurrent" in entry:
        options["max_concurrent"] = _count(entry["max_concurrent"], source,
                                           f"{path}.max_concurrent")
    for key, check in (("max_message_bytes", check_max_message_bytes),
                       ("max_tools", check_max_tools)):
        if key in entry:
            try:
                options[key] = check(entry[key])
            except ValueError as exc:
                raise ConfigError(source, f"{path}.{key}", str(exc)) from None
    if "protocol_mode" in entry:
        from toolbench._transports.mcp.client import PROTOCOL_MODES

        if entry["protocol_mode"] not in PROTOCOL_MODES:
            raise ConfigError(source, f"{path}.protocol_mode",
                              f"invalid protocol_mode {_describe(entry['protocol_mode'])}: "
                              f"use one of {', '.join(map(repr, PROTOCOL_MODES))}")
        options["protocol_mode"] = entry["protocol_mode"]
    if "roots" in entry:
        from toolbench._transports.server_requests import roots_of

        roots = entry["roots"]
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            raise ConfigError(source, f"{path}.roots", f"invalid roots {_describe(roots)}: a "
                              "list of paths or file:// URIs (this server's own roots)")
        roots = [expand(r, f"roots[{i}]") for i, r in enumerate(roots)]
        try:
            roots_of(roots)
        except ValueError as exc:
            raise ConfigError(source, f"{path}.roots", str(exc)) from None
        options["roots"] = roots
    if "toolbench" in entry:  # toolbench's own settings; the entry stays what others read
        options.update(_toolbench_key(entry["toolbench"], source, f"{path}.toolbench"))
    if "namespace" in entry:
        namespace = entry["namespace"]
        if namespace is not None and namespace != "" and not is_server_name(namespace):
            raise ConfigError(source, f"{path}.namespace",
                              f"invalid namespace {_describe(namespace)}: a namespace is "
                              f"{SERVER_RULE}, or null or \"\" for none")
        options["namespace"] = namespace
    secrets |= expander.secrets
    return ServerConfig(name, target, kind, options, frozenset(s for s in secrets if s))


def _toolbench_key(value: Any, source: str, path: str) -> dict[str, Any]:
    """A server entry's ``"toolbench": {"rate": "10/s"}``: settings other clients ignore."""
    from toolbench._core.rates import parse_rate

    if not isinstance(value, dict):
        raise ConfigError(source, path, f"invalid toolbench settings {_describe(value)}: an "
                          'object such as {"rate": "10/s"}')
    unknown = sorted(k for k in value if k != "rate")
    if unknown:
        raise ConfigError(source, f"{path}.{unknown[0]}", f"unknown toolbench setting "
                          f"{unknown[0]!r}: the settings are ['rate']")
    try:
        parse_rate(value.get("rate"))
    except ValueError as exc:
        raise ConfigError(source, f"{path}.rate", str(exc)) from None
    return {"rate": value["rate"]} if value.get("rate") is not None else {}
