"""How the SDK's failures become toolbench's error table, and how secrets stay out of them.

Kept apart from the connection code so the mapping can be read (and audited) in one place:
every exception that can leave ``McpClient`` passes through :func:`map_call_error`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

import anyio
import pydantic
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
)

from toolbench import _html
from toolbench._errors import Malformed, Refused, TimedOut, ToolError, Unreachable
from toolbench._ids import ToolId

REFUSED_CODES = frozenset({METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR})
"""JSON-RPC codes that mean the server declined before running anything."""

MIN_SECRET_LEN = 4
"""Shorter values are not redacted: replacing "1" or "on" everywhere would garble every text,
and a value that short protects nothing."""

_LOST_TYPES: tuple[type[BaseException], ...] = (
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    ConnectionError,
    EOFError,
)


class Redactor:
    """Replaces every secret value (env, header) with a marker in any text we show."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted({s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LEN},
                        key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in values)) if values else None

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub("[redacted]", text)


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


def is_connection_loss(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection itself is gone (so the next call must reconnect)."""
    for leaf in leaves(exc):
        if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
            return True
        if isinstance(leaf, _LOST_TYPES):
            return True
    return False


def map_call_error(
    exc: Exception, tool: ToolId | None, *, timeout: float, redact: Redactor, action: str
) -> ToolError:
    """Sort one SDK failure into the error table (DESIGN.md, "Errors").

    Anything we cannot place is ``TimedOut``: the request was sent, so claiming it did not
    happen would invite an unsafe retry.
    """
    if isinstance(exc, ToolError):
        return exc
    found = leaves(exc)
    leaf = found[0] if len(found) == 1 else exc
    if isinstance(leaf, MCPError):
        message = _html.shorten(redact(leaf.message), 400)
        if leaf.code in REFUSED_CODES:
            return Refused(f"the server refused the {action} (code {leaf.code}): {message}",
                           tool=tool)
        if leaf.code == REQUEST_TIMEOUT:
            return TimedOut(f"no answer to the {action} within {timeout:g} s", tool=tool)
        if leaf.code == CONNECTION_CLOSED:
            return TimedOut(
                f"the connection was lost during the {action}; it may or may not have run",
                tool=tool,
            )
        return TimedOut(f"the server answered the {action} with error {leaf.code}: {message}",
                        tool=tool)
    if isinstance(leaf, TimeoutError):
        return TimedOut(f"no answer to the {action} within {timeout:g} s", tool=tool)
    if isinstance(leaf, RuntimeError) and "within an async context manager" in str(leaf):
        return Unreachable(f"the connection closed before the {action} was sent", tool=tool)
    if isinstance(leaf, RuntimeError | pydantic.ValidationError):
        # The SDK raises RuntimeError when structured content breaks the output schema (or an
        # unexpected result shape arrives), and ValidationError for an unreadable result.
        return Malformed(
            f"the server's answer to the {action} is not a valid tool result: "
            f"{describe(leaf, redact)}",
            tool=tool,
        )
    if is_connection_loss(leaf):
        return TimedOut(
            f"the connection was lost during the {action}; it may or may not have run "
            f"({describe(leaf, redact)})",
            tool=tool,
        )
    return TimedOut(f"the {action} failed in transit: {describe(leaf, redact)}", tool=tool)
