"""A stdio server's stderr, captured in a temporary file so its tail can explain failures.

The SDK hands ``errlog`` straight to the child process, so it must be a real file with a
descriptor (an ``io.StringIO`` fails); a temporary file also survives a chatty server
without filling a pipe and blocking it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import TextIO

TAIL_BYTES = 64 * 1024
"""How much of the end of the file is read for a tail: bounded, however much was written."""


class StderrLog:
    """One temporary file per connection, kept across reconnects and deleted on close."""

    def __init__(self, label: str) -> None:
        self._label = label
        self._file: TextIO | None = None
        self._path: str | None = None

    def file(self) -> TextIO:
        """The file to pass as ``errlog``; created on first use."""
        if self._file is None:
            fd, path = tempfile.mkstemp(prefix=f"toolbench-{self._label}-", suffix=".stderr")
            self._file = os.fdopen(fd, "w+", encoding="utf-8", errors="replace")
            self._path = path
        return self._file

    def mark(self) -> int:
        """The current size, so a start error can quote only what this attempt wrote."""
        if self._path is None:
            return 0
        try:
            return os.path.getsize(self._path)
        except OSError:
            return 0

    def tail(self, lines: int = 20, since: int = 0) -> str:
        """The last ``lines`` lines (written after offset ``since``); "" when there are none."""
        if self._path is None or lines <= 0:
            return ""
        try:
            with open(self._path, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                start = max(since, size - TAIL_BYTES)
                f.seek(start)
                data = f.read()
        except OSError:
            return ""
        if start > since and b"\n" in data:  # the window began mid-line: drop that part, so
            data = data[data.index(b"\n") + 1:]  # no partial secret escapes the redactor
        text = data.decode("utf-8", errors="replace")
        kept = [line.rstrip() for line in text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])

    def delete(self) -> None:
        """Close and remove the file; safe to call twice."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        if self._path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._path)
            self._path = None
