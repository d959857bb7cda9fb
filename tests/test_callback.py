"""Checking a pasted sign-in address: what is refused, why, and that the code is never shown."""

from __future__ import annotations

import pytest

from toolbench._transports.auth.callback import (
    CallbackRefused,
    callback_error,
    check_callback,
    expected_state,
)

AUTH = ("https://as.example/authorize?response_type=code&client_id=c&state=STATE1"
        "&redirect_uri=http%3A%2F%2F127.0.0.1%3A8123%2Fcallback")
REDIRECT = "http://127.0.0.1:8123/callback"
CODE = "THE-CODE-xyz"


def test_the_redirect_of_this_sign_in_is_taken() -> None:
    good = f"  {REDIRECT}?code={CODE}&state=STATE1&iss=https%3A%2F%2Fas.example \n"
    assert check_callback(good, AUTH, REDIRECT) == good.strip()
    assert check_callback("http://localhost:8123/callback?code=c&state=STATE1", AUTH,
                          REDIRECT).startswith("http://localhost")
    assert expected_state(AUTH) == "STATE1"


@pytest.mark.parametrize(("pasted", "rule"), [
    ("", "nothing was pasted"),
    ("   ", "nothing was pasted"),
    ("hello world", "spaces"),
    ("not a url at all", "spaces"),
    ("garbage", "not an address"),
    ("x" * 9000, "far shorter"),
    (f"http://127.0.0.1:9999/callback?code={CODE}&state=STATE1", "but this sign-in returns to"),
    (f"https://evil.example/callback?code={CODE}&state=STATE1", "evil.example"),
    (f"https://127.0.0.1:8123/callback?code={CODE}&state=STATE1", "but this sign-in returns"),
    (f"http://127.0.0.1:8123/other?code={CODE}&state=STATE1", "path '/other'"),
    (f"{REDIRECT}?code={CODE}&state=OLD", "another sign-in"),
    (f"{REDIRECT}?code={CODE}", "no state"),
    (f"{REDIRECT}?state=STATE1", "no authorization code"),
    ("http://[::1/callback?code=x", "not an address"),
])
def test_what_cannot_be_this_redirect_is_refused_naming_the_rule_never_the_code(
        pasted: str, rule: str) -> None:
    with pytest.raises(CallbackRefused) as caught:
        check_callback(pasted, AUTH, REDIRECT)
    message = str(caught.value)
    assert rule in message
    assert CODE not in message
    assert "STATE1" not in message and "OLD" not in message


def test_an_error_redirect_is_taken_and_its_error_read() -> None:
    url = f"{REDIRECT}?error=access_denied&error_description=no+thanks&state=STATE1"
    assert check_callback(url, AUTH, REDIRECT) == url
    assert callback_error(url) == "access_denied: no thanks"
    assert callback_error(f"{REDIRECT}?code=c&state=STATE1") is None
