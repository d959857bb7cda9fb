"""Which walk a server gets (stdio or HTTP), and where its settings come from: the bench's
row (what ``connect`` was given, kept even when it failed) or a config file's entry.

The whole walk is bounded: each step by ``timeout``, the child's ending by a few seconds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from toolbench._bench.doctor.http import walk_http
from toolbench._bench.doctor.stdio import walk_stdio
from toolbench._bench.doctor.steps import SKIP, Diagnosis, Recorder
from toolbench._core.checks import is_seconds
from toolbench._core.redact import Redactor
from toolbench._routing.connections import secret_values

DEFAULT_TIMEOUT_S = 30.0
"""Each step's bound when neither the call, the server's entry nor a bench says one: connect's
own default, so the doctor never fails a server that ``connect`` would have waited for."""


def step_timeout(given: float | None, options: Mapping[str, Any], bench_default: float) -> float:
    """Each step's bound: the one given, else the server's own ``connect_timeout``, else the
    bench's (a step is one piece of what ``connect`` waits for as a whole, so it gets no
    less; a doctor stricter than ``connect`` failed a server that connects, under load)."""
    if given is not None:
        return given
    own = options.get("connect_timeout")
    return float(own) if is_seconds(own) else bench_default


def _is_url(target: Any) -> bool:
    return isinstance(target, str) and target.lower().startswith(("http://", "https://"))


def _shown_target(target: Any) -> str:
    if _is_url(target):
        base, _sep, _query = str(target).partition("?")
        return base
    if isinstance(target, list | tuple):
        return " ".join(str(a) for a in target)
    return str(target) if isinstance(target, str) else type(target).__name__


async def diagnose(name: str, target: Any, options: Mapping[str, Any],
                   timeout: float = DEFAULT_TIMEOUT_S) -> Diagnosis:
    """Walk one server's connection; never raises for what the server does."""
    redact = Redactor(secret_values(options))
    if _is_url(target):
        sse = options.get("transport") == "sse" or str(target).split("?")[0].rstrip(
            "/").endswith("/sse")
        transport = "sse" if sse else "http"
    elif isinstance(target, str | list | tuple):
        transport = "stdio"
    else:
        transport = "in-process"
    diagnosis = Diagnosis(name, transport, redact(_shown_target(target)))
    rec = Recorder(diagnosis, redact)
    if transport == "stdio":
        cwd = options.get("cwd")
        await walk_stdio(rec, list(target) if isinstance(target, tuple) else target,
                         options.get("env"), None if cwd is None else os.fspath(cwd), timeout)
    elif transport in ("http", "sse"):
        await walk_http(rec, str(target), options.get("headers"), transport, timeout,
                        signs_in=options.get("auth") is not None)
    else:
        rec.add("transport", SKIP, "an in-process server or ToolClient: no process or "
                "network to diagnose")
    return diagnosis


def settings(name: str, config: Any = None, rows: Any = None) -> tuple[Any, dict[str, Any]]:
    """``(target, options)`` of server ``name``: from ``config`` (a file or mapping of any
    client's format) when given, else from the bench's row (``rows``: its ``Servers``)."""
    if config is not None:
        from toolbench._bench.clients.reading import read_client_config
        from toolbench._bench.servers.config import parse

        parsed = parse(read_client_config(config))
        for entry in parsed.servers:
            if entry.name == name:
                return entry.target, {**entry.options, "secrets": entry.secrets}
        if name in parsed.disabled:
            raise ValueError(f"server {name!r} is disabled in {parsed.source}")
        known = ", ".join(repr(e.name) for e in parsed.servers) or "none"
        raise KeyError(f"no server {name!r} in {parsed.source}; it has {known}")
    row = rows.row(name) if rows is not None else None
    if row is None or row.given is None:
        known = ", ".join(repr(r.name) for r in rows.rows()) if rows is not None else ""
        raise KeyError(f"no server {name!r} on this bench (it has {known or 'none'}); "
                       "pass config= to diagnose one from a config file")
    target, options, _namespace = row.given
    return target, dict(options)
