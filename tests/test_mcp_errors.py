"""The error mapping, one layer: each origin of a failure and the disposition it must get.

Real exceptions, raised where the SDK raises them where that is possible; the tickets stand in
for what the stream tracker saw (tests/test_mcp_tracking.py tests the tracker itself, and
tests/test_recovery.py proves the same cases on real servers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import anyio
import httpx2
import pydantic
import pytest
from mcp.client import InputRequiredRoundsExceededError, UnexpectedClaimedResult
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
)

from toolbench._core.client import Result, ToolSpec
from toolbench._core.errors import Malformed, Refused, TimedOut, Unreachable, is_unsent
from toolbench._core.ids import Destination, Provenance, ToolId
from toolbench._core.redact import Redactor
from toolbench._routing.router import ToolRouter, takes_timeout
from toolbench._transports.mcp.errors import (
    handshake_refused,
    is_transport_failure,
    map_call_error,
    refused_connect,
)
from toolbench._transports.mcp.tracking import CallTicket

TOOL = ToolId("srv", "t")
NO_SECRETS = Redactor(())


def mapped(exc: Exception, ticket: CallTicket | None, up: bool = True) -> Any:
    return map_call_error(exc, TOOL, timeout=5, redact=NO_SECRETS, action="call", ticket=ticket,
                          connection_up=up)


def ticket(stage: str = "sent", *, error_reply: bool = False, answered: bool = False,
           tracked: bool = True) -> CallTicket:
    return CallTicket(tracked=tracked, stage=stage, request_id="7",  # type: ignore[arg-type]
                      error_reply=error_reply, answered=answered)


def validation_error() -> pydantic.ValidationError:
    try:
        pydantic.TypeAdapter(int).validate_python("not a number")
    except pydantic.ValidationError as exc:
        return exc
    raise AssertionError("unreachable")


# -- an error reply from the server ----------------------------------------------------------
@pytest.mark.parametrize("code", [CONNECTION_CLOSED, REQUEST_TIMEOUT, -32603, -1, 42])
def test_error_reply_is_in_doubt_and_keeps_the_connection(code: int) -> None:
    exc = MCPError(code, f"server says {code}")
    error = mapped(exc, ticket(error_reply=True))
    assert type(error) is TimedOut and error.disposition.value == "in_doubt"
    assert f"error {code}: server says {code}" in error.detail and "stays up" in error.detail
    assert not is_transport_failure(exc, ticket(error_reply=True))


@pytest.mark.parametrize("code", [-32601, -32602, -32600, -32700])
def test_refusing_reply_is_refused(code: int) -> None:
    error = mapped(MCPError(code, "nope"), ticket(error_reply=True))
    assert type(error) is Refused and error.disposition.value == "did_not_happen"
    assert f"code {code}" in error.detail


@pytest.mark.parametrize("action", ["resources/read", "prompts/get", "resources/list",
                                    "tools/list", "completion/complete"])
@pytest.mark.parametrize("code", [CONNECTION_CLOSED, REQUEST_TIMEOUT, -32603, 0, -32602])
def test_error_reply_to_a_request_that_is_not_a_tool_call_is_refused(action: str,
                                                                      code: int) -> None:
    # DESIGN.md "Errors": a read, a prompt fetch, a listing, a completion are safe to repeat.
    exc = MCPError(code, "unknown city 'atlantis'")
    error = map_call_error(exc, None, timeout=5, redact=NO_SECRETS, action=action,
                           ticket=ticket(error_reply=True))
    assert type(error) is Refused and error.disposition.value == "did_not_happen"
    assert action in error.detail and str(code) in error.detail
    assert "unknown city 'atlantis'" in error.detail and "may or may not" not in error.detail


@pytest.mark.parametrize("action", ["resources/read", "prompts/get"])
def test_no_answer_or_a_lost_connection_to_a_read_is_still_timed_out(action: str) -> None:
    timeout = map_call_error(MCPError(REQUEST_TIMEOUT, "timed out"), None, timeout=5,
                             redact=NO_SECRETS, action=action, ticket=ticket("sent"))
    lost = map_call_error(MCPError(CONNECTION_CLOSED, "Connection closed"), None, timeout=5,
                          redact=NO_SECRETS, action=action, ticket=ticket("sent"),
                          connection_up=False)
    assert type(timeout) is TimedOut and "no answer" in timeout.detail
    assert type(lost) is TimedOut and "connection was lost" in lost.detail


# -- errors the SDK makes itself, with the same codes ----------------------------------------
def test_sdk_connection_closed_after_sending_is_a_lost_connection() -> None:
    exc = MCPError(CONNECTION_CLOSED, "Connection closed")
    error = mapped(exc, ticket("sent"), up=False)
    assert type(error) is TimedOut and "connection was lost" in error.detail
    assert is_transport_failure(exc, ticket("sent"), connection_up=False)


def test_sdk_request_timeout_without_a_reply_is_no_answer() -> None:
    error = mapped(MCPError(REQUEST_TIMEOUT, "Request 'tools/call' timed out"), ticket("sent"))
    assert type(error) is TimedOut and "no answer to the call within 5 s" in error.detail


@pytest.mark.parametrize(("remaining", "shown"),
                         [(29.999871, "30 s"), (0.296926, "0.3 s"), (0.333291, "0.33 s"),
                          (1.5, "1.5 s"), (120.0, "120 s")])
def test_a_timeout_message_rounds_the_seconds(remaining: float, shown: str) -> None:
    """Issue 37, item 13: the deadline's remainder (29.999871 s) is shown rounded."""
    for exc in (TimeoutError(), MCPError(REQUEST_TIMEOUT, "Request 'tools/call' timed out")):
        error = map_call_error(exc, TOOL, timeout=remaining, redact=NO_SECRETS, action="call",
                               ticket=ticket("sent"))
        assert type(error) is TimedOut
        assert f"no answer to the call within {shown}" in error.detail, error.detail


# -- before a byte was written: did_not_happen -----------------------------------------------
@pytest.mark.parametrize("stage", ["unsent", "unwritten"])
@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (MCPError(CONNECTION_CLOSED, "Connection closed"), Unreachable),  # dispatcher closed
        (anyio.BrokenResourceError(), Unreachable),  # the transport went away under the write
        (TimeoutError(), Unreachable),  # the deadline passed before the hand-over
        (RuntimeError("Client must be used within an async context manager"), Unreachable),
        (validation_error(), Refused),  # the request could not be built
        (TypeError("Object of type set is not JSON serializable"), Refused),
    ],
)
def test_failures_before_the_request_left_did_not_happen(
    stage: str, exc: Exception, kind: type[Exception]
) -> None:
    error = mapped(exc, ticket(stage))
    assert type(error) is kind and error.disposition.value == "did_not_happen"
    assert "not sent" in error.detail or "nothing was sent" in error.detail


def test_a_cancelled_hand_over_may_have_delivered() -> None:
    error = mapped(TimeoutError(), ticket("sending"))
    assert type(error) is TimedOut and error.disposition.value == "in_doubt"


def test_http_connect_refused_for_this_request_did_not_happen() -> None:
    t = ticket("sent")
    t.refused = httpx2.ConnectError("All connection attempts failed")
    error = mapped(MCPError(CONNECTION_CLOSED, "Connection closed"), t, up=False)
    assert type(error) is Unreachable and "refused" in error.detail


def test_refused_connect_matches_only_this_requests_post() -> None:
    def refused(request_id: int) -> httpx2.ConnectError:
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call"})
        request = httpx2.Request("POST", "http://127.0.0.1:9/mcp", content=body.encode())
        return httpx2.ConnectError("refused", request=request)

    group = ExceptionGroup("transport", [refused(3)])
    assert refused_connect(group, ticket("sent")) is None  # another request's POST
    mine = refused(7)
    assert refused_connect(ExceptionGroup("transport", [refused(3), mine]), ticket()) is mine
    assert refused_connect(ExceptionGroup("t", [httpx2.ReadError("reset")]), ticket()) is None
    assert refused_connect(None, ticket()) is None


# -- an answer that is not a result: Malformed (landed) --------------------------------------
@pytest.mark.parametrize(
    "exc",
    [validation_error(), UnexpectedClaimedResult(object()), InputRequiredRoundsExceededError(3)],
)
def test_result_types_are_malformed(exc: Exception) -> None:
    error = mapped(exc, ticket("sent", answered=True))
    assert type(error) is Malformed and error.disposition.value == "landed"


def test_runtime_error_is_malformed_only_after_an_answer() -> None:
    exc = RuntimeError("Invalid structured content returned by tool t")
    assert type(mapped(exc, ticket("sent", answered=True))) is Malformed
    # Without an answer a RuntimeError proves nothing about the result: in doubt.
    assert type(mapped(exc, ticket("sent"))) is TimedOut


def test_runtime_error_from_the_sdks_result_check_is_malformed_in_process() -> None:
    # An in-process server has no stream to watch, so the raise site decides.
    from mcp.client.session import ClientSession

    class Probe:
        _tool_output_schemas: ClassVar[Mapping[str, Any]] = {
            "t": {"type": "object", "required": ["n"]}
        }
        _tool_output_validators: ClassVar[dict[str, Any]] = {}

        _output_schema_validator = ClientSession._output_schema_validator

    import mcp_types as types

    result = types.CallToolResult(content=[], structured_content={})

    async def check() -> None:
        await ClientSession.validate_tool_result(Probe(), "t", result)  # type: ignore[arg-type]

    with pytest.raises(RuntimeError) as info:
        anyio.run(check)
    assert type(mapped(info.value, None)) is Malformed
    assert type(mapped(RuntimeError("from elsewhere"), None)) is TimedOut


# -- untracked (in-process) connections ------------------------------------------------------
def test_untracked_mcp_error_is_the_servers_unless_the_connection_is_gone() -> None:
    closed = MCPError(CONNECTION_CLOSED, "Connection closed")
    assert "stays up" in mapped(closed, ticket(tracked=False), up=True).detail
    assert "connection was lost" in mapped(closed, ticket(tracked=False), up=False).detail
    assert type(mapped(MCPError(-32602, "bad"), None)) is Refused


def test_several_failures_at_once_are_in_doubt() -> None:
    group = ExceptionGroup("two", [ValueError("a"), KeyError("b")])
    error = mapped(group, ticket("sent"))
    assert type(error) is TimedOut and "in transit" in error.detail


def test_server_message_is_redacted_and_capped() -> None:
    exc = MCPError(-32000, "token s3cr3t-value " + "x" * 2000)
    error = map_call_error(exc, TOOL, timeout=1, redact=Redactor(["s3cr3t-value"]),
                           action="call", ticket=ticket(error_reply=True))
    assert "s3cr3t-value" not in error.detail and "[redacted]" in error.detail
    assert len(error.detail) < 700


# -- the router hands the timeout down -------------------------------------------------------
class _Plain:
    """A third-party client with the protocol's three-argument call."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def servers(self) -> list[str]:
        return ["srv"]

    def destination(self, tool: ToolId) -> Destination:
        return Destination.LOCAL

    async def list_tools(self, server: str) -> list[ToolSpec]:
        return []

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],
                   provenance: Provenance | None = None) -> Result:
        await anyio.sleep(self.delay)
        return Result([], None, False, self.delay, tool)


class _Timed(_Plain):
    """A client that takes the timeout and decides itself."""

    seen: float | None = None

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],  # type: ignore[override]
                   provenance: Provenance | None = None, *,
                   timeout: float | None = None) -> Result:
        self.seen = timeout
        raise Unreachable("queued, never sent", tool=tool)


def test_router_forwards_the_timeout_to_a_client_that_takes_it() -> None:
    client = _Timed(0)
    router = ToolRouter()
    router.server("srv", client)
    assert takes_timeout(client) and not takes_timeout(_Plain(0))
    with pytest.raises(Unreachable, match="never sent"):
        anyio.run(lambda: router.call(TOOL, {}, None, timeout=1.5))
    assert client.seen == 1.5


def test_router_bounds_a_plain_client_itself() -> None:
    router = ToolRouter()
    router.server("srv", _Plain(5.0))
    started = anyio.run(lambda: _elapsed(router))
    assert started < 2.0
    quick = ToolRouter()
    quick.server("srv", _Plain(0.0))
    assert anyio.run(lambda: quick.call(TOOL, {}, None, timeout=1.0)).latency_s == 0.0


async def _elapsed(router: ToolRouter) -> float:
    began = anyio.current_time()
    with pytest.raises(TimeoutError):
        await router.call(TOOL, {}, None, timeout=0.2)
    return anyio.current_time() - began


# -- a handshake the server declined (so the next protocol mode is tried) ----------------------
@pytest.mark.parametrize("code", [-32601, -32602, -32600, -32700])
def test_refusing_reply_to_the_handshake_is_a_refused_handshake(code: int) -> None:
    assert handshake_refused(MCPError(code, "no"))
    assert handshake_refused(BaseExceptionGroup("wrapped", [MCPError(code, "no")]))


def test_reply_naming_the_protocol_version_is_a_refused_handshake() -> None:
    assert handshake_refused(MCPError(-32000, "Unsupported Protocol Version: 2025-11-25"))


def test_other_failures_are_not_a_refused_handshake() -> None:
    assert not handshake_refused(MCPError(-32603, "internal error"))
    assert not handshake_refused(MCPError(CONNECTION_CLOSED, "Connection closed"))
    assert not handshake_refused(ConnectionResetError("gone"))
    # The SDK's wording raised anywhere but its own version check is not the check.
    try:
        raise RuntimeError("Unsupported protocol version from the server: 1999-01-01")
    except RuntimeError as exc:
        assert not handshake_refused(exc)


# -- a bug is not a doubt ---------------------------------------------------------------------
@pytest.mark.parametrize("stage", ["unsent", "unwritten"])
@pytest.mark.parametrize("exc", [KeyError("schema"), AttributeError("x"), ZeroDivisionError()])
def test_our_own_bug_before_sending_is_raised_as_it_is(stage: str, exc: Exception) -> None:
    with pytest.raises(type(exc)) as info:
        mapped(exc, ticket(stage))
    assert info.value is exc and is_unsent(exc)


def test_an_unknown_exception_after_sending_is_still_in_doubt() -> None:
    error = mapped(KeyError("late"), ticket("sent"))
    assert type(error) is TimedOut and error.disposition.value == "in_doubt"


# -- issue 37, item 19: "not offered" by error code and capability, not by message text -------
def test_method_not_found_on_a_listing_is_not_offered_whatever_its_text() -> None:
    from toolbench._core.errors import ToolError
    from toolbench._transports.mcp.errors import NotOffered, map_call_error

    def mapped(code: int, text: str, action: str) -> ToolError:
        return map_call_error(MCPError(code, text), None, timeout=5.0, redact=Redactor(()),
                              action=action)

    assert isinstance(mapped(-32601, "Unknown method", "resources/templates/list"), NotOffered)
    assert isinstance(mapped(-32601, "nope", "prompts/list"), Refused)
    worded = mapped(-32602, "this server does not offer that cursor", "resources/list")
    assert isinstance(worded, Refused) and not isinstance(worded, NotOffered)
    call = mapped(-32601, "Method not found", "call")  # a tool call: refused, not "offered"
    assert isinstance(call, Refused) and not isinstance(call, NotOffered)
