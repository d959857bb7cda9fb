"""What a request went through, told by the tracker on real memory streams (``mcp/tracking.py``).

The stream wrappers see each request leave and each reply come back; the ticket they fill in is
what the error mapping (tests/test_mcp_errors.py) sorts a failure by.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from toolbench._core.errors import Unreachable
from toolbench._core.ids import ToolId
from toolbench._core.redact import Redactor
from toolbench._transports.mcp.errors import map_call_error
from toolbench._transports.mcp.tracking import TICKET, CallTicket, Tracker, request_key, tracked


def request(request_id: int, method: str = "tools/call") -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method))


def test_tracker_follows_a_request_out_and_its_reply_back() -> None:
    async def main() -> tuple[CallTicket, CallTicket]:
        tracker = Tracker()
        to_server, server_in = anyio.create_memory_object_stream[Any](4)
        server_out, from_server = anyio.create_memory_object_stream[Any](4)

        @contextlib.asynccontextmanager
        async def transport() -> Any:
            yield from_server, to_server

        async with tracked(transport(), tracker) as (read, write):
            assert tracker.active
            mine, other = CallTicket(tracked=True), CallTicket(tracked=True)
            token = TICKET.set(mine)
            try:
                await write.send(SessionMessage(JSONRPCNotification(
                    jsonrpc="2.0", method="notifications/progress")))
                assert mine.stage == "unsent"  # a notification is not the call
                await write.send(request(7))
                await write.send(request(8))  # a second request of the same call: ignored
            finally:
                TICKET.reset(token)
            assert mine.stage == "sent" and mine.request_id == "7"
            await server_out.send(SessionMessage(JSONRPCError(
                jsonrpc="2.0", id="7", error={"code": -32000, "message": "x"})))
            await server_out.send(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=99,
                                                                 result={})))
            await read.receive()
            await read.receive()
            tracker.forget(mine)
            await server_in.receive()
        for stream in (to_server, server_in, server_out, from_server):
            stream.close()
        return mine, other

    mine, other = anyio.run(main)
    assert mine.error_reply and not mine.answered  # "7" and 7 correlate, as in the SDK
    assert other.stage == "unsent" and not other.error_reply


def test_tracker_marks_a_failed_hand_over_unwritten() -> None:
    async def main() -> CallTicket:
        tracker = Tracker()
        send, receive = anyio.create_memory_object_stream[Any](0)
        receive.close()  # the transport's writer is gone

        @contextlib.asynccontextmanager
        async def transport() -> Any:
            yield receive, send

        mine = CallTicket(tracked=True)
        async with tracked(transport(), tracker) as (_, write):
            token = TICKET.set(mine)
            try:
                with pytest.raises(anyio.BrokenResourceError):
                    await write.send(request(1))
            finally:
                TICKET.reset(token)
        send.close()
        return mine

    mine = anyio.run(main)
    assert mine.stage == "unwritten" and not mine.sent
    error = map_call_error(MCPError(CONNECTION_CLOSED, "Connection closed"), ToolId("srv", "t"),
                           timeout=5, redact=Redactor(()), action="call", ticket=mine)
    assert type(error) is Unreachable  # provably never written: it did not happen


def test_transport_report_of_an_unwritten_request() -> None:
    tracker = Tracker()
    mine = CallTicket(tracked=True, stage="sent")
    tracker.watch(mine, 5)
    tracker.unwritten(6)
    assert mine.stage == "sent"
    tracker.unwritten("5")
    assert mine.stage == "unwritten" and not mine.sent


def test_request_ids_are_keyed_as_the_sdk_correlates_them() -> None:
    assert request_key(7) == request_key("7") == "7"
    assert request_key(7) != request_key(8)


def test_an_untracked_ticket_is_assumed_sent() -> None:
    """Without stream wrappers (in process) nothing is known, so a request may have arrived."""
    assert CallTicket(tracked=False).sent
    assert not CallTicket(tracked=True).sent
    assert CallTicket(tracked=True, stage="sending").sent  # a cancelled hand-over may deliver
