"""An MCP Registry entry (``server.json``) as something to connect: a command or a URL.

The official registry's schema (https://static.modelcontextprotocol.io/schemas/2025-12-11/
server.schema.json; https://github.com/modelcontextprotocol/registry/blob/main/docs/
reference/server-json/generic-server-json.md): ``packages[]`` (``registryType`` ``npm`` or
``pypi``, ``identifier``, ``version``, ``transport``, ``runtimeArguments``,
``packageArguments``, ``environmentVariables``) and ``remotes[]`` (``type``
``streamable-http`` or ``sse``, ``url``, ``headers``). Nothing is fetched from the registry:
the entry is the caller's file or mapping.

**What runs**, first that can:

1. a PyPI package that is already installed here: its own console script (``uvx`` would
   fetch it again, and may not exist);
2. an npm package through ``npx -y``, or a PyPI one through ``uvx``, when that runner is on
   ``PATH``;
3. a remote (streamable HTTP before SSE);
4. a package whose runner is missing: the connect then names the missing command.

A package whose own transport is HTTP (it serves a port itself), an OCI image and the
other registry types are not run; an entry with nothing else is a ``ValueError`` naming
what it saw.

**Values.** Each declared argument, environment variable, header and URL variable is
filled from ``**values``, by its name as a Python keyword (``--local-timezone`` is
``local_timezone``, ``X-Api-Key`` is ``X_Api_Key``; a positional argument by its
``valueHint``), else its fixed ``value``, else its ``default``. A required one with none of
these is refused by name. Every environment variable and header is a secret, as in a
config, and so is any value declared ``isSecret``.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from toolbench._core.ids import SERVER_RULE, is_server_name
from toolbench._routing.connections import ConnectOptions

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


@dataclass
class Runnable:
    """What ``connect_package`` connects: the name, the target, ``connect``'s options."""

    name: str
    target: str | list[str]
    options: dict[str, Any]
    how: str
    """One line saying what was chosen (``"pypi mcp-server-time (installed script)"``)."""
    secrets: set[str] = field(default_factory=set)

    def connect_options(self) -> ConnectOptions:
        """``connect``'s options, the secrets among them."""
        return cast(ConnectOptions, {**self.options, "secrets": sorted(self.secrets)})


def keyword(name: str) -> str:
    """A declared name as a Python keyword: ``--local-timezone`` -> ``local_timezone``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name.lstrip("-")).strip("_") or name


def load_entry(server_json: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """The entry as a dict; a file is read (not fetched), bad JSON names the file and line."""
    if isinstance(server_json, Mapping):
        return dict(server_json)
    from toolbench._bench.servers.config import load_json

    data = load_json(os.fspath(server_json))
    if not isinstance(data, dict):
        raise ValueError(f"{os.fspath(server_json)}: a server.json is an object, not "
                         f"{type(data).__name__}")
    return data


class _Filler:
    """Fills declared inputs from the caller's values; remembers secrets and what was used."""

    def __init__(self, values: Mapping[str, Any], entry_name: str) -> None:
        self.values = {k: str(v) for k, v in values.items()}
        self.entry = entry_name
        self.used: set[str] = set()
        self.secrets: set[str] = set()

    def value(self, spec: Mapping[str, Any], key: str, what: str) -> str | None:
        variables = spec.get("variables") if isinstance(spec.get("variables"), dict) else {}
        if key in self.values:
            self.used.add(key)
            found: str | None = self.values[key]
        elif isinstance(spec.get("value"), str):
            found = self.fill(spec["value"], variables or {}, what)
        elif spec.get("default") is not None:
            found = str(spec["default"])
        elif spec.get("isRequired"):
            raise ValueError(f"{self.entry}: the {what} is required: pass {key}=... to "
                             "connect_package" + (f" ({spec['description']})"
                                                  if spec.get("description") else ""))
        else:
            found = None
        if found is not None and spec.get("isSecret") and found:
            self.secrets.add(found)
        return found

    def fill(self, text: str, variables: Mapping[str, Any], what: str) -> str:
        """``{name}`` placeholders of a value or URL, from values or the variables' own."""
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            spec = variables.get(name) if isinstance(variables.get(name), dict) else {}
            got = self.value({**spec, "value": None} if spec else
                             {"isRequired": True, "description": None},
                             keyword(name), f"variable {{{name}}} of the {what}")
            return got or ""
        return _PLACEHOLDER.sub(one, text)


def _arguments(specs: Any, filler: _Filler, what: str) -> list[str]:
    out: list[str] = []
    for spec in specs if isinstance(specs, list) else []:
        if not isinstance(spec, dict):
            continue
        if spec.get("type") == "named" and isinstance(spec.get("name"), str):
            value = filler.value(spec, keyword(spec["name"]),
                                 f"{what} argument {spec['name']!r}")
            if value is not None:
                out.extend([spec["name"]] if value == "" else [spec["name"], value])
        else:
            hint = str(spec.get("valueHint") or spec.get("name") or "value")
            value = filler.value(spec, keyword(hint), f"{what} argument <{hint}>")
            if value is not None:
                out.append(value)
    return out


def _environment(specs: Any, filler: _Filler) -> dict[str, str]:
    env: dict[str, str] = {}
    for spec in specs if isinstance(specs, list) else []:
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            value = filler.value(spec, spec["name"],
                                 f"environment variable {spec['name']!r}")
            if value is not None:
                env[spec["name"]] = value
    return env


def installed_script(identifier: str) -> str | None:
    """The console script of an installed PyPI distribution, named as it is (or its only
    one), if it sits next to this Python or on PATH."""
    from importlib import metadata

    try:
        dist = metadata.distribution(identifier)
    except metadata.PackageNotFoundError:
        return None
    scripts = [ep.name for ep in dist.entry_points if ep.group == "console_scripts"]
    name = identifier if identifier in scripts else scripts[0] if len(scripts) == 1 else None
    if name is None:
        return None
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which(name)


def _package(package: Mapping[str, Any], filler: _Filler, runners: Mapping[str, str | None]
             ) -> tuple[int, list[str], str, dict[str, str]] | str:
    """``(rank, command, how, env)``, or why this package cannot run here."""
    kind = package.get("registryType")
    ident = package.get("identifier")
    if not isinstance(ident, str) or not ident:
        return f"a {kind} package without an identifier"
    transport = package.get("transport") or {}
    if isinstance(transport, dict) and transport.get("type", "stdio") != "stdio":
        return f"{kind} {ident} serves {transport.get('type')} itself (only stdio packages run)"
    version = package.get("version")
    package_args = _arguments(package.get("packageArguments"), filler, "package")
    env = _environment(package.get("environmentVariables"), filler)
    if kind == "pypi":
        script = installed_script(ident)
        if script is not None:
            return 0, [script, *package_args], f"pypi {ident} (installed: {script})", env
        spec = f"{ident}@{version}" if isinstance(version, str) and version else ident
        runtime = _arguments(package.get("runtimeArguments"), filler, "runtime")
        rank = 1 if runners.get("uvx") else 3
        return rank, ["uvx", *runtime, spec, *package_args], f"pypi {spec} via uvx", env
    if kind == "npm":
        spec = f"{ident}@{version}" if isinstance(version, str) and version else ident
        runtime = _arguments(package.get("runtimeArguments"), filler, "runtime")
        rank = 1 if runners.get("npx") else 3
        return rank, ["npx", "-y", *runtime, spec, *package_args], f"npm {spec} via npx", env
    return f"{kind} {ident} (toolbench runs npm and pypi packages)"


def choose(entry: Mapping[str, Any], name: str | None, values: Mapping[str, Any],
           runners: Mapping[str, str | None] | None = None) -> Runnable:
    """The best way to run ``entry`` here (see the module docstring), filled from values."""
    label = str(entry.get("name") or "server.json")
    runners = runners if runners is not None else {r: shutil.which(r) for r in ("uvx", "npx")}
    server = name if name is not None else _default_name(label)
    if not is_server_name(server):
        if name is not None:
            raise ValueError(f"{label}: name {name!r} is not a server name: a server name "
                             f"is {SERVER_RULE}")
        raise ValueError(f"{label}: cannot make a server name of it; pass name=...")
    seen: list[str] = []
    options: list[tuple[int, int, Runnable, _Filler]] = []
    packages = entry.get("packages")
    for i, package in enumerate(packages if isinstance(packages, list) else []):
        if not isinstance(package, dict):
            continue
        filler = _Filler(values, label)
        got = _package(package, filler, runners)
        if isinstance(got, str):
            seen.append(got)
            continue
        rank, command, how, env = got
        made = Runnable(server, command, {"env": env} if env else {}, how)
        options.append((rank, i, made, filler))
    remotes = entry.get("remotes")
    for i, remote in enumerate(remotes if isinstance(remotes, list) else []):
        if not isinstance(remote, dict):
            continue
        kind, url = remote.get("type"), remote.get("url")
        if kind not in ("streamable-http", "sse") or not isinstance(url, str):
            seen.append(f"a remote of type {kind!r}")
            continue
        filler = _Filler(values, label)
        variables = remote.get("variables") if isinstance(remote.get("variables"), dict) else {}
        filled = filler.fill(url, variables or {}, "remote URL")
        if not _is_http_url(filled):  # connect would start anything else as a command
            seen.append(f"a {kind} remote whose url is not http(s): {url[:200]!r}")
            continue
        headers = {h["name"]: v for h in remote.get("headers") or []
                   if isinstance(h, dict) and isinstance(h.get("name"), str)
                   and (v := filler.value(h, keyword(h["name"]), f"header {h['name']!r}"))
                   is not None}
        opts: dict[str, Any] = {"headers": headers} if headers else {}
        if kind == "sse":
            opts["transport"] = "sse"
        made = Runnable(server, filled, opts, f"remote {kind} {url}")
        options.append((2, (100 if kind == "streamable-http" else 200) + i, made, filler))
    if not options:
        what = "; ".join(seen) or "no 'packages' and no 'remotes'"
        raise ValueError(f"{label}: nothing toolbench can run: {what}")
    _rank, _i, best, filler = min(options, key=lambda o: (o[0], o[1]))
    unused = sorted(set(values) - filler.used)
    if unused:
        raise ValueError(f"{label}: {best.how} declares no input named {', '.join(unused)}")
    best.secrets = filler.secrets | set(best.options.get("env", {}).values()) | set(
        best.options.get("headers", {}).values())
    return best


def _is_http_url(text: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def _default_name(label: str) -> str:
    tail = label.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.-]", "-", tail).strip("-.")[:64] or "server"
