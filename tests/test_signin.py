"""The person's step of a sign-in: the loopback and a pasted address race, bounded; the
terminal's face, end to end against the protected demo server (a real child process)."""

from __future__ import annotations

import asyncio
import io
import socket
from collections.abc import Callable

import anyio
import httpx
import pytest
from oauth_glue import afollow, protected_server, signed_in_client

from toolbench._transports.auth.signin import (
    SignInTimeout,
    SignInUnavailable,
    terminal_authorizer,
    wait_for_redirect,
)

AUTH = "http://127.0.0.1:1/authorize?state=S1&client_id=c"


def _redirect() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/callback"


def _pastes(*texts: str, delay: float = 0.0) -> Callable[[], object]:
    queue = list(texts)

    async def paste() -> str:
        await anyio.sleep(delay)
        if not queue:
            await anyio.sleep_forever()
        return queue.pop(0)

    return paste


def test_a_pasted_address_wins_after_a_refused_one_and_the_loopback_closes() -> None:
    redirect = _redirect()
    refused: list[str] = []
    notes: list[str] = []

    async def main() -> tuple[str, str]:
        return await wait_for_redirect(
            AUTH, redirect, 10, paste=_pastes(f"{redirect}?code=c&state=OLD",  # type: ignore[arg-type]
                                              f"{redirect}?code=c&state=S1"),
            refused=refused.append, listening=notes.append)

    url, how = asyncio.run(main())
    assert (url, how) == (f"{redirect}?code=c&state=S1", "pasted")
    assert len(refused) == 1 and "another sign-in" in refused[0]
    assert notes == [""]  # the loopback listener ran meanwhile
    with socket.socket() as s:  # and is closed now: its port is free again
        s.bind(("127.0.0.1", int(redirect.split(":")[2].split("/")[0])))


def test_the_loopback_wins_when_the_browser_comes_back_first() -> None:
    redirect = _redirect()

    async def main() -> tuple[str, str]:
        async def browser() -> None:
            await anyio.sleep(0.3)
            async with httpx.AsyncClient() as client:
                await client.get(f"{redirect}?code=c&state=S1")

        async with anyio.create_task_group() as group:
            group.start_soon(browser)
            return await wait_for_redirect(AUTH, redirect, 10, paste=_pastes())  # type: ignore[arg-type]

    assert asyncio.run(main()) == (f"{redirect}?code=c&state=S1", "loopback")


def test_nobody_signing_in_ends_within_the_timeout() -> None:
    async def main() -> None:
        await wait_for_redirect(AUTH, _redirect(), 0.5, paste=_pastes("garbage"))  # type: ignore[arg-type]

    with pytest.raises(SignInTimeout, match=r"within 0\.5 s"):
        asyncio.run(main())


def test_no_loopback_and_no_paste_is_a_clear_error() -> None:
    async def main() -> None:
        await wait_for_redirect(AUTH, "https://app.example/callback", 5)

    with pytest.raises(SignInUnavailable, match=r"not a loopback address.*authorize="):
        asyncio.run(main())


def test_without_a_loopback_a_pasted_address_still_works() -> None:
    notes: list[str] = []
    redirect = "https://app.example/callback"

    async def main() -> tuple[str, str]:
        return await wait_for_redirect(AUTH, redirect, 5, listening=notes.append,
                                       paste=_pastes(f"{redirect}?code=c&state=S1"))  # type: ignore[arg-type]

    assert asyncio.run(main())[1] == "pasted"
    assert "not a loopback address" in notes[0]


@pytest.mark.slow
def test_the_terminal_flow_signs_in_with_a_pasted_line_on_stdin() -> None:
    """The browser's redirect never reaches the loopback (another machine): the person
    pastes the address, after a wrong one."""
    redirect = _redirect()
    out = io.StringIO()

    async def authorize(url: str, redirect_uri: str, timeout: float) -> str:
        back = await afollow(url, until=redirect_uri)  # the browser stops at the redirect
        wrong = back.replace("state=", "state=x")
        stdin = io.StringIO(f"{wrong}\n{back}\n")
        return await terminal_authorizer(url, redirect_uri, timeout, out=out, stdin=stdin)

    async def main(server: str) -> object:
        async with signed_in_client(server, authorize, redirect, timeout=30) as client:
            return (await client.call_tool("whoami", {})).structured_content

    with protected_server() as server:
        who = anyio.run(main, server)
    assert who["user"] == "demo-user" and who["scopes"] == ["mcp"]  # type: ignore[index]
    text = out.getvalue()
    assert "open this address in a browser" in text and "/authorize?" in text
    assert "Not taken: this address belongs to another sign-in" in text
    assert "Received the sign-in (pasted)" in text
    assert "code=" not in text.split("/authorize?")[1].split("\n", 1)[1]  # no code echoed


@pytest.mark.slow
def test_the_terminal_flow_signs_in_through_the_loopback() -> None:
    redirect = _redirect()
    out = io.StringIO()

    async def authorize(url: str, redirect_uri: str, timeout: float) -> str:
        async def browser() -> None:
            back = await afollow(url, until=redirect_uri)
            async with httpx.AsyncClient() as client:
                page = await client.get(back)
            assert "You can close this tab" in page.text

        async with anyio.create_task_group() as group:
            group.start_soon(browser)
            return await terminal_authorizer(url, redirect_uri, timeout, out=out)

    async def main(server: str) -> object:
        async with signed_in_client(server, authorize, redirect, timeout=30) as client:
            return (await client.call_tool("echo", {"text": "hi"})).content[0].text  # type: ignore[union-attr]

    with protected_server("--approve", "button") as server:
        assert anyio.run(main, server) == "hi"
    assert "Received the sign-in (browser redirect)" in out.getvalue()
