"""Reading a client's file: JSON with comments (VS Code and Zed write JSONC), TOML (Codex).

A mistake is a ``ConfigError`` that names the file and the line, because the person fixing
it has the file open. Reading never writes: the file is opened read-only, once, and capped
(``servers.config.read_text``).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from toolbench._bench.servers.config import ConfigError, read_text

_TOML_WHERE = re.compile(r"\(at line (\d+), column (\d+)\)")


def strip_jsonc(text: str) -> str:
    """JSON text without ``//`` and ``/* */`` comments and trailing commas, outside strings
    only (a string's ``//`` or ``",]"``, a password's say, is kept as written); every newline
    is kept, so a JSON error's line number is the file's own."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_string = False
            i += 1
        elif ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif text.startswith(("//", "/*"), i):
            stop = _comment_end(text, i)
            out.append("\n" * text.count("\n", i, stop))
            i = stop
        else:
            if ch != "," or _next_significant(text, i + 1) not in ("}", "]"):
                out.append(ch)
            i += 1
    return "".join(out)


def _comment_end(text: str, i: int) -> int:
    """Where the comment starting at ``i`` ends (a line comment: at its newline)."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    end = text.find("*/", i + 2)
    return len(text) if end < 0 else end + 2


def _next_significant(text: str, i: int) -> str:
    """The first character from ``i`` on that is neither white space nor in a comment."""
    n = len(text)
    while i < n:
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith(("//", "/*"), i):
            i = _comment_end(text, i)
        else:
            return text[i]
    return ""


def load_file(source: str) -> Any:
    """A client's config file parsed: TOML for ``*.toml``, else JSON (comments allowed)."""
    text = read_text(source)
    if source.lower().endswith(".toml"):
        return load_toml(text, source)
    try:
        return json.loads(strip_jsonc(text))
    except json.JSONDecodeError as exc:
        raise ConfigError(source, "$", f"not valid JSON: {exc.msg} at line {exc.lineno} "
                          f"column {exc.colno}") from exc
    except RecursionError:
        raise ConfigError(source, "$", "nested too deeply to read") from None


def load_toml(text: str, source: str) -> Any:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_WHERE.search(str(exc))
        where = f" at line {found.group(1)} column {found.group(2)}" if found else ""
        if "(at end of document)" in str(exc):
            where = f" at the end of the file (line {len(text.splitlines()) or 1})"
        what = _TOML_WHERE.sub("", str(exc)).replace("(at end of document)", "").strip()
        raise ConfigError(source, "$", f"not valid TOML: {what}{where}") from exc
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(source, "$", "nested too deeply to read") from None


def read_env_file(path: str, source: str, where: str) -> dict[str, str]:
    """A ``.env`` file (``envFile``): ``NAME=value`` lines, ``export`` and quotes allowed,
    ``#`` comments. A missing file is a ``ConfigError`` naming it; values are never quoted
    back (they are secrets)."""
    if not os.path.isfile(path):
        raise ConfigError(source, where, f"envFile {path!r} does not exist (or is not a file)")
    text = read_text(path)
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
            raise ConfigError(path, f"line {number}", "expected NAME=value (the value is not "
                              "shown: it may be a secret)")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        values[name] = value
    return values
