"""Signing in to a remote MCP server: the ``auth=`` option, built only on the SDK's providers.

``connect(name, url, auth=...)`` takes ``"oauth"`` / :class:`OAuth` (the authorization-code flow
with PKCE: ``mcp.client.auth.OAuthClientProvider``), :class:`ClientCredentials`
(machine to machine: ``ClientCredentialsOAuthProvider`` or ``PrivateKeyJWTOAuthProvider``), or
any ``httpx2.Auth``, passed through. The SDK does the protocol (discovery, registration or CIMD,
scopes and step-up, PKCE, ``resource``, ``iss``, refresh); this module adds what a notebook needs:

- **The person.** The one step that needs a person is ``authorize``: given the authorization
  URL, return the URL the browser came back to. ``OAuth(authorize=...)`` (sync or async), else
  the process-wide default that higher layers register with :func:`register_authorizer` (the
  notebook's sign-in card, the terminal flow). ``OAuth(timeout=...)`` bounds the wait; running
  out is ``Unreachable``. The returned URL's ``state`` must match the one sent (checked here,
  before the SDK checks it again); ``iss`` goes to the SDK, which checks it.
- **The redirect URI.** ``OAuth(redirect_uri=...)``, else a loopback
  ``http://127.0.0.1:<port>/callback``. RFC 8252 §7.3 lets an authorization server accept any
  port for a loopback redirect, but the SDK's own server (``mcp.server.auth``) compares redirect
  URIs exactly. So the port is chosen once, when the client registers, and kept with the stored
  registration (one per issuer and resource): every later sign-in uses the same port.
- **What an authorization server may not do.** An authorization or token endpoint that is not
  https (loopback aside), a token over ``MAX_TOKEN_CHARS``, a state that does not match: each
  stops the flow with a clear error. Whatever stops the flow is answered locally (no request
  leaves) and the call or connect fails as ``Unreachable``, naming the server, the issuer and
  the reason; a 401/403 from the server itself is ``Refused``; neither is ever ``TimedOut``.
- **Secrets.** Tokens, client secrets, private keys and codes go into the connection's
  ``Redactor`` the moment they are known; reprs show none of them.
"""

from __future__ import annotations

import contextlib
import inspect
import ipaddress
import json
import logging
import math
import socket
import time
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

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
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from toolbench._core import html as _html
from toolbench._core.checks import seconds
from toolbench._core.errors import Refused, ToolError, Unreachable
from toolbench._core.ids import ToolId
from toolbench._transports.signin import OUTCOME, SignInOutcome
from toolbench._transports.token_store import (
    FileStore,
    MemoryStore,
    Place,
    Storage,
    TokenStoreError,
)

logger = logging.getLogger(__name__)

AuthKind = Literal["none", "headers", "oauth", "client_credentials", "custom"]
Authorize = Callable[[str], "str | Awaitable[str]"]
DefaultAuthorizer = Callable[[str, str, float], Awaitable[str]]
"""``async (authorization_url, redirect_uri, timeout) -> the URL the browser came back to``."""

AS_REQUEST = "toolbench.authorization_server"
"""A request extension: an authorization server's request (bounded; a transport failure is
answered locally, the reason in the response's extension of the same name)."""
LOCAL_ANSWER = "toolbench.local_answer"
"""A request extension: the transport answers it itself (a refused sign-in), sending nothing."""
MAX_REJECTIONS = 64
"""How many HTTP 401/403 answers a connection remembers (for the error of their request)."""
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
AS_TIMEOUT_S = 20.0
"""How long one request to an authorization server may take (the flow then stops)."""
AS_TIMEOUT = httpx2.Timeout(AS_TIMEOUT_S)
PERSON = "the sign-in (the authorization server, or the person's step)"

_authorizer: DefaultAuthorizer | None = None


def register_authorizer(fn: DefaultAuthorizer | None) -> DefaultAuthorizer | None:
    """Set the process-wide ``authorize`` step used when ``OAuth(authorize=None)``.

    ``fn`` is ``async (authorization_url, redirect_uri, timeout) -> str``: it shows the URL to
    a person (a notebook card, a terminal) and returns the address the browser came back to
    (with ``code``, ``state`` and ``iss``), within ``timeout`` seconds. ``None`` removes it.
    Returns the one it replaces.
    """
    global _authorizer
    if fn is not None and not callable(fn):
        raise TypeError(f"an authorizer is an async function, not {fn!r}")
    previous, _authorizer = _authorizer, fn
    return previous


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_endpoint(url: str, what: str) -> None:
    """An endpoint a secret is sent to or a person is sent to: https, or http on loopback."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise SignInError(f"the {what} {_html.shorten(url, 80)!r} is not a URL") from None
    scheme = parts.scheme.lower()
    if scheme == "https" or (scheme == "http" and is_loopback(parts.hostname)):
        return
    raise SignInError(f"the {what} {_html.shorten(url.split('?')[0], 120)!r} is not https "
                      "(plain http is accepted only on a loopback address); sign-in stopped")


async def check_metadata(response: httpx2.Response) -> None:
    """A discovery document (``/.well-known/...``) that names a URL other than http(s) for an
    endpoint or an issuer stops the flow. (What is not JSON at all the SDK treats as not found,
    and goes on to the next place; an endpoint that is http off loopback is refused when used.)
    """
    if response.status_code != 200 or "/.well-known/" not in response.request.url.path:
        return
    try:
        document = json.loads(await response.aread())
    except ValueError:
        return
    if not isinstance(document, dict):
        return
    for name, value in document.items():
        values = value if name == "authorization_servers" and isinstance(value, list) else [value]
        if not (name == "issuer" or name == "resource" or name == "authorization_servers"
                or name.endswith(("_endpoint", "_uri"))):
            continue
        for one in values:
            scheme = urlsplit(one).scheme.lower() if isinstance(one, str) else ""
            if scheme not in ("http", "https"):
                where = _html.shorten(str(response.request.url.copy_with(query=None)), 200)
                raise SignInError(f"the metadata at {where} names {name} "
                                  f"{_html.shorten(repr(one), 120)}, which is not an http(s) "
                                  "URL; sign-in stopped")


class SignInError(Exception):
    """Why a sign-in stopped (our own checks; the SDK's ``OAuthFlowError`` is the other kind)."""


def _secret_repr(value: str | None) -> str:
    return "None" if value is None else "'***'"


@dataclass(frozen=True, repr=False)
class OAuth:
    """Sign in with the OAuth 2.1 authorization-code flow (``connect(..., auth=tb.OAuth())``).

    Args:
        scopes: scopes to ask for first (default: what the server's ``WWW-Authenticate`` or
            metadata names; a step-up adds the new scope when the server asks).
        client_id: a pre-registered client (else dynamic registration, or CIMD).
        client_secret: the pre-registered client's secret (``client_secret_basic``).
        client_metadata_url: a client ID metadata document URL (CIMD), used when the
            authorization server supports it.
        client_name: the name shown on the consent page when registering.
        redirect_uri: where the browser returns (default: a loopback
            ``http://127.0.0.1:<port>/callback``, its port kept with the registration).
        authorize: ``(authorization_url) -> returned_url``, sync or async (default: the
            notebook's sign-in card or the terminal flow).
        store: ``None`` (a file per issuer and server in the user's data folder), ``"memory"``
            (this process only), or a folder path.
        timeout: seconds to wait for the person; running out is ``Unreachable``.
    """

    scopes: tuple[str, ...] | None = None
    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    client_name: str = "toolbench"
    redirect_uri: str | None = None
    authorize: Authorize | None = field(default=None, compare=False)
    store: str | None = None
    timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.scopes is not None:
            if isinstance(self.scopes, str) or not all(
                isinstance(s, str) and s and " " not in s for s in self.scopes
            ):
                raise ValueError(f"scopes is a list of scope names without spaces, not "
                                 f"{self.scopes!r}")
            object.__setattr__(self, "scopes", tuple(self.scopes))
        for name in ("client_id", "client_secret", "client_metadata_url", "redirect_uri"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"OAuth {name} is a non-empty string or None")
        if self.client_secret is not None and self.client_id is None:
            raise ValueError("OAuth client_secret needs the client_id it belongs to")
        if not isinstance(self.client_name, str) or not self.client_name:
            raise ValueError("OAuth client_name is a non-empty string")
        if self.redirect_uri is not None:
            parts = urlsplit(self.redirect_uri)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"OAuth redirect_uri {self.redirect_uri!r} is not an http(s) URL")
            if parts.scheme == "http" and not is_loopback(parts.hostname):
                raise ValueError(f"OAuth redirect_uri {self.redirect_uri!r}: plain http only on a "
                                 "loopback address (127.0.0.1, ::1, localhost)")
        if self.authorize is not None and not callable(self.authorize):
            raise TypeError(f"OAuth authorize is a function, not {self.authorize!r}")
        if self.store is not None and not isinstance(self.store, str):
            raise TypeError("OAuth store is None, 'memory' or a folder path")
        object.__setattr__(self, "timeout", seconds(self.timeout, "OAuth timeout"))

    def __repr__(self) -> str:
        return (f"OAuth(scopes={self.scopes!r}, client_id={self.client_id!r}, "
                f"client_secret={_secret_repr(self.client_secret)}, "
                f"client_metadata_url={self.client_metadata_url!r}, "
                f"client_name={self.client_name!r}, redirect_uri={self.redirect_uri!r}, "
                f"store={self.store!r}, timeout={self.timeout!r})")


@dataclass(frozen=True, repr=False)
class ClientCredentials:
    """Machine-to-machine sign-in: the client-credentials grant.

    Args:
        client_id: the registered client.
        client_secret: its secret (``client_secret_basic``); or
        private_key: a PEM private key that signs a JWT assertion (``private_key_jwt``).
        signing_algorithm: the JWT's algorithm (with ``private_key``).
        scopes: scopes to ask for.
        issuer: the authorization server the client is registered with (the SDK then refuses
            any other); optional.
    """

    client_id: str
    client_secret: str | None = None
    private_key: str | None = None
    signing_algorithm: str = "ES256"
    scopes: tuple[str, ...] | None = None
    issuer: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.client_id, str) or not self.client_id:
            raise ValueError("ClientCredentials client_id is a non-empty string")
        if (self.client_secret is None) == (self.private_key is None):
            raise ValueError("ClientCredentials takes exactly one of client_secret and "
                             "private_key (a PEM key for private_key_jwt)")
        if self.private_key is not None and "PRIVATE KEY" not in self.private_key:
            raise ValueError("ClientCredentials private_key is a PEM private key")
        if self.scopes is not None:
            if isinstance(self.scopes, str):
                raise ValueError("scopes is a list of scope names, not one str")
            object.__setattr__(self, "scopes", tuple(self.scopes))

    def __repr__(self) -> str:
        return (f"ClientCredentials(client_id={self.client_id!r}, "
                f"client_secret={_secret_repr(self.client_secret)}, "
                f"private_key={_secret_repr(self.private_key)}, "
                f"signing_algorithm={self.signing_algorithm!r}, scopes={self.scopes!r})")


AuthOption = OAuth | ClientCredentials | httpx2.Auth


def check_auth(value: object) -> AuthOption | None:
    """``connect(auth=...)``: ``"oauth"`` becomes ``OAuth()``; anything unknown is refused."""
    if value is None or isinstance(value, OAuth | ClientCredentials | httpx2.Auth):
        return value
    if value == "oauth":
        return OAuth()
    raise ValueError(f"invalid auth {value!r}: use 'oauth', tb.OAuth(...), "
                     "tb.ClientCredentials(...) or an httpx2.Auth")


def auth_from_config(value: object) -> OAuth | ClientCredentials:
    """A config file's ``"auth"``: ``"oauth"`` or ``{"type": "oauth" | "client_credentials",
    ...fields}`` (values already ``${VAR}``-expanded). Raises ``ValueError`` naming the field."""
    if value == "oauth":
        return OAuth()
    if not isinstance(value, Mapping):
        raise ValueError("is 'oauth' or an object with \"type\"")
    fields = dict(value)
    kind = fields.pop("type", None)
    if kind == "oauth":
        allowed = {"scopes", "client_id", "client_secret", "client_metadata_url", "client_name",
                   "redirect_uri", "store", "timeout"}
        maker: type[OAuth] | type[ClientCredentials] = OAuth
    elif kind == "client_credentials":
        allowed = {"client_id", "client_secret", "private_key", "signing_algorithm", "scopes",
                   "issuer"}
        maker = ClientCredentials
    else:
        raise ValueError(f"type is 'oauth' or 'client_credentials', not {kind!r}")
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise ValueError(f"unknown field(s) {unknown} for type {kind!r}: use {sorted(allowed)}")
    try:
        return maker(**fields)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


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
        self.outcome: SignInOutcome | None = None  # a redirect came; tokens not yet
        self.failure: str | None = None  # why the last sign-in stopped (until reported)
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
            self._provider = _Guarded(self._build(), self)
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
            self.storage = Storage(self.url, MemoryStore(), on_tokens=self._tokens)
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
        self.storage = Storage(self.url, place, fixed_client=fixed, on_tokens=self._tokens)
        metadata = OAuthClientMetadata(
            client_name=option.client_name, redirect_uris=[AnyUrl(redirect)],
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            scope=" ".join(option.scopes) if option.scopes else None,
            token_endpoint_auth_method="client_secret_basic" if option.client_secret else "none",
        )
        flow = _PersonStep(self, option, redirect)
        provider = _OAuthProvider(self.url, metadata, self.storage,
                                  redirect_handler=flow.redirect, callback_handler=flow.callback,
                                  client_metadata_url=option.client_metadata_url)
        provider.wanted = metadata.scope
        flow.provider = provider
        return provider

    def _tokens(self, tokens: OAuthToken) -> None:
        self._hide([v for v in (tokens.access_token, tokens.refresh_token)
                    if v])

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
        return self._provider.inner if isinstance(self._provider, _Guarded) else None

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

    def stalled(self) -> str | None:
        """Why a request given up on (a handshake past ``connect_timeout``) was held back by
        its sign-in, if it was; consumed once."""
        held = self._pop(self._held, None, None)
        return None if held is None else self._waited(held[1])

    @staticmethod
    def _pop(table: dict[str, Any], request_id: str | None, method: str | None) -> Any:
        if request_id is not None:
            return table.pop(request_id, None)
        for key in reversed(list(table)):  # without a ticket: the latest of that method
            if method is None or table[key][0] == method:
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
        held = self._pop(self._held, request_id, method)
        if held is not None:
            return Unreachable(f"{where}: the {action} was not sent: {self._waited(held[1])}"
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


class _PersonStep:
    """The SDK's ``redirect_handler`` and ``callback_handler``, around the ``authorize`` step."""

    def __init__(self, state: AuthState, option: OAuth, redirect_uri: str) -> None:
        self.state = state
        self.option = option
        self.redirect_uri = redirect_uri
        self.provider: OAuthClientProvider | None = None
        self._url: str | None = None

    async def redirect(self, authorization_url: str) -> None:
        check_endpoint(authorization_url, "authorization endpoint")
        metadata = self.provider.context.oauth_metadata if self.provider is not None else None
        if metadata is not None and metadata.token_endpoint is not None:
            check_endpoint(str(metadata.token_endpoint), "token endpoint")
        self._url = authorization_url

    async def callback(self) -> AuthorizationCodeResult:
        url, self._url = self._url, None
        if url is None:
            raise SignInError("no authorization URL was made")
        sent_state = parse_qs(urlsplit(url).query).get("state", [None])[0]
        returned = await self._ask(url)
        if not isinstance(returned, str) or not returned.strip():
            raise SignInError("the authorize step returned no address")
        query = parse_qs(urlsplit(returned.strip()).query)
        if "error" in query:
            detail = query.get("error_description", [""])[0]
            raise SignInError(f"the authorization server answered {query['error'][0]!r}"
                              f"{': ' + _html.shorten(detail, 200) if detail else ''}")
        code = query.get("code", [None])[0]
        state = query.get("state", [None])[0]
        if not code:
            raise SignInError("the address the browser came back to has no code (paste the "
                              "whole address from the browser's address bar)")
        self.state._hide([code])
        if state != sent_state:
            raise SignInError("the address's state does not match this sign-in (an address "
                              "from another sign-in, or an old tab?); nothing was used")
        return AuthorizationCodeResult(code=code, state=state, iss=query.get("iss", [None])[0])

    async def _ask(self, url: str) -> str:
        outcome = SignInOutcome()
        token = OUTCOME.set(outcome)
        try:
            answer = await self._ask_person(url)
        finally:
            OUTCOME.reset(token)
        self.state.outcome = outcome  # settled by the flow (_Guarded) once it goes on
        return answer

    async def _ask_person(self, url: str) -> str:
        fn = self.option.authorize
        timeout = self.option.timeout
        self.state.signing_in = True
        try:
            with self.state.pause():
                try:
                    with anyio.fail_after(timeout):
                        if fn is not None:  # a plain function runs off the shared loop
                            answer = (fn(url) if inspect.iscoroutinefunction(fn) else
                                      await anyio.to_thread.run_sync(fn, url,
                                                                     abandon_on_cancel=True))
                            if inspect.isawaitable(answer):
                                answer = await answer
                            return str(answer)
                        if _authorizer is None:
                            raise SignInError(
                                "no way to ask a person: pass OAuth(authorize=...) (a function "
                                "from the authorization URL to the address the browser came "
                                "back to), or sign in from a notebook or `toolbench auth login`")
                        return await _authorizer(url, self.redirect_uri, timeout)
                except TimeoutError:
                    raise SignInError(f"no sign-in within timeout={timeout:g} s") from None
        finally:
            self.state.signing_in = False


class _Guarded(httpx2.Auth):
    """The provider's flow, with what stops it answered locally instead of raised.

    Raised inside the HTTP transport's task, a flow error would end the transport and leave
    the request waiting until its timeout (then ``TimedOut``). Instead the reason is kept in
    the ``AuthState`` and the request is answered with a local 401 that never leaves this
    process (:class:`LocalAnswers`), so the request fails at once and is explained.
    """

    requires_request_body = True
    requires_response_body = True

    def __init__(self, inner: httpx2.Auth, state: AuthState) -> None:
        self.inner = inner
        self.state = state

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        # What the request waits for is noted until it is sent; a request given up on (a
        # timeout cancels the flow at a yield) leaves its note for its error to explain.
        state = self.state
        flow = self.inner.async_auth_flow(request)
        owned: SignInOutcome | None = None  # the outcome of a person's step run in this flow

        def take() -> SignInOutcome | None:
            if state.outcome is not None:
                found, state.outcome = state.outcome, None
                return found
            return owned

        try:
            state.hold(request, "a sign-in already under way")
            outgoing = await flow.__anext__()
            while True:
                if outgoing is request or outgoing.url == request.url:
                    state.hold(request, None)
                    if owned is not None:  # signed in: the request goes again with tokens
                        owned.settle(None)
                        owned = None
                else:  # an authorization server's request: bounded, its failure answered
                    outgoing.extensions = {**outgoing.extensions, AS_REQUEST: True,
                                           "timeout": AS_TIMEOUT.as_dict()}
                    state.hold(request, f"the authorization server to answer {_shown(outgoing)}")
                response = yield outgoing
                if outgoing is not request:
                    failed = response.extensions.get(AS_REQUEST)
                    if isinstance(failed, str):
                        raise SignInError(failed)
                    await check_metadata(response)
                state.hold(request, PERSON)
                outgoing = await flow.asend(response)
                owned = take()
        except StopAsyncIteration:
            state.hold(request, None)
            return
        except Exception as exc:
            state.hold(request, None)
            state.failure = _reason(exc)
            owned = take()
            if owned is not None:
                owned.settle(state.failure)
            logger.debug("sign-in for %s stopped: %s", state.server, state.failure)
            yield local_answer(request, state.failure)
        finally:
            owned = take()
            if owned is not None:  # given up on (a timeout) between the redirect and tokens
                owned.settle("the sign-in was given up before its tokens came")
            with contextlib.suppress(Exception):
                await flow.aclose()


def _shown(request: httpx2.Request) -> str:
    """``METHOD url`` without the query (an authorization URL's query is the flow's own)."""
    return f"{request.method} {_html.shorten(str(request.url.copy_with(query=None)), 200)}"


def _reason(exc: BaseException, request: httpx2.Request | None = None) -> str:
    text = str(exc).strip().split("For further information visit")[0].strip()
    text = " ".join(text.split()) or type(exc).__name__
    url = f" {_shown(request)}" if request is not None else ""
    if isinstance(exc, httpx2.TimeoutException):
        text = (f"the authorization server did not answer{url} within {AS_TIMEOUT_S:g} s "
                f"({type(exc).__name__})")
    elif isinstance(exc, httpx2.TransportError):
        text = (f"the authorization server could not be reached{url} ({type(exc).__name__}: "
                f"{_html.shorten(text, 200)})")
    elif not isinstance(exc, SignInError | TokenStoreError):
        text = f"{type(exc).__name__}: {text}"
    return _html.shorten(text, 400)


def local_answer(request: httpx2.Request, reason: str) -> httpx2.Request:
    """A copy of ``request`` that :class:`LocalAnswers` answers with a 401 itself."""
    copy = httpx2.Request(request.method, request.url, headers={"content-type": "x"},
                          content=request.content)
    copy.extensions = {**request.extensions, LOCAL_ANSWER: reason}
    return copy


class LocalAnswers(httpx2.AsyncBaseTransport):
    """A transport that answers ``local_answer`` requests itself; the rest go on."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.extensions.get(AS_REQUEST):  # its failure goes back into the flow
            try:
                return await self._inner.handle_async_request(request)
            except httpx2.TransportError as exc:
                return httpx2.Response(599, request=request,
                                       extensions={AS_REQUEST: _reason(exc, request)})
        reason = request.extensions.get(LOCAL_ANSWER)
        if reason is not None:
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32001, "message": "toolbench: sign-in stopped; nothing was sent"}})
            return httpx2.Response(401, headers={"content-type": "application/json"},
                                   content=body.encode(), request=request)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


@contextlib.contextmanager
def paused(scope: anyio.CancelScope | None) -> Iterator[None]:
    """Stop ``scope``'s deadline while a person signs in, and give back what was left."""
    if scope is None or not math.isfinite(scope.deadline):
        yield
        return
    left = scope.deadline - anyio.current_time()
    scope.deadline = math.inf
    try:
        yield
    finally:
        scope.deadline = anyio.current_time() + max(left, 0.0)
