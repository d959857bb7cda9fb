"""Test helpers for the sign-in's person-facing side: the protected demo server as a real
child process, a "browser" that follows the authorization server's redirects, and a minimal
stand-in for the flow's core (the SDK's ``OAuthClientProvider`` calling an authorizer
``async (authorization_url, redirect_uri, timeout) -> str``), used until tests can go through
``bench.connect(..., auth=...)`` alone."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

Authorizer = Callable[[str, str, float], Awaitable[str]]


@contextlib.contextmanager
def protected_server(*extra: str, timeout: float = 30.0) -> Iterator[str]:
    """``python -m toolbench.demo.protected --port 0``; yields its MCP URL."""
    proc = subprocess.Popen([sys.executable, "-m", "toolbench.demo.protected", "--port", "0",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        deadline = time.monotonic() + timeout
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("READY ") or time.monotonic() > deadline:
            raise RuntimeError(f"protected demo did not start: {line!r}")
        yield line.split()[1]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()


def follow(url: str, *, until: str, limit: int = 5) -> str:
    """Play the browser: GET ``url`` and its redirects, bounded, stopping at (and returning)
    the first URL that starts with ``until`` without fetching it. Approves a consent page."""
    with httpx.Client(timeout=10) as client:
        for _ in range(limit):
            if url.startswith(until):
                return url
            response = client.get(url)
            if response.status_code in (301, 302, 303, 307, 308):
                url = str(response.url.join(response.headers["location"]))
                continue
            if "name='ticket'" in response.text:  # the demo's Approve page
                ticket = response.text.split("name='ticket' value='")[1].split("'")[0]
                posted = client.post(str(response.url.join("approve")),
                                     data={"ticket": ticket})
                url = str(posted.url.join(posted.headers["location"]))
                continue
            raise AssertionError(f"{url} answered {response.status_code}")
    raise AssertionError(f"more than {limit} redirects from {url}")


async def afollow(url: str, *, until: str) -> str:
    import anyio

    return await anyio.to_thread.run_sync(lambda: follow(url, until=until))


class Storage:
    tokens: Any = None
    client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def provider(url: str, authorize: Authorizer, redirect_uri: str, timeout: float = 60.0) -> Any:
    """The SDK's provider calling ``authorize`` for the person's step (the core's job)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    seen: dict[str, str] = {}

    async def redirect_handler(authorization_url: str) -> None:
        seen["url"] = authorization_url

    async def callback_handler() -> AuthorizationCodeResult:
        back = await authorize(seen["url"], redirect_uri, timeout)
        fields = {k: v[0] for k, v in parse_qs(urlsplit(back).query).items()}
        if "error" in fields:
            raise RuntimeError(f"authorization failed: {fields['error']}")
        return AuthorizationCodeResult(code=fields["code"], state=fields.get("state"),
                                       iss=fields.get("iss"))

    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(client_name="toolbench-test",
                                            redirect_uris=[redirect_uri],  # type: ignore[list-item]
                                            grant_types=["authorization_code", "refresh_token"]),
        storage=Storage(), redirect_handler=redirect_handler, callback_handler=callback_handler)


@contextlib.asynccontextmanager
async def signed_in_client(url: str, authorize: Authorizer, redirect_uri: str,
                           timeout: float = 60.0) -> AsyncIterator[Any]:
    """An ``mcp.Client`` to the protected server, signing in through ``authorize``."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(auth=provider(url, authorize, redirect_uri, timeout),
                                  timeout=30) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        yield client
