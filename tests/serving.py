"""Test servers run as children on loopback: started, their URL found, and stopped."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

START_S = 30.0
"""How long a server is given to print its URL; then it is killed (the read then ends)."""
LISTEN_S = 20.0
"""How long a server told its port is given to accept connections; then the test fails."""
SERVERS = Path(__file__).parent / "servers"


def stop(proc: subprocess.Popen[Any], wait_s: float = 5.0) -> None:
    """End a server child: terminate, then kill if it is still there after ``wait_s``."""
    proc.terminate()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(wait_s)


@contextlib.contextmanager
def _first_line(command: list[str], *, stderr: int | None, starts: str,
                name: str) -> Iterator[str]:
    """Run ``command`` and yield the first line it prints, which must start with ``starts``
    (``name`` says who printed it otherwise); stopped when the block ends."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    killer = threading.Timer(START_S, proc.kill)  # bounds the readline below
    killer.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        killer.cancel()
        assert line.startswith(starts), f"{name} printed {line!r}"
        yield line
    finally:
        killer.cancel()
        stop(proc)
        if proc.stdout is not None:
            proc.stdout.close()


@contextlib.contextmanager
def served_url(script: Path, *args: str) -> Iterator[str]:
    """Run ``script 0 *args`` (port 0: a free one) and yield the URL it prints first."""
    with _first_line([sys.executable, str(script), "0", *args], stderr=None,
                     starts="http://127.0.0.1:", name=script.name) as line:
        yield line.strip()


@contextlib.contextmanager
def limited_server(*args: str) -> Iterator[str]:
    """``python -m toolbench.demo.limited --port 0 *args``; yields its MCP URL (the server
    counts what it served at ``/stats``, see :func:`limited_stats`)."""
    with _first_line([sys.executable, "-m", "toolbench.demo.limited", "--port", "0", *args],
                     stderr=subprocess.DEVNULL, starts="READY http://127.0.0.1:",
                     name="limited") as line:
        yield line.split()[1]


def free_port() -> int:
    """A loopback port free now (for a server that must be told its port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def served_echo(mode: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``servers/echo_server.py`` over ``mode`` (``streamable-http`` or ``sse``) on a free
    port: yields its MCP URL, once it accepts connections, and the process."""
    with served_mcp("echo_server.py", mode) as served:
        yield served


@contextlib.contextmanager
def served_mcp(script: str, mode: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``servers/<script> <mode> <port>`` (``mode`` is ``streamable-http`` or ``sse``) on a
    free port: yields its MCP URL, once it accepts connections, and the process."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVERS / script), mode, str(port)],
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + LISTEN_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail(f"{mode} test server {script} did not accept connections on "
                                f"port {port}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/{'mcp' if mode == 'streamable-http' else 'sse'}", proc
    finally:
        stop(proc)


def limited_stats(url: str) -> dict[str, int]:
    """What the limited demo server received, served, limited and repeated."""
    import json
    import urllib.request

    with urllib.request.urlopen(url.removesuffix("/mcp") + "/stats", timeout=10) as answer:
        found: dict[str, int] = json.load(answer)
    return found
