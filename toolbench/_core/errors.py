"""Every way a tool call can fail, sorted by what is known about the far side.

A caller deciding whether to retry needs one fact above all: did the call reach the
server and run? Each error class answers that through its ``disposition``::

    ToolError (Exception)                 .tool  .detail  .disposition
    ├── Unreachable   did_not_happen      no route, egress refused, server down, unknown name
    ├── Refused       did_not_happen      bad arguments, unknown tool, protocol-level refusal
    ├── TimedOut      in_doubt            sent, but the outcome is unknown
    ├── ToolFailed    landed              the tool ran and reported failure (``.result``)
    └── Malformed     landed              the answer is not a readable tool result

Mistakes made while *setting up* (a name collision, a bad config) are not ``ToolError``s:
they raise ``ValueError`` subclasses at the moment the mistake is made.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from toolbench._core.client import Result
    from toolbench._core.ids import ToolId


class Disposition(enum.StrEnum):
    """What is known about whether a failed call ran on the far side."""

    DID_NOT_HAPPEN = "did_not_happen"
    """Nothing ran: safe to repeat, even for a tool that changes things."""
    IN_DOUBT = "in_doubt"
    """It may or may not have run: never retry silently."""
    LANDED = "landed"
    """It ran: retrying would run it again."""


class ToolError(Exception):
    """Root of every call failure; the class says whether the call reached the far side."""

    disposition: ClassVar[Disposition] = Disposition.IN_DOUBT
    retry_after: float | None = None
    """Seconds the server asked the caller to wait (an HTTP ``Retry-After``), if it did:
    set on the ``Unreachable`` of a 429 or 503; a retry honours it (capped)."""

    def __init__(self, detail: str, *, tool: ToolId | None = None) -> None:
        self.detail = str(detail)
        self.tool = tool
        self.tool_shown: str | None = None
        """The tool as shown (its server's secrets hidden), once :meth:`hide` ran."""
        super().__init__(self.detail)

    def hide(self, redact: Callable[[str], str]) -> None:
        """Show this error without its server's secrets: the tool's name (a server may name
        a tool after one) and the detail pass ``redact``; ``.tool`` keeps the real id."""
        self.detail = redact(self.detail)
        self.args = (self.detail,)
        if self.tool is not None:
            self.tool_shown = redact(str(self.tool))

    def _shown(self) -> object:
        return self.tool_shown if self.tool_shown is not None else self.tool

    def __str__(self) -> str:
        return f"{self._shown()}: {self.detail}" if self.tool is not None else self.detail

    def __repr__(self) -> str:
        tool = repr(self.tool) if self.tool_shown is None else f"<{self.tool_shown}>"
        return f"{type(self).__name__}({self.detail!r}, tool={tool})"

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), self.detail, self.tool, self.tool_shown))


def _rebuild(cls: type[ToolError], detail: str, tool: ToolId | None,
             shown: str | None = None) -> ToolError:
    made = cls(detail, tool=tool)
    made.tool_shown = shown
    return made


class Unreachable(ToolError):
    """The call never left: no route, egress refused, the server is down, or the name is unknown."""

    disposition = Disposition.DID_NOT_HAPPEN


class Refused(ToolError):
    """The server, or toolbench before sending, declined without running the tool."""

    disposition = Disposition.DID_NOT_HAPPEN


class TimedOut(ToolError):
    """The call was sent and its outcome is unknown (timeout, lost connection, cancellation)."""

    disposition = Disposition.IN_DOUBT


class ToolFailed(ToolError):
    """The tool ran and reported failure; ``.result`` holds what it said, when there was a reply."""

    disposition = Disposition.LANDED

    def __init__(
        self, detail: str, *, tool: ToolId | None = None, result: Result | None = None
    ) -> None:
        super().__init__(detail, tool=tool)
        self.result = result


class Malformed(ToolError):
    """The server answered, but not with a readable tool result (or one breaking its schema)."""

    disposition = Disposition.LANDED


class NameCollision(ValueError):
    """Registering would give two tools one name; ``.names`` lists every clash."""

    def __init__(self, names: Iterable[str], detail: str = "") -> None:
        self.names = sorted(set(names))
        shown = ", ".join(repr(n) for n in self.names)
        message = f"tool names would collide: {shown}; nothing was registered"
        if detail:
            message += f" ({detail})"
        super().__init__(message)


_UNSENT = "_toolbench_unsent"


def mark_unsent(exc: BaseException) -> BaseException:
    """Mark ``exc`` as raised by toolbench's own code before anything was written to the
    transport: a bug, not a doubt (DESIGN, "A bug is not a doubt"). It is recorded
    ``did_not_happen`` and raised as it is. Returns ``exc``."""
    with contextlib.suppress(AttributeError, TypeError):  # a class with __slots__
        setattr(exc, _UNSENT, True)
    return exc


def is_unsent(exc: BaseException) -> bool:
    """Whether :func:`mark_unsent` marked ``exc``."""
    return getattr(exc, _UNSENT, False) is True


