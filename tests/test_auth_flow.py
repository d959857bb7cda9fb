"""The sign-in flow (toolbench/_transports/auth/flow.py) against a hostile authorization server,
end to end (issue 24, "Bad input, each with a test").

The real protected MCP server of tests/servers/oauth_server.py, its authorization server made
to misbehave on one path at a time (``provider.hostile``): it never answers, answers slowly,
redirects to another host, answers HTML instead of JSON, or publishes ``file:`` and
``javascript:`` endpoints. Each ends in a clear ``Unreachable`` naming the value and the rule
(never ``TimedOut``), or a sign-in that succeeds, within its timeout; no token, code or
verifier appears in the error, the tables, the records or the logs; and a neighbour server on
the same bench keeps answering while the sign-in misbehaves.

The cases already covered elsewhere: a token of 1 MB, a wrong ``state`` returned by an
``authorize`` hook, the store's symlink / FIFO / corrupt file and two benches at once
(test_auth.py); a pasted address with a wrong ``state`` on the card (test_signin_card.py, and
test_browser_signin.py in Chromium), and here once more through the terminal's way.
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from servers.oauth_server import Provider, serve

import toolbench as tb
from toolbench._transports.auth import flow as auth_flow
from toolbench._transports.auth import state as _auth
from toolbench._transports.auth.signin import terminal_authorizer

AS_METADATA = "/.well-known/oauth-authorization-server"


def _neighbour() -> Any:
    """An in-process MCP server on the shared loop, beside the one signing in."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("neighbour")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    return server
@pytest.fixture
def server() -> Iterator[tuple[str, Provider]]:
    with serve() as found:
        yield found


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "data"
    monkeypatch.setenv("TOOLBENCH_DATA_DIR", str(folder))
    return folder


class Browser:
    """The person: opens the authorization URL, ends on the redirect; keeps what it saw."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.returned: list[str] = []

    def __call__(self, url: str) -> str:
        self.urls.append(url)
        response = httpx2.get(url, follow_redirects=False, timeout=10)
        assert response.status_code in (302, 303, 307), response.text
        location = str(response.headers["location"])
        self.returned.append(location)
        return location

    def secrets(self) -> list[str]:
        """The codes it carried back (the verifier never leaves the client: see below)."""
        found = []
        for url in self.returned:
            found += parse_qs(urlsplit(url).query).get("code", [])
        return found


def _surfaces(bench: tb.Bench, error: BaseException | None,
              caplog: pytest.LogCaptureFixture) -> str:
    parts = [bench.servers.to_string(), repr(bench.servers.to_dict()),
             bench.records.to_string(), repr(bench.records.to_dict()), repr(bench),
             bench.logs.to_string()]
    if error is not None:
        parts += [str(error), repr(error)]
        cause = error.__cause__
        while cause is not None:
            parts.append(str(cause))
            cause = cause.__cause__
    # what toolbench and the SDK log (httpcore's traces include the test's own browser)
    parts += [r.getMessage() for r in caplog.records
              if r.name.split(".")[0] in ("toolbench", "mcp", "httpx2")]
    return "\n".join(parts)


def _no_secret(text: str, provider: Provider, browser: Browser, verifiers: list[str]) -> None:
    secrets = [*provider.issued, *browser.secrets(), *verifiers]
    for secret in secrets:
        assert secret not in text, f"a secret ({secret[:5]}...) was shown"


@pytest.fixture
def verifiers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every PKCE verifier the SDK makes in this test (to look for it on every surface)."""
    from mcp.client.auth import oauth2

    made: list[str] = []
    original = oauth2.PKCEParameters.generate

    def generate() -> Any:
        found = original()
        made.append(found.code_verifier)
        return found

    monkeypatch.setattr(oauth2.PKCEParameters, "generate", staticmethod(generate))
    return made


async def _with_a_neighbour(bench: tb.Bench, sign_in: Any) -> tuple[Any, list[float]]:
    """Run ``sign_in`` (awaitable) while the neighbour server is called every 0.1 s; returns
    its outcome (a result or the exception) and the neighbour's call latencies."""
    latencies: list[float] = []
    task = asyncio.ensure_future(sign_in)
    while not task.done():
        started = time.monotonic()
        result = await bench.acall("n-echo", text="still here", timeout=10)
        assert result.text == "still here"
        latencies.append(time.monotonic() - started)
        await asyncio.wait([task], timeout=0.1)
    try:
        return task.result(), latencies
    except Exception as exc:
        return exc, latencies


def _hostile_connect(url: str, browser: Browser, *, timeout: float = 60,
                     connect_timeout: float = 30) -> tuple[tb.Bench, Any, list[float], float]:
    bench = tb.Bench(connect_timeout=connect_timeout)
    bench.connect("n", _neighbour())
    started = time.monotonic()

    async def run() -> tuple[Any, list[float]]:
        return await _with_a_neighbour(bench, bench.aconnect(
            "p", url, auth=tb.OAuth(authorize=browser, store="memory", timeout=timeout)))

    outcome, latencies = asyncio.run(run())
    return bench, outcome, latencies, time.monotonic() - started


def _check_failed(outcome: Any, latencies: list[float], match: str) -> tb.Unreachable:
    assert isinstance(outcome, tb.Unreachable), repr(outcome)
    assert not isinstance(outcome, tb.TimedOut)
    assert re.search(match, str(outcome)), str(outcome)
    assert latencies, "the neighbour was never called"
    assert max(latencies) < 5, f"the neighbour stalled: {max(latencies):.1f} s"
    return outcome


def test_an_authorization_server_that_never_answers(
        server: tuple[str, Provider], caplog: pytest.LogCaptureFixture,
        verifiers: list[str]) -> None:
    url, provider = server
    provider.hostile[AS_METADATA] = ("hang", None)
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    bench, outcome, latencies, took = _hostile_connect(url, browser, connect_timeout=8)
    with bench:
        error = _check_failed(outcome, latencies,
                              r"connect_timeout=8 s: its sign-in held the handshake back \(it was "
                              r"still waiting for the authorization server to answer GET "
                              r"http://127\.0\.0\.1:\d+/\.well-known/oauth-authorization-server")
        assert took < 30, f"took {took:.1f} s"
        assert browser.urls == []  # nobody was sent anywhere
        _no_secret(_surfaces(bench, error, caplog), provider, browser, verifiers)


def test_a_token_endpoint_that_never_answers_stops_the_flow_within_its_bound(
        server: tuple[str, Provider], caplog: pytest.LogCaptureFixture,
        verifiers: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """With a connect_timeout longer than the bound on one authorization-server request, the
    flow stops at that bound and says which request went unanswered."""
    monkeypatch.setattr(auth_flow, "AS_TIMEOUT_S", 3.0)
    monkeypatch.setattr(auth_flow, "AS_TIMEOUT", httpx2.Timeout(3.0))
    url, provider = server
    provider.hostile["/token"] = ("hang", None)
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    bench, outcome, latencies, took = _hostile_connect(url, browser, connect_timeout=60)
    with bench:
        error = _check_failed(outcome, latencies,
                              r"sign-in failed .*the authorization server did not answer POST "
                              r"http://127\.0\.0\.1:\d+/token within 3 s \(ReadTimeout\)")
        assert took < 30, f"took {took:.1f} s"
        assert len(browser.urls) == 1
        _no_secret(_surfaces(bench, error, caplog), provider, browser, verifiers)


def test_an_authorization_server_that_answers_slowly_still_signs_in(
        server: tuple[str, Provider], caplog: pytest.LogCaptureFixture,
        verifiers: list[str]) -> None:
    url, provider = server
    provider.hostile[AS_METADATA] = ("slow", 2.0)
    provider.hostile["/token"] = ("slow", 2.0)
    # the person's (plain, blocking) authorize function waits 4 s on the authorization page:
    # it runs off the shared loop, so the neighbour's calls go on meanwhile
    provider.hostile["/authorize"] = ("slow", 4.0)
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    bench, outcome, latencies, _took = _hostile_connect(url, browser)
    with bench:
        assert outcome is None or not isinstance(outcome, BaseException), repr(outcome)
        assert provider.hits == [AS_METADATA, "/authorize", "/token"]
        assert len(browser.urls) == 1
        assert max(latencies) < 3 and len(latencies) >= 20  # 8 s of sign-in, calls went on
        assert "mcp" in bench.call("p-whoami").text
        _no_secret(_surfaces(bench, None, caplog), provider, browser, verifiers)


def test_a_token_endpoint_that_redirects_to_another_host(
        server: tuple[str, Provider], caplog: pytest.LogCaptureFixture,
        verifiers: list[str]) -> None:
    url, provider = server
    provider.hostile["/token"] = ("redirect", "http://attacker.invalid/steal")
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    bench, outcome, latencies, _took = _hostile_connect(url, browser)
    with bench:
        error = _check_failed(outcome, latencies,
                              r"sign-in failed.*Token exchange failed \(307\).*attacker\.invalid"
                              r".*not followed")
        assert provider.hits == ["/token"]
        _no_secret(_surfaces(bench, error, caplog), provider, browser, verifiers)


def test_metadata_that_redirects_to_another_host_is_not_followed(
        server: tuple[str, Provider], caplog: pytest.LogCaptureFixture,
        verifiers: list[str]) -> None:
    """The SDK follows an authorization server's redirects only within its origin: a
    discovery document sent elsewhere counts as not found, and the sign-in goes on at the
    issuer's own default endpoints (a fresh sign-in, nothing sent to the other host)."""
    url, provider = server
    provider.hostile[AS_METADATA] = ("redirect", "http://attacker.invalid/metadata")
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    bench, outcome, latencies, _took = _hostile_connect(url, browser)
    with bench:
        assert not isinstance(outcome, BaseException), repr(outcome)
        assert provider.hits == [AS_METADATA] and provider.authorized == 1
        assert all(urlsplit(u).hostname == "127.0.0.1" for u in browser.urls)
        assert "attacker.invalid" not in "\n".join(
            r.getMessage() for r in caplog.records if r.name.startswith("httpx2"))
        assert max(latencies) < 5
        assert "mcp" in bench.call("p-whoami").text
        _no_secret(_surfaces(bench, None, caplog), provider, browser, verifiers)


@pytest.mark.parametrize(("path", "match"), [
    ("/token", r"sign-in failed.*Token exchange failed|sign-in failed.*token response"),
    ("/register", r"sign-in failed.*[Rr]egistration"),
    # a discovery document that is not JSON counts as not found: the issuer's defaults work
    (AS_METADATA, None),
])
def test_html_instead_of_json(server: tuple[str, Provider], caplog: pytest.LogCaptureFixture,
                              verifiers: list[str], path: str, match: str | None) -> None:
    url, provider = server
    provider.hostile[path] = ("html", None)
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    bench, outcome, latencies, _took = _hostile_connect(url, browser)
    with bench:
        assert provider.hits == [path]
        if match is None:
            assert not isinstance(outcome, BaseException), repr(outcome)
            assert "mcp" in bench.call("p-whoami").text
            error = None
        else:
            error = _check_failed(outcome, latencies, match)
            assert "<h1>" not in str(error)
        _no_secret(_surfaces(bench, error, caplog), provider, browser, verifiers)


META = (r"the metadata at http://127\.0\.0\.1:\d+/\.well-known/{doc} names {field} "
        r"'{value}', which is not an http\(s\) URL; sign-in stopped")


@pytest.mark.parametrize(("path", "field", "value"), [
    (AS_METADATA, "authorization_endpoint", "javascript:alert(document.cookie)"),
    (AS_METADATA, "authorization_endpoint", "file:///etc/passwd"),
    (AS_METADATA, "token_endpoint", "file:///etc/passwd"),
    (AS_METADATA, "registration_endpoint", "javascript:alert(1)"),
    ("/.well-known/oauth-protected-resource/mcp", "authorization_servers", "file:///etc"),
])
def test_metadata_with_file_or_javascript_urls(
        server: tuple[str, Provider], caplog: pytest.LogCaptureFixture, verifiers: list[str],
        path: str, field: str, value: str) -> None:
    url, provider = server
    patch: Any = [value] if field == "authorization_servers" else value
    provider.hostile[path] = ("patch", {field: patch})
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    bench, outcome, latencies, _took = _hostile_connect(url, browser)
    with bench:
        error = _check_failed(outcome, latencies, "sign-in failed.*" + META.format(
            doc=re.escape(path.removeprefix("/.well-known/")), field=field,
            value=re.escape(value)))
        assert browser.urls == [] and provider.authorized == 0  # nobody was sent anywhere
        assert bench.servers.iloc[-1]["status"] == "failed"
        _no_secret(_surfaces(bench, error, caplog), provider, browser, verifiers)


def test_a_pasted_address_with_a_wrong_state_through_the_terminal(
        server: tuple[str, Provider], caplog: pytest.LogCaptureFixture,
        verifiers: list[str]) -> None:
    """The default authorizer's terminal way: a pasted address from another sign-in is
    refused (the message names the rule), the right one then signs in."""
    url, provider = server
    browser = Browser()
    caplog.set_level(logging.DEBUG)
    out = io.StringIO()

    class Lines(io.StringIO):
        """stdin: the wrong address, then (once the first was refused) the right one."""

        def __init__(self) -> None:
            super().__init__()
            self.sent = 0

        def readline(self, size: int | None = -1) -> str:
            while not browser.returned:
                time.sleep(0.02)
            self.sent += 1
            back = browser.returned[0]
            if self.sent == 1:
                return back.replace("state=", "state=x", 1) + "\n"
            if self.sent == 2:
                return back + "\n"
            time.sleep(60)
            return ""

    lines = Lines()

    async def terminal(auth_url: str, redirect_uri: str, timeout: float) -> str:
        browser(auth_url)  # the person's browser goes there; the redirect lands nowhere
        return await terminal_authorizer(auth_url, redirect_uri, timeout, out=out, stdin=lines)

    previous = _auth.register_authorizer(terminal)
    try:
        with tb.Bench() as bench:
            # a redirect URI nobody listens on, as for a kernel the browser cannot reach
            bench.connect("p", url, auth=tb.OAuth(store="memory", timeout=60))
            assert "mcp" in bench.call("p-whoami").text
            shown = out.getvalue()
            assert "belongs to another sign-in" in shown and "Paste again" in shown
            assert "Received the sign-in (pasted)" in shown
            _no_secret(_surfaces(bench, None, caplog) + shown, provider, browser, verifiers)
    finally:
        _auth.register_authorizer(previous)
    assert lines.sent == 2 and provider.authorized == 1


def test_a_call_whose_sign_in_hangs_on_the_token_endpoint_is_unreachable_not_timed_out(
        server: tuple[str, Provider], caplog: pytest.LogCaptureFixture,
        verifiers: list[str]) -> None:
    """A revoked token makes a call sign in again; the token endpoint then never answers. The
    call ends at its own timeout as ``Unreachable`` (its request was never sent with a token
    the server took), naming what it waited for; the neighbour keeps answering."""
    url, provider = server
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    with tb.Bench() as bench:
        bench.connect("n", _neighbour())
        bench.connect("p", url, auth=tb.OAuth(authorize=browser, store="memory"))
        provider.revoke_all()
        provider.hostile["/token"] = ("hang", None)
        started = time.monotonic()

        async def run() -> tuple[Any, list[float]]:
            return await _with_a_neighbour(bench, bench.acall("p-whoami", timeout=4))

        outcome, latencies = asyncio.run(run())
        took = time.monotonic() - started
        error = _check_failed(outcome, latencies,
                              # queued behind a background listing's sign-in, or its own
                              r"server 'p': the call was not sent: (it was queued behind a "
                              r"sign-in already under way, and )?it was still waiting for "
                              r"the authorization server to answer POST "
                              r"http://127\.0\.0\.1:\d+/token")
        assert outcome.disposition is tb.Disposition.DID_NOT_HAPPEN
        assert 3.5 < took < 30 and len(browser.urls) == 2
        mine = bench.records[bench.records["server"] == "p"]
        assert list(mine["error_type"]) == ["Unreachable"]
        _no_secret(_surfaces(bench, error, caplog), provider, browser, verifiers)


def test_a_call_waiting_for_a_person_past_its_timeout_is_unreachable(
        server: tuple[str, Provider]) -> None:
    url, provider = server
    browser = Browser()
    late: list[str] = []

    async def slow_person(auth_url: str) -> str:
        if browser.urls:  # the second sign-in: nobody comes in time
            late.append(auth_url)
            await asyncio.sleep(8)
        return browser(auth_url)

    with tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=slow_person, store="memory"))
        provider.revoke_all()
        gave_up = (r"the call was not sent: (it was queued behind a sign-in already under "
                   r"way, and )?nobody finished signing in before it gave up")
        with pytest.raises(tb.Unreachable, match=gave_up) as failed:
            bench.call("p-whoami", timeout=3)
        assert not isinstance(failed.value, tb.TimedOut) and len(late) == 1


def test_a_non_https_authorization_endpoint_stops_the_flow() -> None:
    with pytest.raises(auth_flow.SignInError, match="not https"):
        auth_flow.check_endpoint("http://as.example.com/authorize?x=1", "authorization endpoint")
    with pytest.raises(auth_flow.SignInError, match="not https"):
        auth_flow.check_endpoint("javascript:alert(1)", "authorization endpoint")
    auth_flow.check_endpoint("http://127.0.0.1:9/authorize", "authorization endpoint")
    auth_flow.check_endpoint("https://as.example.com/authorize", "authorization endpoint")


def test_close_ends_a_sign_in_waiting_for_a_person_at_once(
        server: tuple[str, Provider]) -> None:
    """Issue #37, item 20: close() cancels the person's step instead of waiting for the
    connection's 10 s close grace (it took 10.0 s)."""
    import threading

    url, provider = server
    browser = Browser()
    asked = threading.Event()

    async def absent_person(auth_url: str) -> str:
        if browser.urls:  # the second sign-in: nobody comes
            asked.set()
            await asyncio.sleep(60)
        return browser(auth_url)

    bench = tb.Bench()
    outcome: list[BaseException] = []
    try:
        bench.connect("p", url, auth=tb.OAuth(authorize=absent_person, store="memory",
                                              timeout=120))
        provider.revoke_all()

        def call() -> None:
            try:
                bench.call("p-whoami", timeout=120)
            except BaseException as exc:
                outcome.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        assert asked.wait(20), "the second sign-in never asked the person"
    finally:
        began = time.monotonic()
        bench.close()
        took = time.monotonic() - began
    caller.join(10)
    assert not caller.is_alive()
    assert took < 3.0, f"close took {took:.1f} s"
    assert len(outcome) == 1 and isinstance(outcome[0], tb.Unreachable), outcome
    assert "closed while a person was signing in" in str(outcome[0])
