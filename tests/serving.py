"""A test server script run as a child that prints its URL once it listens (loopback)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

START_S = 30.0
"""How long a server is given to print its URL; then it is killed (the read then ends)."""


@contextlib.contextmanager
def served_url(script: Path, *args: str) -> Iterator[str]:
    """Run ``script 0 *args`` (port 0: a free one) and yield the URL it prints first."""
    proc = subprocess.Popen([sys.executable, str(script), "0", *args], stdout=subprocess.PIPE,
                            text=True)
    killer = threading.Timer(START_S, proc.kill)  # bounds the readline below
    killer.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        killer.cancel()
        assert line.startswith("http://127.0.0.1:"), f"{script.name} printed {line!r}"
        yield line.strip()
    finally:
        killer.cancel()
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()


@contextlib.contextmanager
def limited_server(*args: str) -> Iterator[str]:
    """``python -m toolbench.demo.limited --port 0 *args``; yields its MCP URL (the server
    counts what it served at ``/stats``, see :func:`limited_stats`)."""
    proc = subprocess.Popen([sys.executable, "-m", "toolbench.demo.limited", "--port", "0",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    killer = threading.Timer(START_S, proc.kill)  # bounds the readline below
    killer.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        killer.cancel()
        assert line.startswith("READY http://127.0.0.1:"), f"limited printed {line!r}"
        yield line.split()[1]
    finally:
        killer.cancel()
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()


def limited_stats(url: str) -> dict[str, int]:
    """What the limited demo server received, served, limited and repeated."""
    import json
    import urllib.request

    with urllib.request.urlopen(url.removesuffix("/mcp") + "/stats", timeout=10) as answer:
        found: dict[str, int] = json.load(answer)
    return found
