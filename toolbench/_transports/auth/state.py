"""Signing in to a remote MCP server: the ``auth=`` option, built only on the SDK's providers.

``connect(name, url, auth=...)`` takes ``"oauth"`` / ``OAuth`` (the authorization-code flow
with PKCE: ``mcp.client.auth.OAuthClientProvider``), ``ClientCredentials``
(machine to machine: ``ClientCredentialsOAuthProvider`` or ``PrivateKeyJWTOAuthProvider``), or
any ``httpx2.Auth``, passed through (the values: :mod:`toolbench._transports.auth.options`).
The SDK does the protocol (discovery, registration or CIMD, scopes and step-up, PKCE,
``resource``, ``iss``, refresh); :class:`AuthState` is one connection's sign-in: its provider
and store, the ``auth`` column, and the errors of what failed. The flow as it runs (the
person's step, what an authorization server may not do) is
:mod:`toolbench._transports.auth.flow`.

- **The redirect URI.** ``OAuth(redirect_uri=...)``, else a loopback
  ``http://127.0.0.1:<port>/callback``. RFC 8252 §7.3 lets an authorization server accept any
  port for a loopback redirect, but the SDK's own server (``mcp.server.auth``) compares redirect
  URIs exactly. So the port is chosen once, when the client registers, and kept with the stored
  registration (one per issuer and resource): every later sign-in uses the same port.
- **Failures.** What stops a flow is answered locally (no request leaves) and the call or
  connect fails as ``Unreachable``, naming the server, the issuer and the reason; a 401/403 from
  the server itself is ``Refused``; neither is ever ``TimedOut``.
- **Secrets.** Tokens, client secrets, private keys and codes go into the connection's
  ``Redactor`` the moment they are known; reprs show none of them.
"""


from __future__ import annotations

import contextlib
import json
import logging
import math
import socket
import time
import warnings
from collections.abc import Callable
from typing import Any, Literal

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.utils import union_scopes
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from toolbench._core import html as _html
from toolbench._core.errors import Refused, ToolError, Unreachable
from toolbench._core.ids import ToolId
from toolbench._transports.auth.flow import (
    LOCAL_ANSWER,
    PERSON,
    UNDER_WAY,
    Guarded,
    PersonStep,
)
from toolbench._transports.auth.flow import LocalAnswers as LocalAnswers
from toolbench._transports.auth.flow import paused as paused
from toolbench._transports.auth.flow import register_authorizer as register_authorizer
from toolbench._transports.auth.options import AuthOption as AuthOption
from toolbench._transports.auth.options import ClientCredentials as ClientCredentials
from toolbench._transports.auth.options import OAuth as OAuth
from toolbench._transports.auth.options import auth_from_config as auth_from_config
from toolbench._transports.auth.options import check_auth as check_auth
from toolbench._transports.auth.signin import SignInOutcome
from toolbench._transports.auth.tokens import (
    FileStore,
    MemoryStore,
    Place,
    Storage,
    TokenStoreError,
)

logger = logging.getLogger(__name__)

AuthKind = Literal["none", "headers", "oauth", "client_credentials", "custom"]
HANDSHAKE = frozenset({"initialize", "server/discover", "tools/list"})
"""What a connect sends (within ``connect_timeout``): a held one of these explains a connect."""
MAX_REJECTIONS = 64
"""How many HTTP 401/403 answers a connection remembers (for the error of their request)."""
def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _StoredExpiry:
    """Mixin: a token read back from the store expires when the store says (the SDK's
    ``_initialize`` loads it without an expiry, so it would never refresh one)."""

    context: Any

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]
        tokens = self.context.current_tokens
        if tokens is not None and tokens.expires_in is not None:
            self.context.update_token_expiry(tokens)


class _OAuthProvider(_StoredExpiry, OAuthClientProvider):
    """Asks for ``OAuth(scopes=...)`` too: the SDK asks only for the scope the server's
    challenge or metadata names, which replaces the client's own."""

    wanted: str | None = None

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        if self.wanted:
            metadata = self.context.client_metadata
            metadata.scope = union_scopes(self.wanted, metadata.scope)
        return await super()._perform_authorization_code_grant()


class _SecretProvider(_StoredExpiry, ClientCredentialsOAuthProvider):
    pass


class _JWTProvider(_StoredExpiry, PrivateKeyJWTOAuthProvider):
    pass


class AuthState:
    """One connection's sign-in: the provider, its store, what failed, and what to show.

    Built once per ``McpClient`` so tokens survive reconnects. ``hide(values)`` is the
    connection's redactor's ``add``; ``pause`` stops the connect clock while a person signs in.
    """

    def __init__(self, server: str, url: str, option: AuthOption | None, *,
                 has_headers: bool, hide: Callable[[list[str]], None]) -> None:
        self.server = server
        self.url = url
        self.option = option
        self._hide = hide
        self.kind: AuthKind = _kind(option, has_headers)
        self.pause: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext
        self._provider: httpx2.Auth | None = None
        self.storage: Storage | None = None
        self.signing_in = False
        self.asking: anyio.CancelScope | None = None  # the person's step, while it runs
        self.closing = False  # stop() ran: a person is not asked (until resume())
        self.outcome: SignInOutcome | None = None  # a redirect came; tokens not yet
        self.failure: str | None = None  # why the last sign-in stopped (until reported)
        self.signins = 0
        """Tokens received so far: a ``private`` cached answer is served under the same
        count only (``toolbench._transports.mcp.methods.hints``), never a token itself."""
        self._rejections: dict[str, tuple[str, int, str]] = {}  # request id -> method, status, why
        # request id -> (method, what it waits for) while its sign-in holds it back; left
        # behind when the request is given up (a timeout), for its error to say why
        self._held: dict[str, tuple[str, str]] = {}
        if isinstance(option, ClientCredentials):
            hide([v for v in (option.client_secret, option.private_key) if v])
        elif isinstance(option, OAuth) and option.client_secret:
            hide([option.client_secret])

    # -- the provider -----------------------------------------------------------------------
    def http_auth(self) -> httpx2.Auth | None:
        """The ``httpx2.Auth`` for this connection's HTTP client (made once)."""
        if self.option is None:
            return None
        if self._provider is None:
            self._provider = Guarded(self._build(), self)
        return self._provider

    def _place(self, store: str | None) -> Place:
        if store == "memory":
            return MemoryStore()
        return FileStore(store)

    def _build(self) -> httpx2.Auth:
        option = self.option
        if isinstance(option, httpx2.Auth):
            return option
        if isinstance(option, ClientCredentials):
            self.storage = Storage(self.url, MemoryStore(), on_tokens=self._tokens_stored)
            scope = " ".join(option.scopes) if option.scopes else None
            with warnings.catch_warnings():  # issuer=None is deprecated in the SDK, not wrong
                warnings.simplefilter("ignore")
                if option.private_key is not None:
                    assertion = SignedJWTParameters(
                        issuer=option.client_id, subject=option.client_id,
                        signing_algorithm=option.signing_algorithm,
                        signing_key=option.private_key).create_assertion_provider()
                    return _JWTProvider(self.url, self.storage, option.client_id, assertion,
                                        scope=scope, issuer=option.issuer)
                assert option.client_secret is not None
                return _SecretProvider(self.url, self.storage, option.client_id,
                                       option.client_secret, scope=scope, issuer=option.issuer)
        assert isinstance(option, OAuth)
        place = self._place(option.store)
        probe = Storage(self.url, place)
        redirect = (option.redirect_uri or probe.redirect_uri()
                    or f"http://127.0.0.1:{_free_loopback_port()}/callback")
        fixed = None
        if option.client_id is not None:
            fixed = OAuthClientInformationFull(
                client_id=option.client_id, client_secret=option.client_secret,
                redirect_uris=[AnyUrl(redirect)],
                token_endpoint_auth_method="client_secret_basic" if option.client_secret
                else "none")
        self.storage = Storage(self.url, place, fixed_client=fixed, on_tokens=self._tokens_stored)
        metadata = OAuthClientMetadata(
            client_name=option.client_name, redirect_uris=[AnyUrl(redirect)],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            scope=" ".join(option.scopes) if option.scopes else None,
            token_endpoint_auth_method="client_secret_basic" if option.client_secret else "none",
        )
        flow = PersonStep(self, option, redirect)
        provider = _OAuthProvider(self.url, metadata, self.storage,
                                  redirect_handler=flow.redirect, callback_handler=flow.callback,
                                  client_metadata_url=option.client_metadata_url)
        provider.wanted = metadata.scope
        flow.provider = provider
        return provider

    def stop(self) -> None:
        """End a person's step under way at once (the connection is closing): its request
        is answered locally and fails, instead of holding the close until it times out; and
        ask nobody again until :meth:`resume` (closing sends a last request, which a revoked
        token would answer with 401, starting a sign-in nobody is waiting for)."""
        self.closing = True
        if self.asking is not None:
            self.asking.cancel()

    def resume(self) -> None:
        """A new connect may ask a person again."""
        self.closing = False

    def hide(self, values: list[str]) -> None:
        """Keep these values (a code, a token) out of every message from now on."""
        self._hide(values)

    def _tokens_stored(self, tokens: OAuthToken) -> None:
        self.signins += 1
        self.hide([v for v in (tokens.access_token, tokens.refresh_token) if v])

    def access_token(self) -> str | None:
        """The access token held now (never the refresh token), or None: what
        ``share_credentials=True`` sends Dask workers. Shown nowhere."""
        record = self.storage.current() if self.storage is not None else None
        token = (record.tokens or {}).get("access_token") if record is not None else None
        return token if isinstance(token, str) and token else None

    # -- what the table shows ---------------------------------------------------------------
    @property
    def issuer(self) -> str | None:
        provider = self._inner()
        context = getattr(provider, "context", None)
        metadata = getattr(context, "oauth_metadata", None)
        if metadata is not None:
            return str(metadata.issuer)
        found = getattr(context, "auth_server_url", None)
        if found:
            return str(found)
        return self.storage.issuer if self.storage is not None else None

    def _inner(self) -> httpx2.Auth | None:
        return self._provider.inner if isinstance(self._provider, Guarded) else None

    def describe(self) -> str:
        """The ``auth`` column: the kind and its state, never a token."""
        if self.kind in ("none", "headers", "custom"):
            return self.kind
        if self.signing_in:
            return f"{self.kind} (signing in)"
        expiry: float | None = None
        signed_in = False
        context = getattr(self._inner(), "context", None)
        tokens = getattr(context, "current_tokens", None)
        if tokens is not None:
            signed_in, expiry = True, getattr(context, "token_expiry_time", None)
        elif self.storage is not None:
            with contextlib.suppress(TokenStoreError, OSError):
                signed_in, expiry = self.storage.has_tokens, self.storage.expires_at
        if not signed_in:
            return f"{self.kind} (needs sign-in)"
        if expiry is not None and math.isfinite(expiry):
            left = expiry - time.time()
            if left <= 0:
                return f"{self.kind} (expired; refreshes on the next call)"
            if left < 3600 * 24:
                return f"{self.kind} (expires in {max(1, round(left / 60))} min)"
        return f"{self.kind} (signed in)"

    # -- failures ---------------------------------------------------------------------------
    async def on_response(self, response: httpx2.Response) -> None:
        """The HTTP client's response hook (see :meth:`note_response`)."""
        self.note_response(response)

    def note_response(self, response: httpx2.Response) -> None:
        """An HTTP response hook: remember which JSON-RPC request got a 401 or 403."""
        if response.status_code not in (401, 403):
            return
        request = response.request
        if request.extensions.get(LOCAL_ANSWER):
            return
        key = _rpc_id(request)
        if key is None:
            return  # an authorization server's answer, not the MCP server's
        header = response.headers.get("www-authenticate", "")
        why = _challenge(header)
        if len(self._rejections) >= MAX_REJECTIONS:
            self._rejections.pop(next(iter(self._rejections)))
        self._rejections[key[0]] = (key[1], response.status_code, why)

    def hold(self, request: httpx2.Request, what: str | None) -> None:
        """Note what ``request`` (a JSON-RPC one) waits for before it is sent; ``None``: sent."""
        key = _rpc_id(request)
        if key is None:
            return
        if what is None:
            self._held.pop(key[0], None)
            return
        self._held.pop(key[0], None)
        if len(self._held) >= MAX_REJECTIONS:
            self._held.pop(next(iter(self._held)))
        self._held[key[0]] = (key[1], what)

    def _waited(self, what: str) -> str:
        if what == PERSON and self.signing_in:
            return "nobody finished signing in before it gave up"
        return f"it was still waiting for {what}"

    def _behind(self, what: str) -> str:
        """``_waited``, and for a request queued behind another one's sign-in (a listing in
        the background may have started it), what that sign-in itself was waiting for."""
        if what != UNDER_WAY:
            return self._waited(what)
        owner = next((note for _, note in reversed(self._held.values()) if note != UNDER_WAY),
                     None)
        if owner is None:
            return self._waited(what)
        return f"it was queued behind {UNDER_WAY}, and {self._waited(owner)}"

    def stalled(self) -> str | None:
        """Why a request given up on (a handshake past ``connect_timeout``) was held back by
        its sign-in, if it was; consumed once."""
        held = self._pop(self._held, None, None, HANDSHAKE)
        return None if held is None else self._waited(held[1])

    @staticmethod
    def _pop(table: dict[str, Any], request_id: str | None, method: str | None,
             methods: frozenset[str] | None = None) -> Any:
        """The entry of ``request_id``; without one, the latest of ``method`` (or of any of
        ``methods``, or of any method at all)."""
        if request_id is not None:
            return table.pop(request_id, None)
        for key in reversed(list(table)):
            found = table[key][0]
            if (method is None or found == method) and (methods is None or found in methods):
                return table.pop(key)
        return None

    def explain(self, request_id: str | None, method: str | None, tool: ToolId | None,
                action: str) -> ToolError | None:
        """The auth error behind a failed request, if there is one (consumed once)."""
        where = f"server {self.server!r}"
        issuer = self.issuer
        at = f" (authorization server {issuer})" if issuer else ""
        if self.failure is not None:
            reason, self.failure = self.failure, None
            return Unreachable(f"{where}: sign-in failed{at}: {reason}; the {action} was not "
                               "sent", tool=tool)
        held = self._pop(self._held, request_id, method, HANDSHAKE if action == "handshake"
                         else None)
        if held is not None:
            return Unreachable(f"{where}: the {action} was not sent: {self._behind(held[1])}"
                               f"{at}", tool=tool)
        found = None
        if request_id is not None:
            found = self._rejections.pop(request_id, None)
        else:  # a listing without a ticket: the latest rejection of that method
            found = self._pop(self._rejections, None, method)
        if found is None:
            return None
        _, status, why = found
        hint = {"none": "; it needs a sign-in: connect it with auth='oauth'",
                "headers": "; the credentials in its headers were not accepted"}.get(self.kind, "")
        return Refused(f"{where} refused the {action} with HTTP {status}{at}"
                       f"{': ' + why if why else ''}{hint}", tool=tool)


def _rpc_id(request: httpx2.Request) -> tuple[str, str] | None:
    """``(id, method)`` of a JSON-RPC request to the MCP server; None for anything else."""
    try:
        body = json.loads(request.content) if request.method == "POST" else None
    except (ValueError, httpx2.RequestNotRead):
        return None
    if not isinstance(body, dict) or "id" not in body or "method" not in body:
        return None
    return str(body["id"]), str(body["method"])


def _challenge(header: str) -> str:
    """``error`` and ``error_description`` of a ``WWW-Authenticate`` challenge, shortened."""
    found = {}
    for key in ("error", "error_description", "scope"):
        marker = f'{key}="'
        start = header.find(marker)
        if start >= 0:
            end = header.find('"', start + len(marker))
            if end > start:
                found[key] = header[start + len(marker):end]
    text = found.get("error", "")
    if "error_description" in found:
        text += f" ({found['error_description']})"
    if "scope" in found and found.get("error") == "insufficient_scope":
        text += f"; scope needed: {found['scope']}"
    return _html.shorten(text, 200)


def _kind(option: AuthOption | None, has_headers: bool) -> AuthKind:
    if option is None:
        return "headers" if has_headers else "none"
    if isinstance(option, ClientCredentials | ClientCredentialsOAuthProvider
                  | PrivateKeyJWTOAuthProvider):
        return "client_credentials"
    if isinstance(option, OAuth | OAuthClientProvider):
        return "oauth"
    return "custom"


