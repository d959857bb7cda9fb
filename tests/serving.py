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
