"""What servers say without being asked: log messages and progress, kept bounded per server.

Every entry is untrusted text from a server, so each is capped where it enters (message
and data), and each server keeps only its last ``PER_SERVER`` entries: a server that floods
logs costs a deque append per message and never grows memory or starves a neighbour's
history. Entries are appended on the shared loop and read from any thread (``entries``
copies under a lock), so ``bench.logs`` never waits for the loop.

Logging uses the SDK's own ``logging_callback``; on the 2026 protocol servers send logs only
to a client that asks for a level (``log_level``), so the bench always asks for one
(``"info"`` unless told otherwise). Over the 2025 protocol many servers send every level
whatever was asked (the SDK's own ``MCPServer`` does), so messages below the level are also
dropped here: the level a user asks for is the level they see.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

from toolbench._core import html as _html

_log = logging.getLogger(__name__)

PER_SERVER = 1_000
"""Entries kept per server (the oldest go first)."""
MESSAGE_CHARS = 2_000
"""A message longer than this is cut, with a mark saying how long it was."""
DATA_CHARS = 10_000
"""Structured log data whose JSON is longer than this is kept as cut JSON text instead."""
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""MCP's log levels (RFC 5424), least severe first."""

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert",
                   "emergency"]
EntryKind = Literal["log", "progress", "resource_updated", "app"]
ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Entry:
    """One log message or progress update, as ``bench.logs`` shows it."""

    time: dt.datetime
    server: str
    kind: EntryKind
    level: str | None
    logger: str | None
    message: str
    data: Any
    call_id: str | None


def _capped_data(data: Any) -> Any:
    """``data`` itself when its JSON is small; else the JSON text, cut (never a huge object)."""
    if data is None or isinstance(data, bool | int | float):
        return data
    if isinstance(data, str):
        return _html.shorten(data, DATA_CHARS)
    try:
        text = json.dumps(data, default=str, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return _html.shorten(repr(data), DATA_CHARS)
    return data if len(text) <= DATA_CHARS else _html.shorten(text, DATA_CHARS)


def _message_of(data: Any) -> str:
    """A log message's one line of text: the data if it is text, else its ``message`` key,
    else its JSON."""
    if isinstance(data, str):
        text = data
    elif isinstance(data, dict) and isinstance(data.get("message"), str):
        text = data["message"]
    else:
        try:
            text = json.dumps(data, default=str, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            text = repr(data)
    return _html.shorten(text, MESSAGE_CHARS)


class Notifications:
    """The bench's bounded book of every server's log messages and progress updates."""

    def __init__(self, log_level: str | None = "info") -> None:
        if log_level is not None and log_level not in LEVELS:
            raise ValueError(f"invalid log_level {log_level!r}: one of {', '.join(LEVELS)}, "
                             "or None to ask servers for no logs")
        self.log_level = log_level
        self._lock = threading.Lock()
        self._books: dict[str, deque[Entry]] = {}
        self.dropped: dict[str, int] = {}
        """Per server, how many old entries the cap has pushed out."""

    def add(self, server: str, kind: EntryKind, *, level: str | None = None,
            logger: str | None = None, message: str = "", data: Any = None,
            call_id: str | None = None) -> None:
        entry = Entry(dt.datetime.now(dt.UTC), server, kind,
                      level if level in LEVELS else None if level is None else
                      _html.shorten(str(level), 40),
                      None if logger is None else _html.shorten(str(logger), 200),
                      _html.shorten(message, MESSAGE_CHARS), _capped_data(data), call_id)
        with self._lock:
            book = self._books.get(server)
            if book is None:
                book = self._books[server] = deque(maxlen=PER_SERVER)
            if len(book) == PER_SERVER:
                self.dropped[server] = self.dropped.get(server, 0) + 1
            book.append(entry)

    def entries(self, server: str | None = None) -> list[Entry]:
        """Every kept entry (of one server, or all), oldest first."""
        with self._lock:
            books = [self._books.get(server, deque())] if server is not None \
                else list(self._books.values())
            found = [entry for book in books for entry in book]
        found.sort(key=lambda e: e.time)
        return found

    def callbacks(self, server: str) -> dict[str, Any]:
        """The SDK client's keywords that route ``server``'s log messages here."""
        if self.log_level is None:
            return {}

        async def on_log(params: Any) -> None:
            # The level asked for now (``bench.log_level`` may change it after connecting).
            least = LEVELS.index(self.log_level) if self.log_level is not None else len(LEVELS)
            level = getattr(params, "level", None)
            if level in LEVELS and LEVELS.index(level) < least:
                return
            data = getattr(params, "data", None)
            self.add(server, "log", level=level,
                     logger=getattr(params, "logger", None), message=_message_of(data),
                     data=data)

        return {"logging_callback": on_log, "log_level": self.log_level}

    def progress(self, server: str, call_id: str,
                 also: Callable[[float, float | None, str | None], None] | None = None,
                 ) -> ProgressFn:
        """A progress callback for one call: every update is logged, then ``also`` runs.

        ``also`` (a bar, or the user's function) runs on the shared loop, so an exception
        from it is logged as an entry rather than failing the call.
        """

        async def on_progress(progress: float, total: float | None, message: str | None,
                              ) -> None:
            text = "" if message is None else _html.shorten(str(message), MESSAGE_CHARS)
            self.add(server, "progress", message=text,
                     data={"progress": progress, "total": total}, call_id=call_id)
            if also is not None:
                try:
                    also(progress, total, message)
                except Exception as exc:
                    self.add(server, "progress", level="error",
                             message=f"the progress function raised {type(exc).__name__}: "
                                     f"{_html.shorten(str(exc), 300)}", call_id=call_id)

        return on_progress


async def send_log_level(client: Any, level: str, timeout: float, server: str) -> bool:
    """Ask an entered ``mcp.Client``'s server for log messages from ``level`` up.

    Handshake era: a ``logging/setLevel`` request, when the server offers logging (bounded by
    ``timeout``; a refusal is logged, not raised). 2026-07-28: the level rides on every
    request's ``_meta``, so the session's level is updated (the SDK has no public setter).
    Returns whether the server was told.
    """
    import mcp_types as types
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if level not in LEVELS:
        raise ValueError(f"invalid log level {level!r}: one of {', '.join(LEVELS)}")
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        client.session._log_level = level
        return True
    if client.server_capabilities.logging is None:
        return False
    try:
        import anyio

        with anyio.fail_after(timeout):
            # The session's own request: the Client's wrapper warns (deprecated in 2026).
            await client.session.send_request(
                types.SetLevelRequest(params=types.SetLevelRequestParams(level=cast(Any, level))),
                types.EmptyResult)
    except Exception as exc:
        _log.debug("logging/setLevel %s to %s failed: %r", level, server, exc)
        return False
    return True
