"""A real OAuth-protected MCP server, built from the SDK's server-side auth (``mcp.server.auth``).

One Starlette app on 127.0.0.1 (uvicorn, in a thread of the test process): the authorization
server (metadata, dynamic registration, ``/authorize``, ``/token`` with refresh, revocation)
and the protected ``/mcp`` resource with its protected-resource metadata. The "person" is the
test: ``/authorize`` redirects at once with a code (consent granted), so a test's ``authorize``
hook fetches the URL and returns the ``Location``.

Knobs (attributes of :class:`Provider`): ``expires_in`` of new access tokens; ``revoke_all()``;
``write`` needs scope ``write`` (a 403 ``insufficient_scope`` until a step-up grants it);
every grant is counted (``authorized``, ``refreshed``) so tests can tell a refresh from a new
sign-in.

**A hostile authorization server.** ``provider.hostile[path] = (how, value)`` makes one path of
the authorization server misbehave (:class:`Hostile`, outermost): ``("hang", None)`` never
answers (until the server stops), ``("slow", seconds)`` answers late, ``("redirect", url)``
sends a 307 to another host, ``("html", None)`` answers 200 with an HTML page instead of JSON,
``("patch", {...})`` answers the real JSON with these fields replaced (a metadata document
with ``file:`` or ``javascript:`` endpoints). Every hostile answer is counted in
``provider.hits``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.types import ASGIApp, Receive, Scope, Send

SCOPES = ["mcp", "write"]


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """An in-memory authorization server that consents at once."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.expires_in = 3600
        self.token_padding = 0  # a hostile server's 1 MB token: set to 1_000_000
        self.authorized = 0
        self.refreshed = 0
        self.issued: list[str] = []  # every token and code handed out (for the secrets test)
        self.hostile: dict[str, tuple[str, Any]] = {}  # path -> (how, value): see Hostile
        self.hits: list[str] = []  # the paths that misbehaved, in order
        self.stopping = False  # the server is shutting down: a hanging answer ends

    def _mint(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = f"at-{secrets.token_hex(16)}" + "x" * self.token_padding
        refresh = f"rt-{secrets.token_hex(16)}"
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.expires_in,
                                          resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        self.issued += [access, refresh]
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.expires_in,
                          refresh_token=refresh, scope=" ".join(scopes))

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        # RFC 7591 lets a server widen what it registers: every scope, so a step-up can ask
        # for "write" later (the SDK's server checks requested scopes against the registration).
        client_info.scope = " ".join(SCOPES)
        self.clients[client_info.client_id] = client_info
        if client_info.client_secret:
            self.issued.append(client_info.client_secret)

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        assert client.client_id is not None
        code = AuthorizationCode(
            code=f"code-{secrets.token_hex(16)}", client_id=client.client_id,
            scopes=params.scopes or ["mcp"], expires_at=time.time() + 300,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource)
        self.codes[code.code] = code
        self.issued.append(code.code)
        return construct_redirect_uri(str(params.redirect_uri), code=code.code,
                                      state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.authorized += 1
        return self._mint(authorization_code.client_id, authorization_code.scopes,
                          authorization_code.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.refreshed += 1
        return self._mint(refresh_token.client_id, scopes or refresh_token.scopes,
                          refresh_token.resource)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def revoke_all(self) -> None:
        """The server forgets every token: the next request is a 401."""
        self.access.clear()
        self.refresh.clear()


class NeedsWrite:
    """``tools/call`` of ``write`` without scope ``write`` is a 403 ``insufficient_scope``
    (as a resource server asks for a step-up); everything else passes to the app."""

    def __init__(self, app: ASGIApp, provider: Provider, base: str) -> None:
        self.app, self.provider, self.base = app, provider, base

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        headers = dict(scope["headers"])
        token = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
        granted = self.provider.access.get(token)
        try:
            msg = json.loads(body)
        except ValueError:
            msg = {}
        wants_write = (isinstance(msg, dict) and msg.get("method") == "tools/call"
                       and (msg.get("params") or {}).get("name") == "write")
        if wants_write and granted is not None and "write" not in granted.scopes:
            challenge = (f'Bearer error="insufficient_scope", scope="mcp write", '
                         f'resource_metadata="{self.base}/.well-known/oauth-protected-resource/mcp"')
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"www-authenticate", challenge.encode()),
                                    (b"content-type", b"application/json")]})
            await send({"type": "http.response.body",
                        "body": b'{"error": "insufficient_scope"}'})
            return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class Hostile:
    """The authorization server misbehaving on the paths ``provider.hostile`` names."""

    def __init__(self, app: ASGIApp, provider: Provider) -> None:
        self.app, self.provider = app, provider

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        rule = self.provider.hostile.get(scope.get("path", "")) if scope["type"] == "http" \
            else None
        if rule is None:
            await self.app(scope, receive, send)
            return
        how, value = rule
        self.provider.hits.append(scope["path"])
        if how == "hang":  # bounded only by the server's own end, so a test cannot leak it
            deadline = time.monotonic() + 300
            while not self.provider.stopping and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            return
        if how == "slow":
            await anyio.sleep(float(value))
            await self.app(scope, receive, send)
            return
        if how == "redirect":
            await _answer(send, 307, b"", [(b"location", str(value).encode())])
            return
        if how == "html":
            page = b"<!doctype html><html><body><h1>Welcome!</h1><p>Sign in</p></body></html>"
            await _answer(send, 200, page, [(b"content-type", b"text/html; charset=utf-8")])
            return
        if how == "patch":
            start: dict[str, Any] = {}
            chunks: list[bytes] = []

            async def keep(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    start.update(message)
                else:
                    chunks.append(message.get("body", b""))

            await self.app(scope, receive, keep)
            document = json.loads(b"".join(chunks))
            document.update(value)
            await _answer(send, int(start.get("status", 200)), json.dumps(document).encode(),
                          [(b"content-type", b"application/json")])
            return
        raise ValueError(f"unknown hostile behaviour {how!r}")


async def _answer(send: Send, status: int, body: bytes,
                  headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve() -> Iterator[tuple[str, Provider]]:
    """Run the server on a free loopback port in a thread: yields its MCP URL and provider."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    provider = Provider()
    server = MCPServer("protected", auth=AuthSettings(
        issuer_url=AnyHttpUrl(base), resource_server_url=AnyHttpUrl(f"{base}/mcp"),
        required_scopes=["mcp"],
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=SCOPES, default_scopes=["mcp"]),
        revocation_options=RevocationOptions(enabled=True), validate_token_resource=True,
    ), auth_server_provider=provider)

    @server.tool()
    def whoami() -> str:
        """The signed-in client and its scopes."""
        token = get_access_token()
        return f"{token.client_id if token else None} {sorted(token.scopes) if token else []}"

    @server.tool()
    def write(text: str) -> str:
        """Needs scope write."""
        return f"wrote {text}"

    app = server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    config = uvicorn.Config(Hostile(NeedsWrite(app, provider, base), provider),
                            host="127.0.0.1", port=port, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=5)
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, daemon=True, name="oauth-test-server")
    thread.start()
    deadline = time.monotonic() + 20
    while not runner.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the OAuth test server did not start")
        time.sleep(0.05)
    try:
        yield f"{base}/mcp", provider
    finally:
        provider.stopping = True
        runner.should_exit = True
        thread.join(10)
