"""Demo MCP server ``protected``: an authorization server and an OAuth-protected MCP server.

Run it with ``python -m toolbench.demo.protected --port N`` (``--port 0`` picks a free port;
the first line on stdout is ``READY http://127.0.0.1:<port>/mcp``). Everything is offline and
in one process, on 127.0.0.1, built from the SDK's server-side auth (``mcp.server.auth``):

- the authorization server: metadata (RFC 8414), dynamic client registration, the
  authorization endpoint with PKCE, the token endpoint (authorization code and refresh),
  revocation, and the ``iss`` parameter on its redirects (RFC 9207);
- the protected resource: its metadata (RFC 9728) and the streamable HTTP MCP endpoint
  ``/mcp``, which answers 401 with ``WWW-Authenticate`` until a valid token comes.

There is no identity provider: with ``--approve auto`` (the default) the authorization page
signs in at once, as "demo-user"; with ``--approve button`` it shows a page with an
**Approve** button first, as a real server's consent page would. Tokens live in memory and
last ``--token-lifetime`` seconds (default 3600); refresh tokens rotate.

Tools: ``whoami`` (the signed-in client and its scopes) and ``echo``.
"""

from __future__ import annotations

import argparse
import html
import secrets
import socket
import sys
import time
from collections.abc import Sequence
from typing import Any

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
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

NAME = "protected"
SCOPE = "mcp"
USER = "demo-user"
CODE_LIFETIME_S = 300
MAX_PENDING = 100
"""Authorization requests waiting for the Approve button; older ones are dropped."""


class Principal(BaseModel):
    """Who a call runs as: the registered client and the scopes its token carries."""

    client_id: str
    user: str
    scopes: list[str]


class DemoProvider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken,
                                                    AccessToken]):
    """An in-memory authorization server that signs "demo-user" in without asking who."""

    def __init__(self, issuer: str, *, approve: str = "auto", token_lifetime: int = 3600
                 ) -> None:
        self.issuer = issuer
        self.approve = approve
        self.token_lifetime = token_lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}

    # -- clients --------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    # -- authorization --------------------------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        assert client.client_id is not None
        if self.approve == "auto":
            return self.approved(client.client_id, params)
        ticket = secrets.token_urlsafe(16)
        while len(self.pending) >= MAX_PENDING:
            self.pending.pop(next(iter(self.pending)))
        self.pending[ticket] = (client.client_id, params)
        return f"{self.issuer}/approve?ticket={ticket}"

    def approved(self, client_id: str, params: AuthorizationParams) -> str:
        """The redirect back to the client, with a fresh code (and ``iss``)."""
        code = AuthorizationCode(
            code=secrets.token_urlsafe(24), client_id=client_id,
            scopes=params.scopes or [SCOPE], expires_at=time.time() + CODE_LIFETIME_S,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource, subject=USER)
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code,
                                      state=params.state, iss=self.issuer)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._mint(authorization_code.client_id, authorization_code.scopes,
                          authorization_code.resource)

    def _mint(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        expires = int(time.time()) + self.token_lifetime
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=expires, resource=resource, subject=USER)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource, subject=USER)
        return OAuthToken(access_token=access, token_type="Bearer",
                          expires_in=self.token_lifetime, scope=" ".join(scopes),
                          refresh_token=refresh)

    # -- tokens ---------------------------------------------------------------------------
    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is not None and found.expires_at is not None and found.expires_at < time.time():
            self.access.pop(token, None)
            return None
        return found

    async def load_refresh_token(self, client: OAuthClientInformationFull,
                                 refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken, scopes: list[str]
                                     ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # refresh tokens rotate
        return self._mint(refresh_token.client_id, scopes or refresh_token.scopes,
                          refresh_token.resource)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def _approve_page(ticket: str, client: str) -> str:
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Approve sign-in</title>"
            "</head><body style='font-family:sans-serif;margin:3em'>"
            "<h2>toolbench demo: approve sign-in</h2>"
            f"<p>The application <b>{html.escape(client)}</b> asks to use the "
            f"<code>protected</code> demo server as <b>{USER}</b>.</p>"
            "<form method='post' action='approve'>"
            f"<input type='hidden' name='ticket' value='{html.escape(ticket, quote=True)}'>"
            "<button type='submit' id='approve'>Approve</button></form></body></html>")


def build_server(base_url: str, *, approve: str = "auto", token_lifetime: int = 3600
                 ) -> tuple[MCPServer, DemoProvider]:
    """The protected MCP server and its authorization server, both at ``base_url``."""
    provider = DemoProvider(base_url, approve=approve, token_lifetime=token_lifetime)
    server = MCPServer(
        NAME,
        instructions="An offline demo server behind OAuth: sign in (no password: the demo "
                     "approves every sign-in), then call `whoami` or `echo`.",
        auth=AuthSettings(
            issuer_url=base_url, resource_server_url=f"{base_url}/mcp",  # type: ignore[arg-type]
            required_scopes=[SCOPE], validate_token_resource=False,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]),
            revocation_options=RevocationOptions(enabled=True)),
        auth_server_provider=provider,
        log_level="WARNING",  # a demo: its INFO lines landed in a notebook's cells as stderr
    )

    @server.tool(description="Who this call runs as: the registered client, the user, scopes.")
    def whoami() -> Principal:
        token = get_access_token()
        assert token is not None  # the bearer middleware let the request in
        return Principal(client_id=token.client_id, user=token.subject or USER,
                         scopes=token.scopes)

    @server.tool(description="Returns its text, to show a call through the sign-in.")
    def echo(text: str) -> str:
        return text

    @server.custom_route("/approve", methods=["GET", "POST"])  # type: ignore[untyped-decorator]
    async def approve_page(request: Request) -> Response:
        if request.method == "GET":
            ticket = request.query_params.get("ticket", "")
            entry = provider.pending.get(ticket)
            if entry is None:
                return HTMLResponse("<p>This sign-in request is unknown or expired.</p>", 400)
            client = provider.clients.get(entry[0])
            name = (client.client_name if client is not None else None) or entry[0]
            return HTMLResponse(_approve_page(ticket, name[:100]))
        form = await request.form()
        entry = provider.pending.pop(str(form.get("ticket", "")), None)
        if entry is None:
            return HTMLResponse("<p>This sign-in request is unknown or expired.</p>", 400)
        return RedirectResponse(provider.approved(*entry), status_code=302)

    return server, provider


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def serve(port: int = 0, *, approve: str = "auto", token_lifetime: int = 3600,
                ready: Any = None) -> None:
    """Serve on 127.0.0.1:``port`` until cancelled; ``ready(url)`` is told the MCP URL."""
    import uvicorn

    sock = _bind(port)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server, _provider = build_server(base, approve=approve, token_lifetime=token_lifetime)
    app = server.streamable_http_app(transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=[base.removeprefix("http://")],
        allowed_origins=[base]))
    config = uvicorn.Config(app, log_level="warning", lifespan="on", log_config=None)

    class Told(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and ready is not None:
                ready(f"{base}/mcp")

    web = Told(config)
    await web.serve(sockets=[sock])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m toolbench.demo.protected",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--approve", choices=("auto", "button"), default="auto",
                        help="sign in at once (auto) or after an Approve button (button)")
    parser.add_argument("--token-lifetime", type=int, default=3600, metavar="SECONDS")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port}: a port is 0..65535")
    if args.token_lifetime < 1:
        parser.error(f"--token-lifetime {args.token_lifetime}: at least 1 second")
    import anyio

    def ready(url: str) -> None:
        print(f"READY {url}", flush=True)

    try:
        anyio.run(lambda: serve(args.port, approve=args.approve,
                                token_lifetime=args.token_lifetime, ready=ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        sys.exit(f"protected demo: cannot serve on 127.0.0.1:{args.port}: {exc}")


if __name__ == "__main__":
    main()
