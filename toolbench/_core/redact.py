"""Keeping secrets out of what we show: the ``Redactor``, URLs fit to show, one-line errors.

A connection knows values that must never appear in a message, a table or a traceback: its env
and header values, ``${VAR}`` expansions from a config, tokens and codes once a sign-in brings
them. Every text shown passes through that connection's :class:`Redactor` first. It lives in
the core, not with MCP, because the bench redacts with it too (its tables, its journal, a
replay), and every layer may use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

from toolbench._core import html as _html

MIN_SECRET_LEN = 4
"""Shorter values are not redacted: replacing "1" or "on" everywhere would garble every text,
and a value that short protects nothing."""


class Redactor:
    """Replaces every secret value (env, header) with a marker in any text we show."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._values = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LEN}
        self._compile()

    def _compile(self) -> None:
        values = sorted(self._values, key=len, reverse=True)
        # Case-insensitive: a secret in a URL's host comes back lowercased (hosts are).
        self._pattern = (re.compile("|".join(re.escape(v) for v in values), re.IGNORECASE)
                         if values else None)
        self.active = self._pattern is not None
        """Whether there is any secret to hide (read on every call: an attribute)."""

    def add(self, secrets: Iterable[str]) -> None:
        """Hide these too from now on (tokens and codes are known only once they arrive)."""
        new = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LEN}
        if not new <= self._values:
            self._values |= new
            self._compile()

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub("[redacted]", text)

    def cause(self, exc: BaseException) -> BaseException | None:
        """``exc`` to chain as a ``__cause__``, or None when any text in its chain would show
        a secret (a traceback prints the cause unredacted, e.g. a server's error message)."""
        if self._pattern is None:
            return exc
        seen: set[int] = set()
        stack: list[BaseException] = [exc]
        while stack:
            current = stack.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if self._pattern.search(str(current)) or self._pattern.search(repr(current.args)):
                return None
            stack.extend(leaves(current) if isinstance(current, BaseExceptionGroup) else ())
            stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        return exc


def display_url(url: str) -> str:
    """A URL fit to show: no userinfo, and query values hidden (tokens often travel there)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc += f":{parts.port}"
    query = "&".join(f"{kv.split('=', 1)[0]}=..." for kv in parts.query.split("&") if kv)
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def leaves(exc: BaseException) -> list[BaseException]:
    """The non-group exceptions inside ``exc`` (anyio task groups wrap what went wrong)."""
    if isinstance(exc, BaseExceptionGroup):
        found: list[BaseException] = []
        for inner in exc.exceptions:
            found.extend(leaves(inner))
        return found
    return [exc]


def describe(exc: BaseException, redact: Redactor, limit: int = 400) -> str:
    """One line naming what went wrong, with group wrappers peeled off and secrets hidden."""
    parts = []
    for leaf in leaves(exc)[:3]:
        text = str(leaf).strip().replace("\n", " ")
        parts.append(f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__)
    return _html.shorten(redact("; ".join(parts)), limit)
