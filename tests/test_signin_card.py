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
from toolbench._notebook.ask import NotebookAsker, wait_answered
from toolbench._notebook.signin import SignInCard, notebook_authorizer

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
    assert "signed in (the pasted address)" in card.status.value
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
    assert "signed in (your browser came back to toolbench)" in card.status.value
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
