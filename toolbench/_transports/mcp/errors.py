"""How the SDK's failures become toolbench's error table, and how secrets stay out of them.

Kept apart from the connection code so the mapping can be read (and audited) in one place:
every exception that can leave ``McpClient`` passes through :func:`map_call_error`.

The mapping goes by *where* an error came from, never by its code alone: the SDK reuses
JSON-RPC codes for errors it makes itself (``CONNECTION_CLOSED`` -32000 when the transport
ends, ``REQUEST_TIMEOUT`` -32001 when its own clock runs out), and servers use the same codes
freely. So each call carries a :class:`CallTicket`, and a :class:`Tracker` wrapped around the
connection's two streams fills it in with what it saw: whether the request was handed to the
transport at all, and whether a JSON-RPC error or a result came back for its id. An error
reply the server sent leaves the connection up; only a transport failure restarts it.
"""

from __future__ import annotations

import contextvars
import json
import re
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import pydantic
from mcp.client import InputRequiredRoundsExceededError, UnexpectedClaimedResult
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
)

from toolbench._core import html as _html
from toolbench._core.errors import (
    Malformed,
    Refused,
    TimedOut,
    ToolError,
    Unreachable,
    mark_unsent,
)
from toolbench._core.ids import ToolId

REFUSED_CODES = frozenset({METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR})
"""JSON-RPC codes that mean the server declined before running anything."""

MODERN_ONLY_CODES = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY,
                               UNSUPPORTED_PROTOCOL_VERSION})
"""-32020, -32021, -32022: how a 2026-only server answers a 2025 ``initialize`` (with HTTP 400):
no ``MCP-Protocol-Version`` header, no per-request capabilities, a version it does not speak."""

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

    @property
    def active(self) -> bool:
        """Whether there is any secret to hide."""
        return self._pattern is not None

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


# -- what a call's request went through ------------------------------------------------------
Stage = Literal["unsent", "sending", "sent", "unwritten"]


@dataclass(eq=False)
class CallTicket:
    """What is known about one request on its way to the server and back.

    ``stage`` is ``unsent`` until the request is handed to the transport, ``sending`` while
    the hand-over is under way (a cancelled hand-over may still have delivered), ``sent``
    once the transport took it, and ``unwritten`` when the transport proved it never wrote a
    byte of it (the hand-over failed, or the transport reported its write failed).
    """

    method: str = "tools/call"
    tracked: bool = False
    stage: Stage = "unsent"
    request_id: str | None = None
    error_reply: bool = False
    answered: bool = False
    refused: BaseException | None = None

    @property
    def sent(self) -> bool:
        """Whether a byte of the request may have reached the server (untracked: assume so)."""
        return not self.tracked or self.stage in ("sending", "sent")


TICKET: contextvars.ContextVar[CallTicket | None] = contextvars.ContextVar(
    "toolbench_call_ticket", default=None
)
"""The ticket of the call running in this task. A ContextVar, because the dispatcher hands the
request to the transport in the caller's own task (and the HTTP transport posts it in a copy
of the caller's context), which is how the stream wrappers below find the call they serve."""


def _key(request_id: object) -> str:
    # The SDK's dispatcher coerces "7" and 7 alike when it correlates a reply; so do we.
    return str(request_id)


class Tracker:
    """One connection's view of its requests: which left, and what came back for each."""

    def __init__(self) -> None:
        self.active = False  # set once the streams are wrapped (an in-process server has none)
        self._waiting: dict[str, CallTicket] = {}

    def watch(self, ticket: CallTicket, request_id: object) -> None:
        ticket.request_id = _key(request_id)
        self._waiting[ticket.request_id] = ticket

    def forget(self, ticket: CallTicket) -> None:
        if ticket.request_id is not None and self._waiting.get(ticket.request_id) is ticket:
            del self._waiting[ticket.request_id]

    def arrived(self, item: object) -> None:
        """Note a reply on the read stream (called for every item the session will see)."""
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCError | JSONRPCResponse):
            ticket = self._waiting.get(_key(message.id))
            if ticket is not None:
                if isinstance(message, JSONRPCError):
                    ticket.error_reply = True
                else:
                    ticket.answered = True

    def unwritten(self, request_id: object) -> None:
        """A transport's report that it failed to write this request before any byte left.

        For transports that write in a task of their own (stdio): the hand-over succeeded,
        but the pipe write failed, so the request provably never reached the server.
        """
        ticket = self._waiting.get(_key(request_id))
        if ticket is not None and ticket.stage in ("sending", "sent"):
            ticket.stage = "unwritten"


class ReadWrapper:
    """A transport's read stream with ``receive`` overridden; the rest passes through.

    The SDK's session reads with ``async for`` and closes with ``aclose``; subclasses only
    say what to notice in ``receive``.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        return await self._inner.receive()

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> ReadWrapper:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> ReadWrapper:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _TrackedRead(ReadWrapper):
    """The read stream, reporting every reply to the tracker before the session sees it."""

    def __init__(self, inner: Any, tracker: Tracker) -> None:
        super().__init__(inner)
        self._tracker = tracker

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._tracker.arrived(item)
        return item


class _TrackedSend:
    """The write stream, recording whether the current call's request was handed over."""

    def __init__(self, inner: Any, tracker: Tracker) -> None:
        self._inner = inner
        self._tracker = tracker

    async def send(self, item: SessionMessage) -> None:
        ticket = TICKET.get()
        message = getattr(item, "message", None)
        if (ticket is None or ticket.stage != "unsent" or not isinstance(message, JSONRPCRequest)
                or message.method != ticket.method):
            await self._inner.send(item)
            return
        self._tracker.watch(ticket, message.id)
        ticket.stage = "sending"
        try:
            await self._inner.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            ticket.stage = "unwritten"  # the transport was gone: nothing was handed over
            raise
        if ticket.stage == "sending":
            ticket.stage = "sent"

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()

    async def __aenter__(self) -> _TrackedSend:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def tracked(transport: Any, tracker: Tracker) -> AsyncIterator[tuple[Any, Any]]:
    """Wrap a transport (an async context manager of two streams) in the tracker."""
    async with transport as (read_stream, write_stream):
        tracker.active = True
        yield _TrackedRead(read_stream, tracker), _TrackedSend(write_stream, tracker)


def refused_connect(error: BaseException | None, ticket: CallTicket) -> BaseException | None:
    """The HTTP connect failure, inside a transport's ``error``, of this ticket's own POST.

    A refused or timed-out TCP connect means not a byte of that request left. Only a POST
    whose body carries this very request id counts: other requests of the same connection
    may have been sent on connections that did open.
    """
    if error is None or ticket.request_id is None:
        return None
    for leaf in leaves(error):
        if not isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout):
            continue
        try:
            request = leaf.request
            body = json.loads(request.content) if request.method == "POST" else None
        except (RuntimeError, ValueError, httpx2.RequestNotRead):
            continue
        if isinstance(body, dict) and _key(body.get("id")) == ticket.request_id:
            return leaf
    return None


# -- the type table --------------------------------------------------------------------------
_RESULT_TYPES: tuple[type[BaseException], ...] = (
    pydantic.ValidationError,  # the result does not parse as the method's result
    UnexpectedClaimedResult,  # an extension's result shape nobody asked for
    InputRequiredRoundsExceededError,  # the server kept asking for input instead of answering
)
"""Raised by the SDK after an answer arrived, because the answer is not a usable result."""

_RESULT_CHECKS = frozenset({"validate_tool_result", "_output_schema_validator"})
"""``mcp.client.session.ClientSession`` methods that raise plain ``RuntimeError`` when a tool
result breaks (or the tool declares) an unusable output schema."""

_TRANSPORT_TYPES: tuple[type[BaseException], ...] = (
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    ConnectionError,
    EOFError,
    httpx2.TransportError,
)
"""Exceptions that mean the transport itself failed (never a reply from the server)."""


def _raised_in(exc: BaseException, functions: frozenset[str], module: str) -> bool:
    """Whether ``exc`` was raised by one of ``functions`` of ``module`` (its innermost frame)."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    return frame.f_code.co_name in functions and frame.f_globals.get("__name__") == module


_HANDSHAKE_CHECKS = frozenset({"initialize"})
"""``ClientSession.initialize`` raises a plain ``RuntimeError`` when the server answers the
2025 handshake with a protocol version the SDK does not speak."""


def handshake_refused(exc: BaseException) -> bool:
    """Whether entering the client failed because the server answered the handshake but
    declined it (so another protocol mode may work), not because the transport or the process
    failed.

    By origin, not by the SDK's wording: an error reply with a refusing code, or with one of
    the 2026 codes a server that speaks only 2026-07-28 answers ``initialize`` with
    (``MODERN_ONLY_CODES``, over HTTP 400); the SDK's own
    version check in ``initialize``; or an error reply whose message names the protocol
    version (the server's own words: JSON-RPC has no code for "unsupported version", and
    servers that refuse one use assorted codes).
    """
    for leaf in leaves(exc):
        if isinstance(leaf, MCPError) and (
            leaf.code in REFUSED_CODES or leaf.code in MODERN_ONLY_CODES
            or "protocol version" in leaf.message.lower()
        ):
            return True
        if isinstance(leaf, RuntimeError) and _raised_in(leaf, _HANDSHAKE_CHECKS,
                                                         "mcp.client.session"):
            return True
    return False


def is_result_error(leaf: BaseException, ticket: CallTicket | None) -> bool:
    """Whether ``leaf`` says the server's answer arrived but cannot be used (``Malformed``)."""
    if isinstance(leaf, _RESULT_TYPES):
        return True
    if not isinstance(leaf, RuntimeError):
        return False
    if ticket is not None and ticket.tracked and ticket.answered:
        return True  # a result came back for this request; the SDK then rejected it
    return _raised_in(leaf, _RESULT_CHECKS, "mcp.client.session")


def server_replied(leaf: BaseException, ticket: CallTicket | None, connection_up: bool) -> bool:
    """Whether ``leaf`` is a JSON-RPC error response the server sent for this request.

    On a tracked transport that is a fact: an error reply with the request's id came in on
    the read stream. An in-process server has no stream: there every ``MCPError`` is the
    server's, except ``CONNECTION_CLOSED`` once the connection is gone.
    """
    if not isinstance(leaf, MCPError):
        return False
    if ticket is not None and ticket.tracked:
        return ticket.error_reply
    return connection_up or leaf.code != CONNECTION_CLOSED


def is_transport_failure(exc: BaseException, ticket: CallTicket | None = None,
                         connection_up: bool = True) -> bool:
    """Whether ``exc`` says the connection itself broke (so it must be restarted)."""
    for leaf in leaves(exc):
        if isinstance(leaf, MCPError):
            if leaf.code == CONNECTION_CLOSED and not server_replied(leaf, ticket, connection_up):
                return True
        elif isinstance(leaf, _TRANSPORT_TYPES):
            return True
    return False


def url_elicitation_required(leaf: MCPError, tool: ToolId | None, redact: Redactor,
                              action: str) -> Refused:
    """-32042: the server needs a person to open a URL first. ``Refused`` (nothing ran; the
    request can be repeated after), naming each URL; ``.urls`` lists them for a notebook to
    show as links (never opened for the user)."""
    urls: list[str] = []
    notes: list[str] = []
    data = leaf.data if isinstance(leaf.data, dict) else {}
    for item in (data.get("elicitations") or [])[:5] if isinstance(data, dict) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            urls.append(_html.shorten(redact(item["url"]), 2_000))
            if isinstance(item.get("message"), str):
                notes.append(_html.shorten(redact(item["message"]), 300))
    message = _html.shorten(redact(leaf.message), 400)
    where = ", ".join(urls) if urls else "(the server named no URL)"
    said = f" ({'; '.join(notes)})" if notes else ""
    error = Refused(f"the server needs you to open {where} first{said}, then repeat the "
                    f"{action} (code {leaf.code}: {message}); nothing was run", tool=tool)
    error.urls = urls  # type: ignore[attr-defined]
    return error


TOOL_CALL_ACTIONS = frozenset({"call", "tools/call"})
"""The ``action`` names of a tool call. Every other request (a listing, a resource read, a
prompt fetch, a completion) is safe to repeat, so the server's error reply to it is
``Refused`` whatever its code: "in doubt" is about a tool that may have run."""


def _server_error(leaf: MCPError, tool: ToolId | None, redact: Redactor, action: str) -> ToolError:
    if leaf.code == URL_ELICITATION_REQUIRED:
        return url_elicitation_required(leaf, tool, redact, action)
    message = _html.shorten(redact(leaf.message), 400)
    if leaf.code in REFUSED_CODES:
        return Refused(f"the server refused the {action} (code {leaf.code}): {message}",
                       tool=tool)
    if action not in TOOL_CALL_ACTIONS:
        return Refused(f"the server answered the {action} with error {leaf.code}: {message}",
                       tool=tool)
    return TimedOut(
        f"the server answered the {action} with error {leaf.code}: {message} "
        "(it may or may not have run; the connection stays up)",
        tool=tool,
    )


BUG_TYPES = (LookupError, AttributeError, AssertionError, NameError, ArithmeticError,
             RecursionError, NotImplementedError)
"""Exceptions that, raised before a request was handed over, are toolbench's own bugs, not
the transport's failures (DESIGN, "A bug is not a doubt")."""


def map_call_error(
    exc: Exception, tool: ToolId | None, *, timeout: float, redact: Redactor, action: str,
    ticket: CallTicket | None = None, connection_up: bool = True,
) -> ToolError:
    """Sort one failure into the error table (DESIGN.md, "Errors"), by where it came from.

    In order: an error reply from the server (``Refused`` for a refusing code, and for any
    code when ``action`` is not a tool call: those requests are safe to repeat); anything
    before the request was handed over (``did_not_happen``); an HTTP connect refused for this
    request; our own deadline; an answer that is not a result (``Malformed``); a transport
    that broke mid-call. Anything we cannot place is ``TimedOut``: claiming it did not
    happen would invite an unsafe retry.

    Raises:
        Exception: one of ``BUG_TYPES`` raised before the request was handed over, as it is
            (marked with ``mark_unsent``): a bug of ours, which the bench records
            ``did_not_happen`` and raises.
    """
    if isinstance(exc, ToolError):
        return exc
    found = leaves(exc)
    leaf = found[0] if len(found) == 1 else exc
    if isinstance(leaf, MCPError) and server_replied(leaf, ticket, connection_up):
        return _server_error(leaf, tool, redact, action)
    if ticket is not None and not ticket.sent:
        if isinstance(leaf, BUG_TYPES):  # our own code failed before sending: raised as it is
            raise mark_unsent(leaf)
        what = describe(leaf, redact)
        if isinstance(leaf, TimeoutError):
            return Unreachable(f"the {action} was not sent within {timeout:g} s; nothing left",
                               tool=tool)
        if isinstance(leaf, pydantic.ValidationError | TypeError | ValueError):
            return Refused(f"the {action} could not be built, so nothing was sent: {what}",
                           tool=tool)
        return Unreachable(f"the {action} was not sent: {what}", tool=tool)
    if ticket is not None and ticket.refused is not None:
        return Unreachable(
            f"the connection to the server was refused, so the {action} was not sent "
            f"({describe(ticket.refused, redact)})",
            tool=tool,
        )
    if isinstance(leaf, TimeoutError):
        return TimedOut(f"no answer to the {action} within {timeout:g} s", tool=tool)
    if is_result_error(leaf, ticket):
        return Malformed(
            f"the server's answer to the {action} is not a valid tool result: "
            f"{describe(leaf, redact)}",
            tool=tool,
        )
    if isinstance(leaf, MCPError) and leaf.code == REQUEST_TIMEOUT:
        return TimedOut(f"no answer to the {action} within {timeout:g} s", tool=tool)
    if is_transport_failure(leaf, ticket, connection_up):
        return TimedOut(
            f"the connection was lost during the {action}; it may or may not have run "
            f"({describe(leaf, redact)})",
            tool=tool,
        )
    return TimedOut(f"the {action} failed in transit: {describe(leaf, redact)}", tool=tool)
