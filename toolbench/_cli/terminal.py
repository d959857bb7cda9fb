"""What the command prints: server text made safe for a terminal, tables cut to a width,
errors on stderr, and the name to type to run toolbench again."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

WIDTH = 48
"""Characters of a table cell (the library's tables keep the whole value)."""


def text_table(df: pd.DataFrame, columns: Sequence[str]) -> str:
    if df.empty:
        return "(none)"
    view = df[[c for c in columns if c in df.columns]].copy()
    for column in view.columns:
        view[column] = view[column].map(_short)
    return str(view.to_string(index=False))


def _short(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):  # None or NaN
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.1f}"  # latency_ms; full precision stays in the library's tables
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = safe(" ".join(text.split()))
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: str) -> str:
    """Server text fit for a terminal: control characters (ESC, BEL, CR, BS, C1...) other
    than newline and tab are shown escaped (``\\x1b``), never sent to the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def err(message: str) -> None:
    print(f"toolbench: {safe(message)}", file=sys.stderr)


def command_name() -> str:
    """How to run toolbench again from this shell, as the user can type it.

    The quick start never activates its venv, so a bare ``toolbench`` is "command not
    found" there: the name is ``toolbench`` only when that name on ``PATH`` is this very
    command; else the path this one was started by (``.venv/bin/toolbench``, relative to the
    current folder as typed), or this interpreter with ``-m toolbench``.
    """
    argv0 = sys.argv[0] if sys.argv else ""
    found = shutil.which("toolbench")
    if Path(argv0).name == "toolbench":  # the console script
        try:
            if found is not None and os.path.samefile(found, argv0):
                return "toolbench"
        except OSError:
            pass
        return shlex.quote(argv0)
    if found is not None and Path(found).parent == Path(sys.executable).parent:
        return "toolbench"  # python -m toolbench, and this environment's script is on PATH
    return f"{shlex.quote(sys.executable)} -m toolbench"


def activate_hint(command: str) -> str:
    """One line on typing plain ``toolbench``, when the command is a venv's script path."""
    if command == "toolbench" or command.endswith(" -m toolbench"):
        return ""
    activate = Path(sys.argv[0]).parent / "activate"
    if not activate.is_file():
        return ""
    return f"  (or run `source {shlex.quote(str(activate))}` once to type plain `toolbench`)\n"
