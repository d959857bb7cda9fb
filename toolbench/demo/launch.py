"""How the demo servers start: their commands, the ``mcpServers`` mapping, the child's path.

Apart from the package's front (``toolbench/demo/__init__.py``), which only hands these names on.
"""


from __future__ import annotations

import os
import site
import sys
from pathlib import Path
from typing import Any

from toolbench.demo._settings import (
    ENV_VARS,
    check_failure_rate,
    check_latency,
    check_seed,
)

SERVERS: tuple[str, ...] = ("geo", "geo_precise", "flaky")
"""The demo servers' names, in the order a notebook should show them."""

_MODULES = {name: f"toolbench.demo.{name}" for name in SERVERS}


def command(name: str) -> list[str]:
    """The command line that starts demo server ``name`` over stdio, with default settings."""
    if name not in _MODULES:
        raise ValueError(f"unknown demo server {name!r}: the demo servers are {', '.join(SERVERS)}")
    return [sys.executable, "-m", _MODULES[name]]


def config(
    *,
    latency_ms: float | None = None,
    failure_rate: float | None = None,
    jitter_ms: float | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """An ``{"mcpServers": {...}}`` mapping that starts every demo server.

    The keyword arguments configure ``flaky``; ``None`` leaves the server's own default (or
    the ``TOOLBENCH_DEMO_*`` environment variable, when set here: the MCP SDK starts a stdio
    child with only a few safe variables, so they are copied into ``env`` explicitly).
    """
    flags: list[str] = []
    if latency_ms is not None:
        flags += ["--latency-ms", _number_text(check_latency(latency_ms))]
    if jitter_ms is not None:
        flags += ["--jitter-ms", _number_text(check_latency(jitter_ms, "jitter_ms"))]
    if failure_rate is not None:
        flags += ["--failure-rate", _number_text(check_failure_rate(failure_rate))]
    if seed is not None:
        flags += ["--seed", str(check_seed(seed))]

    base_env = python_path_env()
    servers: dict[str, Any] = {}
    for name in SERVERS:
        executable, *args = command(name)
        env = dict(base_env)
        if name == "flaky":
            args += flags
            env.update({key: os.environ[key] for key in ENV_VARS if key in os.environ})
        servers[name] = {"command": executable, "args": args, "env": env}
    return {"mcpServers": servers}


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def python_path_env() -> dict[str, str]:
    """PYTHONPATH for the children when toolbench is not installed in site-packages.

    A source checkout used without installing (a notebook started in ``notebooks/``) would
    otherwise start children that cannot import ``toolbench``: the SDK gives a stdio child a
    minimal environment and the notebook's working directory is not the checkout.
    """
    root = Path(__file__).resolve().parents[2]
    installed = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]}
    return {} if root in installed else {"PYTHONPATH": str(root)}


__all__ = ["SERVERS", "command", "config"]
