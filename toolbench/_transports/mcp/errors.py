"""How the SDK's failures become toolbench's error table.

Kept apart from the connection code so the mapping can be read (and audited) in one place:
every exception that can leave ``McpClient`` passes through :func:`map_call_error`.

The mapping goes by *where* an error came from, never by its code alone: the SDK reuses
JSON-RPC codes for errors it makes itself (``CONNECTION_CLOSED`` -32000 when the transport
ends, ``REQUEST_TIMEOUT`` -32001 when its own clock runs out), and servers use the same codes
freely. So each call carries a ``CallTicket``, filled in by the connection's ``Tracker``
(``toolbench._transports.mcp.tracking``) with what it saw: whether the request was handed to
the transport at all, and whether a JSON-RPC error or a result came back for its id. An error
reply the server sent leaves the connection up; only a transport failure restarts it. Every
text taken from the server passes the connection's ``Redactor`` (``toolbench._core.redact``).
"""

from __future__ import annotations

import json

import anyio
import httpx2
import pydantic
from mcp.client import InputRequiredRoundsExceededError, UnexpectedClaimedResult
from mcp.shared.exceptions import MCPError
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
from toolbench._core.redact import Redactor, describe, leaves
from toolbench._transports.mcp.tracking import CallTicket, request_key

REFUSED_CODES = frozenset({METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR})
"""JSON-RPC codes that mean the server declined before running anything."""

MODERN_ONLY_CODES = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY,
                               UNSUPPORTED_PROTOCOL_VERSION})
"""-32020, -32021, -32022: how a 2026-only server answers a 2025 ``initialize`` (with HTTP 400):
no ``MCP-Protocol-Version`` header, no per-request capabilities, a version it does not speak."""


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
        if isinstance(body, dict) and request_key(body.get("id")) == ticket.request_id:
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


class NotOffered(Refused):
    """The server does not offer what a request needs: its capabilities lack it
    (``resources``, ``prompts``; refused before anything was sent), or it answered the
    request with -32601 Method not found. A bench listing every server leaves such a server
    out quietly: decided by this type (so by capability and error code), never by a message."""


def _server_error(leaf: MCPError, tool: ToolId | None, redact: Redactor, action: str) -> ToolError:
    if leaf.code == URL_ELICITATION_REQUIRED:
        return url_elicitation_required(leaf, tool, redact, action)
    message = _html.shorten(redact(leaf.message), 400)
    if leaf.code == METHOD_NOT_FOUND and action not in TOOL_CALL_ACTIONS:
        return NotOffered(f"the server does not offer the {action} (code {leaf.code}: "
                          f"{message}); nothing ran", tool=tool)
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
    waited = _html.seconds_text(timeout)
    leaf = found[0] if len(found) == 1 else exc
    if isinstance(leaf, MCPError) and server_replied(leaf, ticket, connection_up):
        return _server_error(leaf, tool, redact, action)
    if ticket is not None and not ticket.sent:
        if isinstance(leaf, BUG_TYPES):  # our own code failed before sending: raised as it is
            raise mark_unsent(leaf)
        what = describe(leaf, redact)
        if isinstance(leaf, TimeoutError):
            return Unreachable(f"the {action} was not sent within {waited} s; nothing left",
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
        return TimedOut(f"no answer to the {action} within {waited} s", tool=tool)
    if is_result_error(leaf, ticket):
        return Malformed(
            f"the server's answer to the {action} is not a valid tool result: "
            f"{describe(leaf, redact)}",
            tool=tool,
        )
    if isinstance(leaf, MCPError) and leaf.code == REQUEST_TIMEOUT:
        return TimedOut(f"no answer to the {action} within {waited} s", tool=tool)
    if is_transport_failure(leaf, ticket, connection_up):
        return TimedOut(
            f"the connection was lost during the {action}; it may or may not have run "
            f"({describe(leaf, redact)})",
            tool=tool,
        )
    return TimedOut(f"the {action} failed in transit: {describe(leaf, redact)}", tool=tool)
