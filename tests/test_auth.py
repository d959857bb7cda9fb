"""Signing in (toolbench/_transports/auth/state.py) against a real authorization server and
protected
MCP server built from the SDK's server-side auth (tests/servers/oauth_server.py, in a thread).

The ``authorize`` hook plays the person's browser: it fetches the authorization URL without
following the redirect and returns the ``Location`` (the consent is granted at once).
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from servers.oauth_server import Provider, serve

import toolbench as tb
from toolbench._transports.auth import state as _auth


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
    """The person: opens the authorization URL, ends on the redirect (counted)."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.tamper = False  # return an address whose state was changed

    def __call__(self, url: str) -> str:
        self.urls.append(url)
        response = httpx2.get(url, follow_redirects=False, timeout=10)
        assert response.status_code in (302, 303, 307), response.text
        location = str(response.headers["location"])
        return location.replace("state=", "state=zz") if self.tamper else location


def _texts(bench: tb.Bench) -> str:
    """Every surface a secret could leak to, as one text."""
    return "\n".join([bench.servers.to_string(), repr(bench.servers.to_dict()),
                      bench.records.to_string(), repr(bench.records.to_dict()),
                      repr(bench), repr(bench.connections.rows()), bench.logs.to_string()])


def test_sign_in_call_and_the_auth_column(server: tuple[str, Provider]) -> None:
    url, provider = server
    browser = Browser()
    with tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=browser))
        assert len(browser.urls) == 1 and provider.authorized == 1
        row = bench.servers.iloc[0]
        assert row["status"] == "connected"
        assert row["auth"].startswith("oauth (expires in ")
        assert "mcp" in bench.call("p-whoami").text
        text = _texts(bench)
        for secret in provider.issued:
            assert secret not in text
    # a bench without auth on the same server: a clear Refused / Unreachable, never TimedOut
    with tb.Bench() as bench:
        with pytest.raises(tb.Unreachable, match=r"HTTP 401.*auth='oauth'"):
            bench.connect("p", url)
        assert bench.servers.iloc[0]["auth"] == "none"


def test_the_file_store_keeps_the_sign_in_for_the_next_bench(
        server: tuple[str, Provider], data_dir: Path) -> None:
    url, provider = server
    browser = Browser()
    with tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=browser))
    files = list((data_dir / "oauth").glob("*.json"))
    assert len(files) == 1
    assert stat.S_IMODE(os.stat(files[0]).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(data_dir / "oauth").st_mode) == 0o700
    record = json.loads(files[0].read_text())
    assert record["issuer"].startswith("http://127.0.0.1:") and record["tokens"]
    with tb.Bench() as bench:  # a new bench, the same store: no person needed
        bench.connect("p", url, auth=tb.OAuth(authorize=browser))
        assert "mcp" in bench.call("p-whoami").text
    assert len(browser.urls) == 1 and provider.authorized == 1


@pytest.mark.slow  # waits 6.5 s for the token to run out
def test_an_expired_token_is_refreshed_without_a_person(server: tuple[str, Provider]) -> None:
    url, provider = server
    browser = Browser()
    with tb.Bench() as bench:
        provider.expires_in = 6  # room for the connect on a busy machine, then it runs out
        bench.connect("p", url, auth=tb.OAuth(authorize=browser, store="memory"))
        provider.expires_in = 3600
        time.sleep(6.5)
        assert "expired" in bench.servers.iloc[0]["auth"]
        assert "mcp" in bench.call("p-whoami").text
    assert provider.refreshed >= 1 and len(browser.urls) == 1


def test_a_revoked_token_signs_in_again(server: tuple[str, Provider]) -> None:
    url, provider = server
    browser = Browser()
    with tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=browser, store="memory"))
        provider.revoke_all()
        assert "mcp" in bench.call("p-whoami").text  # a 401, then a fresh sign-in
    assert len(browser.urls) == 2 and provider.authorized == 2


def test_step_up_asks_for_the_new_scope(server: tuple[str, Provider]) -> None:
    url, _ = server
    browser = Browser()
    with tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=browser, store="memory"))
        assert "write" not in bench.call("p-whoami").text
        assert bench.call("p-write", text="x").text == "wrote x"
        assert "write" in bench.call("p-whoami").text
    assert len(browser.urls) == 2
    assert "scope=mcp+write" in browser.urls[1] or "scope=mcp%20write" in browser.urls[1]


def test_a_state_that_does_not_match_stops_the_sign_in(server: tuple[str, Provider]) -> None:
    url, _ = server
    browser = Browser()

    def wrong_state(auth_url: str) -> str:
        return browser(auth_url).replace("state=", "state=x")

    with tb.Bench() as bench:
        with pytest.raises(tb.Unreachable, match=r"sign-in failed.*state does not match"):
            bench.connect("p", url, auth=tb.OAuth(authorize=wrong_state, store="memory"))
        assert "oauth" in bench.servers.iloc[0]["auth"]


@pytest.mark.slow  # waits 10 s for nobody
def test_nobody_signing_in_is_unreachable_within_the_timeout(
        server: tuple[str, Provider]) -> None:
    url, _ = server

    async def never(auth_url: str) -> str:
        import anyio
        await anyio.sleep(60)
        return ""

    started = time.monotonic()
    # the person's wait is not connect time: connect_timeout 8 s, the person 10 s
    with tb.Bench(connect_timeout=8) as bench, \
            pytest.raises(tb.Unreachable, match=r"no sign-in within timeout=10 s"):
        bench.connect("p", url, auth=tb.OAuth(authorize=never, store="memory", timeout=10))
    assert 9.5 < time.monotonic() - started < 50  # 5x the 10 s; never answering is 60 s


def test_no_authorizer_says_how_to_sign_in(server: tuple[str, Provider]) -> None:
    url, _ = server
    previous = _auth.register_authorizer(None)
    try:
        with tb.Bench() as bench, pytest.raises(tb.Unreachable, match=r"authorize=\.\.\."):
            bench.connect("p", url, auth=tb.OAuth(store="memory"))
    finally:
        _auth.register_authorizer(previous)


def test_the_registered_authorizer_is_the_default(server: tuple[str, Provider]) -> None:
    url, _ = server
    browser = Browser()
    seen: list[tuple[str, float]] = []

    async def card(auth_url: str, redirect_uri: str, timeout: float) -> str:
        seen.append((redirect_uri, timeout))
        return browser(auth_url)

    previous = _auth.register_authorizer(card)
    try:
        with tb.Bench() as bench:
            bench.connect("p", url, auth=tb.OAuth(store="memory", timeout=42))
    finally:
        _auth.register_authorizer(previous)
    [(redirect, timeout)] = seen
    assert redirect.startswith("http://127.0.0.1:") and redirect.endswith("/callback")
    assert timeout == 42


def test_two_benches_sign_in_to_the_same_server_at_once(
        server: tuple[str, Provider], data_dir: Path) -> None:
    url, _ = server
    browser = Browser()
    errors: list[BaseException] = []
    texts: list[str] = []

    def one() -> None:
        try:
            with tb.Bench() as bench:
                bench.connect("p", url, auth=tb.OAuth(authorize=browser))
                texts.append(bench.call("p-whoami").text or "")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and len(texts) == 2
    for path in (data_dir / "oauth").glob("*.json"):  # whole, valid records
        assert json.loads(path.read_text())["version"] == 1


def test_a_symlinked_or_corrupt_store_file(server: tuple[str, Provider], data_dir: Path,
                                          tmp_path: Path) -> None:
    url, _ = server
    browser = Browser()
    with tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=browser))
    [path] = list((data_dir / "oauth").glob("*.json"))
    path.write_text("{not json")  # corrupt: a fresh sign-in replaces it
    with tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=browser))
    assert len(browser.urls) == 2 and json.loads(path.read_text())["tokens"]
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    path.unlink()
    path.symlink_to(target)  # a symlink is refused, never followed
    with tb.Bench() as bench, pytest.raises(tb.Unreachable, match="symbolic link"):
        bench.connect("p", url, auth=tb.OAuth(authorize=browser))
    assert target.read_text() == "{}"
    path.unlink()
    os.mkfifo(path)  # a FIFO: refused at once, not a hang
    with tb.Bench() as bench, pytest.raises(tb.Unreachable, match="not a regular file"):
        bench.connect("p", url, auth=tb.OAuth(authorize=browser))


def test_no_token_code_or_secret_on_any_surface(server: tuple[str, Provider], tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """Tokens, codes and client secrets: not in servers, records, the journal, reprs, logs,
    warnings or errors (also after a failed sign-in and a refused call)."""
    import logging
    import warnings

    url, provider = server
    browser = Browser()
    journal = tmp_path / "calls.sqlite"
    errors: list[str] = []
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught, tb.Bench(journal=str(journal)) as bench:
        warnings.simplefilter("always")
        bench.connect("p", url, auth=tb.OAuth(authorize=browser))
        bench.call("p-whoami")
        provider.revoke_all()
        browser.tamper = True  # the next sign-in goes wrong
        with pytest.raises(tb.Unreachable, match="state does not match") as failed:
            bench.call("p-whoami", timeout=30)
        errors.append(str(failed.value))
        assert failed.value.disposition is tb.Disposition.DID_NOT_HAPPEN
        assert bench.records.iloc[-1]["error_type"] == "Unreachable"
        surfaces = _texts(bench) + "\n".join(errors)
    with tb.Bench(journal=str(journal)) as again:  # what the journal loads back
        surfaces += again.records.to_string() + repr(again.records.to_dict())
    surfaces += journal.read_bytes().decode("latin-1")
    surfaces += "\n".join(str(w.message) for w in caught)
    surfaces += "\n".join(r.getMessage() for r in caplog.records
                          if r.name.startswith("toolbench"))
    assert len(provider.issued) >= 4
    for secret in provider.issued:
        assert secret not in surfaces, secret[:6]


def test_a_server_that_signs_in_cannot_travel_to_a_cluster(server: tuple[str, Provider]) -> None:
    pytest.importorskip("distributed")
    from toolbench._bench.many.cluster import _spec

    url, _ = server
    with tb.Bench() as bench:
        bench.connect("p", url, auth=tb.OAuth(authorize=Browser(), store="memory"))
        with pytest.raises(ValueError, match=r"server 'p' signs in \(auth=OAuth\).*Dask"):
            _spec(bench.connections, type(bench), "p")


def test_a_token_of_a_megabyte_stops_the_sign_in(server: tuple[str, Provider]) -> None:
    url, provider = server
    provider.token_padding = 1_000_000
    with tb.Bench() as bench:
        with pytest.raises(tb.Unreachable, match=r"a token of 1,000,0\d\d characters"):
            bench.connect("p", url, auth=tb.OAuth(authorize=Browser(), store="memory"))
        assert "x" * 100 not in bench.servers.to_string()
