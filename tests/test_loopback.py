"""The loopback listener: a real socket on 127.0.0.1, hit with good and bad requests."""

from __future__ import annotations

import asyncio
import logging
import socket

import pytest

from toolbench._transports.auth.loopback import Loopback, LoopbackError, loopback_address

CODE = "SECRET-CODE-123"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _raw(port: int, data: bytes, *, read: bool = True) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10) if read else b""
    writer.close()
    return answer


def _get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


def test_the_redirect_is_received_with_its_full_url_and_the_browser_told_to_close_the_tab(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="toolbench")

    async def main() -> tuple[str, bytes, bytes]:
        async with Loopback("http://127.0.0.1:0/callback") as listener:
            assert listener.redirect_uri == f"http://127.0.0.1:{listener.port}/callback"
            page = await _raw(listener.port, _get(f"/callback?code={CODE}&state=s1&iss=x"))
            url = await asyncio.wait_for(listener.received(), 5)
            again = await _raw(listener.port, _get("/callback?code=other&state=s1"))
            return url, page, again

    url, page, again = asyncio.run(main())
    assert url.endswith(f"/callback?code={CODE}&state=s1&iss=x")
    assert url.startswith("http://127.0.0.1:")
    assert page.startswith(b"HTTP/1.1 200 OK")
    assert b"You can close this tab" in page
    assert CODE.encode() not in page  # the page never echoes the code
    assert b"Already received" in again
    assert CODE not in caplog.text  # nor does any log line


@pytest.mark.parametrize(("request_bytes", "status"), [
    (_get("/elsewhere?code=x&state=y"), b"404"),
    (b"POST /callback?code=x&state=y HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", b"405"),
    (b"GET /callback?code=x HTTP/1.1\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n", b"431"),
    (b"\x16\x03\x01garbage that is not http\r\n\r\n", b"400"),
    (b"GET /callback?code=x HTTP/2.0\r\n\r\n", b"400"),
    (_get("/callback?state=only"), b"400"),
])
def test_other_requests_are_refused_and_the_listener_keeps_waiting(
        request_bytes: bytes, status: bytes) -> None:
    async def main() -> tuple[bytes, str, int]:
        async with Loopback("http://127.0.0.1:0/callback") as listener:
            answer = await _raw(listener.port, request_bytes)
            await _raw(listener.port, _get("/callback?code=good&state=s"))
            return answer, await asyncio.wait_for(listener.received(), 5), listener.refused

    answer, url, refused = asyncio.run(main())
    assert answer.split(b" ")[1] == status
    assert url.endswith("/callback?code=good&state=s")
    assert refused == 1


def test_a_slow_client_is_dropped_within_the_read_timeout_and_others_still_get_in() -> None:
    async def main() -> tuple[bytes, str, float]:
        async with Loopback("http://127.0.0.1:0/callback", read_timeout=0.5) as listener:
            reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
            writer.write(b"GET /callback?co")  # and then nothing more
            await writer.drain()
            started = asyncio.get_running_loop().time()
            dropped = await asyncio.wait_for(reader.read(), 10)
            took = asyncio.get_running_loop().time() - started
            writer.close()
            await _raw(listener.port, _get("/callback?code=c&state=s"))
            return dropped, await asyncio.wait_for(listener.received(), 5), took

    dropped, url, took = asyncio.run(main())
    assert dropped == b""  # closed without an answer
    assert took < 5  # bounded by the 0.5 s read timeout (wide margin)
    assert url.endswith("code=c&state=s")


def test_the_listener_closes_when_the_flow_ends() -> None:
    async def main() -> int:
        async with Loopback("http://127.0.0.1:0/callback") as listener:
            port = listener.port
        assert not listener.listening
        with pytest.raises(ConnectionError):
            await _raw(port, _get("/callback?code=c&state=s"))
        return port

    asyncio.run(main())


def test_a_taken_port_is_a_clear_error_that_points_at_pasting() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]

        async def main() -> None:
            async with Loopback(f"http://127.0.0.1:{port}/callback"):
                pass

        with pytest.raises(LoopbackError, match=rf"cannot listen on 127.0.0.1:{port}.*paste"):
            asyncio.run(main())


@pytest.mark.parametrize("uri", ["https://127.0.0.1:8000/callback", "http://example.com:80/cb",
                                 "http://127.0.0.1/callback", "http://[::1:80/x"])
def test_only_a_loopback_http_address_with_a_port_can_be_listened_on(uri: str) -> None:
    with pytest.raises(LoopbackError, match="redirect URI"):
        loopback_address(uri)


def test_localhost_is_listened_on_as_127_0_0_1() -> None:
    port = _free_port()
    assert loopback_address(f"http://localhost:{port}/cb") == ("127.0.0.1", port, "/cb")
