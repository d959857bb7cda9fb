"""The protected demo server's authorization side, in process (its HTTP app over ASGI): what a
browser and a client see before and during a sign-in. The whole flow against the real
process is in test_signin.py, test_signin_commands.py and the notebook test."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import secrets
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from toolbench.demo.protected import build_server, main

BASE = "http://127.0.0.1:8123"
REDIRECT = "http://127.0.0.1:9999/callback"


def _client(approve: str) -> tuple[httpx.AsyncClient, Any]:
    server, provider = build_server(BASE, approve=approve)
    app = server.streamable_http_app()
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE), provider


async def _register(client: httpx.AsyncClient, name: str = "toolbench") -> str:
    answer = await client.post("/register", json={
        "client_name": name, "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["client_id"])


def _authorize_url(client_id: str) -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()) \
        .rstrip(b"=").decode()
    query = urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
                       "state": "S1", "code_challenge": challenge,
                       "code_challenge_method": "S256", "scope": "mcp",
                       "resource": f"{BASE}/mcp"})
    return f"/authorize?{query}", verifier


def test_auto_approve_redirects_back_with_a_code_the_state_and_the_issuer() -> None:
    async def main_() -> None:
        client, _provider = _client("auto")
        async with client:
            meta = (await client.get("/.well-known/oauth-authorization-server")).json()
            assert meta["issuer"] == BASE  # no trailing slash: it equals the redirect's iss
            client_id = await _register(client)
            url, verifier = _authorize_url(client_id)
            answer = await client.get(url)
            assert answer.status_code == 302
            back = answer.headers["location"]
            fields = {k: v[0] for k, v in parse_qs(urlsplit(back).query).items()}
            assert back.startswith(REDIRECT) and fields["state"] == "S1"
            assert fields["iss"] == BASE
            tokens = (await client.post("/token", data={
                "grant_type": "authorization_code", "code": fields["code"],
                "redirect_uri": REDIRECT, "client_id": client_id,
                "code_verifier": verifier, "resource": f"{BASE}/mcp"})).json()
            assert tokens["token_type"] == "Bearer" and tokens["refresh_token"]
            refreshed = (await client.post("/token", data={
                "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                "client_id": client_id})).json()
            assert refreshed["access_token"] != tokens["access_token"]
            again = await client.post("/token", data={  # refresh tokens rotate
                "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                "client_id": client_id})
            assert again.status_code == 400

    asyncio.run(main_())


def test_the_approve_page_escapes_the_client_name_and_refuses_unknown_tickets() -> None:
    async def main_() -> None:
        client, provider = _client("button")
        async with client:
            client_id = await _register(client, name="<script>alert(1)</script>")
            url, _verifier = _authorize_url(client_id)
            answer = await client.get(url)
            assert answer.status_code == 302
            page = await client.get(answer.headers["location"])
            assert "<script>" not in page.text and "&lt;script&gt;" in page.text
            assert "Approve" in page.text
            ticket = re.search(r"name='ticket' value='([^']+)'", page.text)
            assert ticket is not None
            bad = await client.post("/approve", data={"ticket": "nope"})
            assert bad.status_code == 400 and "unknown or expired" in bad.text
            good = await client.post("/approve", data={"ticket": ticket.group(1)})
            assert good.status_code == 302 and good.headers["location"].startswith(REDIRECT)
            reused = await client.post("/approve", data={"ticket": ticket.group(1)})
            assert reused.status_code == 400  # a ticket works once
            assert provider.pending == {}

    asyncio.run(main_())


def test_the_mcp_endpoint_wants_a_token() -> None:
    async def main_() -> None:
        client, _provider = _client("auto")
        async with client:
            answer = await client.post("/mcp", json={})
            assert answer.status_code == 401
            assert "resource_metadata=" in answer.headers["www-authenticate"]

    asyncio.run(main_())


@pytest.mark.parametrize(("argv", "message"), [
    (["--port", "70000"], "a port is 0..65535"),
    (["--token-lifetime", "0"], "at least 1 second"),
    (["--approve", "maybe"], "invalid choice"),
])
def test_bad_arguments_are_usage_errors(argv: list[str], message: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_the_demo_is_quiet_on_stderr_through_a_whole_sign_in_and_call(tmp_path: Any) -> None:
    """Issue 37, item 8: notebook 06 showed three pink stderr boxes, the demo's INFO lines
    (session manager started, session created, terminated). A working demo says nothing."""
    import subprocess
    import sys

    import httpx2

    import toolbench as tb

    def authorize(url: str) -> str:
        return str(httpx2.get(url, follow_redirects=False, timeout=10).headers["location"])

    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:
        server = subprocess.Popen([sys.executable, "-m", "toolbench.demo.protected", "--port",
                                   "0"], stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split()[1]
        with tb.Bench(timeout=20) as bench:
            bench.connect("protected", url, auth=tb.OAuth(authorize=authorize, store="memory"))
            assert bench.call("protected-echo", text="hi").text == "hi"
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()
    assert log.read_text() == "", log.read_text()
