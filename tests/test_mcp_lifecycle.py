"""A connection settles before it is used (toolbench/_transports/mcp/lifecycle.py, issue 26):
the ``connected`` round (a re-list) ends before the request that connected is sent, and
before any request that arrives meanwhile; the round's own requests pass without waiting;
a round that hangs holds requests back only for ``connect_timeout``; and the caller's
``SEND_CHECK`` runs once the request has its session, before anything is sent. Against the
real SDK's in-process server (no child process)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from toolbench import Refused
from toolbench._core.ids import ToolId
from toolbench._transports.mcp.client import McpClient
from toolbench._transports.mcp.session import SEND_CHECK


def _server(sent: list[str]) -> MCPServer:
    server = MCPServer("settle")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        sent.append(f"echo {text}")
        return text

    return server


async def _bounded(body: Any) -> Any:
    with anyio.fail_after(30):  # nothing here may hang the test run
        return await body()


def test_the_request_that_connects_waits_for_the_connected_round() -> None:
    order: list[str] = []
    client = McpClient(_server(order), name="s", connect_timeout=10)

    async def relist(server: str) -> None:
        order.append("round starts")
        tools = await client.list_tools(server)  # the round's own request: no deadlock
        order.append(f"round listed {len(tools)}")
        await anyio.sleep(0.3)
        order.append("round ends")

    client.add_listener("connected", relist)

    async def body() -> None:
        async with anyio.create_task_group() as group:
            async def first() -> None:
                await client.call(ToolId("s", "echo"), {"text": "first"})

            async def meanwhile() -> None:  # arrives while the connection settles
                while client.connects == 0:
                    await anyio.sleep(0.005)
                await client.call(ToolId("s", "echo"), {"text": "meanwhile"})

            group.start_soon(first)
            group.start_soon(meanwhile)
        await client.aclose()

    anyio.run(_bounded, body)
    assert order[:3] == ["round starts", "round listed 1", "round ends"], order
    assert sorted(order[3:]) == ["echo first", "echo meanwhile"], order


def test_a_hanging_round_holds_requests_back_only_for_connect_timeout() -> None:
    sent: list[str] = []
    client = McpClient(_server(sent), name="s", connect_timeout=0.5)
    release = anyio.Event()

    async def hangs(server: str) -> None:
        await release.wait()

    client.add_listener("connected", hangs)

    async def body() -> float:
        started = time.monotonic()
        result = await client.call(ToolId("s", "echo"), {"text": "x"}, timeout=20)
        took = time.monotonic() - started
        assert result.text == "x"
        release.set()
        await client.aclose()
        return took

    took = anyio.run(body)
    assert 0.4 < took < 10, took  # waited for the bound, not for ever
    assert sent == ["echo x"]


def test_a_request_past_its_timeout_while_settling_is_not_sent() -> None:
    sent: list[str] = []
    client = McpClient(_server(sent), name="s", connect_timeout=30)
    release = anyio.Event()

    async def hangs(server: str) -> None:
        await release.wait()

    client.add_listener("connected", hangs)

    async def body() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(client.aconnect)  # settles for as long as the round hangs
            while client.connects == 0:
                await anyio.sleep(0.005)
            with pytest.raises(Exception, match="still being listed after connecting") as err:
                await client.call(ToolId("s", "echo"), {"text": "x"}, timeout=0.3)
            assert type(err.value).__name__ == "Unreachable"
            release.set()
        assert (await client.call(ToolId("s", "echo"), {"text": "y"})).text == "y"
        await client.aclose()

    anyio.run(_bounded, body)
    assert sent == ["echo y"]


def test_send_check_runs_at_the_session_and_refuses_before_sending() -> None:
    sent: list[str] = []
    client = McpClient(_server(sent), name="s", connect_timeout=10)
    checked: list[int] = []
    listed: list[int] = []

    def check() -> None:
        checked.append(client.connects)  # after the connect: the session is there
        raise Refused("changed since it was pinned")

    async def relist(server: str) -> None:  # not the caller's request: not checked
        listed.append(len(await client.list_tools(server)))

    client.add_listener("connected", relist)

    async def body() -> Any:
        token = SEND_CHECK.set(check)
        try:
            with pytest.raises(Refused, match="changed since it was pinned"):
                await client.call(ToolId("s", "echo"), {"text": "x"})
        finally:
            SEND_CHECK.reset(token)
        assert (await client.call(ToolId("s", "echo"), {"text": "y"})).text == "y"
        await client.aclose()

    anyio.run(_bounded, body)
    assert checked == [1] and listed == [1]
    assert sent == ["echo y"]


def test_closing_does_not_wait_out_a_hanging_round() -> None:
    client = McpClient(_server([]), name="s", connect_timeout=30)
    never = anyio.Event()

    async def hangs(server: str) -> None:
        await never.wait()

    client.add_listener("connected", hangs)

    async def body() -> float:
        async with anyio.create_task_group() as group:
            group.start_soon(client.aconnect)
            while client.connects == 0:
                await anyio.sleep(0.005)
            started = time.monotonic()
            await client.aclose()
        return time.monotonic() - started

    took = anyio.run(_bounded, body)
    assert took < 10, took  # not connect_timeout (30 s)
    assert client.status == "closed"


def test_a_request_while_the_connection_is_retired_says_it_closed_not_connected() -> None:
    """``_retire`` takes the connection before the status changes; a request in that window
    was told "server 's' is connected: it is not connected" (seen in the 20-server
    benchmark's close). It now says the connection closed, and that nothing was sent."""
    from toolbench import Unreachable
    from toolbench._core.errors import Disposition

    sent: list[str] = []
    client = McpClient(_server(sent), name="s", connect_timeout=10)

    async def body() -> None:
        async with client:
            await client.call(ToolId("s", "echo"), {"text": "up"})
            conn, client._conn = client._conn, None  # the window inside _retire
            try:
                with pytest.raises(Unreachable) as caught:
                    await client.call(ToolId("s", "echo"), {"text": "late"})
            finally:
                client._conn = conn
        assert "has no live connection" in str(caught.value), caught.value
        assert "is connected" not in str(caught.value)
        assert caught.value.disposition is Disposition.DID_NOT_HAPPEN

    anyio.run(_bounded, body)
    assert sent == ["echo up"]
