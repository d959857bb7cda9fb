"""Checking the address a person pastes at the end of a sign-in, before the flow takes it.

A sign-in card (notebook) and ``toolbench auth login`` (terminal) both offer "paste the
address your browser ended on". :func:`check_callback` refuses, with a message a person can
act on, what cannot be this sign-in's redirect: garbage, another host or path than the
redirect URI, a ``state`` other than the one this flow sent, no code. The person can then
paste again. The message never repeats the pasted address (it holds the code).

The flow itself (``toolbench._transports.auth.state``) checks ``state`` and ``iss`` once more.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

MAX_PASTE_CHARS = 8_192
"""A redirect is a few hundred characters; more is not a sign-in address."""


class CallbackRefused(ValueError):
    """The pasted text is not this sign-in's redirect; the message says why (no secret)."""


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


def expected_state(authorization_url: str) -> str | None:
    """The ``state`` this flow sent, read from its authorization URL."""
    try:
        values = _query(authorization_url).get("state")
    except ValueError:
        return None
    return values[0] if values else None


def _origin(url: str) -> tuple[str, str, int | None, str]:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host == "localhost":
        host = "127.0.0.1"
    return parts.scheme.lower(), host, parts.port, parts.path or "/"


def check_callback(text: str, authorization_url: str, redirect_uri: str) -> str:
    """The pasted address, stripped, if it can be this flow's redirect; else
    :class:`CallbackRefused` naming the rule it broke."""
    pasted = (text or "").strip()
    if not pasted:
        raise CallbackRefused("nothing was pasted: copy the whole address from your browser's "
                              "address bar (it starts with "
                              f"{_shown(redirect_uri)})")
    if len(pasted) > MAX_PASTE_CHARS:
        raise CallbackRefused(f"the pasted text is {len(pasted):,} characters; a sign-in "
                              f"address is far shorter (at most {MAX_PASTE_CHARS:,})")
    if any(c.isspace() for c in pasted):
        raise CallbackRefused("the pasted text contains spaces or line breaks: paste only "
                              "the address")
    try:
        got = _origin(pasted)
        want = _origin(redirect_uri)
        fields = _query(pasted)
    except ValueError as exc:
        raise CallbackRefused(f"the pasted text is not an address ({exc})") from None
    if not got[0] or not got[1]:
        raise CallbackRefused("the pasted text is not an address: copy the whole address, "
                              f"starting with {_shown(redirect_uri)}")
    if got[:3] != want[:3]:
        host = got[1] + (f":{got[2]}" if got[2] else "")
        raise CallbackRefused(
            f"this address is on {got[0]}://{host[:100]}, but this sign-in returns to "
            f"{_shown(redirect_uri)}: paste the address of the tab the sign-in ended on")
    if got[3] != want[3]:
        raise CallbackRefused(f"this address has the path {got[3][:100]!r}, but this sign-in "
                              f"returns to {_shown(redirect_uri)}")
    state = expected_state(authorization_url)
    pasted_state = fields.get("state", [None])[0]
    if state is not None and pasted_state != state:
        raise CallbackRefused(
            "this address belongs to another sign-in (its state does not match this one's): "
            "paste the address from the tab opened by this card's link" if pasted_state else
            "this address carries no state: paste the whole address, query included")
    if "code" not in fields and "error" not in fields:
        raise CallbackRefused("this address carries no authorization code: finish signing in "
                              "in the browser tab, then paste the address it ends on")
    return pasted


def callback_error(url: str) -> str | None:
    """The authorization server's ``error`` (and description) in a redirect, capped; None
    when the redirect carries a code."""
    fields = _query(url)
    if "error" not in fields:
        return None
    error = fields["error"][0][:100]
    about = fields.get("error_description", [""])[0][:300]
    return f"{error}: {about}" if about else error


def _shown(redirect_uri: str) -> str:
    parts = urlsplit(redirect_uri)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"[:200]
