"""The notebook sign-in card, driven as the kernel's main thread would drive it: the card
shows while the authorizer waits on the shared loop, a refused paste leaves it open, the
first way in wins, and no code stays in the widget's state."""

from __future__ import annotations

import socket
import time
from concurrent.futures import Future
from typing import Any

import httpx
import pytest

from toolbench._loop import get_loop
from toolbench._notebook.ask.ask import NotebookAsker, wait_answered
from toolbench._notebook.ask.signin import SignInCard, notebook_authorizer

CODE = "CODE-never-shown-42"


def _redirect() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/callback"


def _auth(redirect: str) -> str:
    return (f"http://127.0.0.1:1/authorize?state=S1&client_id=c&redirect_uri={redirect}"
            "&x=<script>alert(1)</script>")


def _start(asker: NotebookAsker, redirect: str, timeout: float = 30) -> Future[str]:
    return get_loop().submit(lambda: notebook_authorizer(_auth(redirect), redirect, timeout,
                                                         asker=asker))


def _settle(asker: NotebookAsker, future: Future[Any], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not future.done() and time.monotonic() < deadline:
        asker.service()
        time.sleep(0.01)
    for _ in range(20):  # the card's expiry lands on a later service
        asker.service()
        time.sleep(0.01)


def _state(card: SignInCard) -> str:
    """Everything a front end holds of the card: every widget's synced state."""
    parts = []
    stack = [card.widget]
    while stack:
        current = stack.pop()
        parts.append(repr(current.get_state()))
        stack.extend(getattr(current, "children", ()))
    return "\n".join(parts)


@pytest.fixture
def asker() -> tuple[NotebookAsker, list[Any]]:
    shown: list[Any] = []
    return NotebookAsker(display=shown.append), shown


def test_a_wrong_paste_is_refused_on_the_card_and_the_second_signs_in(
        asker: tuple[NotebookAsker, list[Any]]) -> None:
    made, shown = asker
    redirect = _redirect()
    future = _start(made, redirect)
    (card,) = wait_answered(made)
    assert isinstance(card, SignInCard) and shown == [card.widget]
    html = card.message.value
    assert "<script>" not in html and "&lt;script&gt;" in html  # the URL is escaped
    assert 'target="_blank"' in html

    for bad, why in [(f"{redirect}?code={CODE}&state=OLD", "another sign-in"),
                     ("complete garbage", "spaces"),
                     (f"https://evil.example/callback?code={CODE}&state=S1", "evil.example")]:
        card.box.value = bad
        card.use.click()
        assert why in card.status.value and "Paste again" in card.status.value
        assert CODE not in card.status.value
        assert card.box.value == "" and not card.box.disabled and card.answered is None
    card.box.value = f"{redirect}?code={CODE}&state=S1&iss=x"
    card.use.click()
    assert future.result(10) == f"{redirect}?code={CODE}&state=S1&iss=x"
    _settle(made, future)
    # no flow went on with it here: received, never "signed in" (test_card_says_signed_in_...)
    assert "received the pasted address; finishing the sign-in" in card.status.value
    assert card.box.disabled and card.use.disabled
    assert CODE not in _state(card)


def test_the_loopback_wins_and_the_card_says_so_and_disables_itself(
        asker: tuple[NotebookAsker, list[Any]]) -> None:
    made, _shown = asker
    redirect = _redirect()
    future = _start(made, redirect)
    (card,) = wait_answered(made)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the listener starts beside the card
        try:
            page = httpx.get(f"{redirect}?code={CODE}&state=S1", timeout=5)
            break
        except httpx.ConnectError:
            time.sleep(0.05)
    assert "You can close this tab" in page.text
    assert future.result(10).endswith(f"code={CODE}&state=S1")
    _settle(made, future)
    assert ("received your browser came back to toolbench; finishing the sign-in"
            in card.status.value)
    assert card.box.disabled and card.use.disabled
    assert CODE not in _state(card)


def test_nobody_signing_in_times_out_and_the_card_says_so(
        asker: tuple[NotebookAsker, list[Any]]) -> None:
    made, _shown = asker
    future = _start(made, _redirect(), timeout=0.5)
    (card,) = wait_answered(made)
    with pytest.raises(TimeoutError, match=r"within 0\.5 s"):
        future.result(10)
    _settle(made, future)
    assert "no sign-in within 0.5 s" in card.status.value
    assert card.use.disabled


def test_an_error_from_the_authorization_server_is_shown_and_handed_on(
        asker: tuple[NotebookAsker, list[Any]]) -> None:
    made, _shown = asker
    redirect = _redirect()
    future = _start(made, redirect)
    (card,) = wait_answered(made)
    card.box.value = (f"{redirect}?error=access_denied"
                      "&error_description=%3Cb%3Eno%3C%2Fb%3E&state=S1")
    card.use.click()
    assert "error=access_denied" in future.result(10)
    assert "refused: access_denied: &lt;b&gt;no&lt;/b&gt;" in card.status.value


@pytest.mark.parametrize("token_endpoint", ["works", "answers HTML"])
def test_the_card_says_signed_in_only_once_the_tokens_came(
        asker: tuple[NotebookAsker, list[Any]], token_endpoint: str, tmp_path: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real flow (bench.connect against the protected test server): the card
    says "received" when the address is pasted, "signed in" once the code became tokens, and
    the failure when the token exchange fails after the redirect."""
    import threading

    import httpx2
    from servers.oauth_server import serve

    import toolbench as tb
    from toolbench._transports.auth.state import register_authorizer

    monkeypatch.setenv("TOOLBENCH_DATA_DIR", str(tmp_path))
    made, _shown = asker
    seen: list[str] = []

    async def card_authorizer(url: str, redirect: str, timeout: float) -> str:
        seen.append(url)
        return await notebook_authorizer(url, redirect, timeout, asker=made)

    previous = register_authorizer(card_authorizer)
    outcome: list[BaseException | None] = []
    try:
        with serve() as (url, provider), tb.Bench() as bench:
            if token_endpoint == "answers HTML":
                provider.hostile["/token"] = ("html", None)

            def connect() -> None:
                try:
                    bench.connect("p", url, auth=tb.OAuth(store="memory", timeout=60))
                    outcome.append(None)
                except BaseException as exc:
                    outcome.append(exc)

            thread = threading.Thread(target=connect)
            thread.start()
            (card,) = wait_answered(made, timeout=30)
            back = httpx2.get(seen[0], follow_redirects=False, timeout=10).headers["location"]
            card.box.value = back
            card.use.click()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (
                    "finishing" in card.status.value or not card.status.value):
                made.service()
                time.sleep(0.01)
            thread.join(30)
            code = back.split("code=")[1].split("&")[0]
            if token_endpoint == "works":
                assert outcome == [None]
                assert "signed in (the pasted address)" in card.status.value
            else:
                assert isinstance(outcome[0], tb.Unreachable)
                assert "sign-in failed: " in card.status.value
                assert "Invalid token response" in card.status.value  # the SDK's words
                assert "<h1>" not in card.status.value  # the server's page, escaped
                assert "signed in" not in card.status.value
            assert card.box.disabled and card.use.disabled
            assert code not in _state(card)
            for secret in provider.issued:
                assert secret not in _state(card)
    finally:
        register_authorizer(previous)
