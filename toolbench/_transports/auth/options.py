"""The ``auth=`` option's values: ``"oauth"`` / :class:`OAuth`, :class:`ClientCredentials`, or
any ``httpx2.Auth`` (passed through), checked where they are made, their secrets never in a
repr; and a config file's ``"auth"`` (:func:`auth_from_config`). What they do is
:mod:`toolbench._transports.auth.state`'s.
"""


from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx2

from toolbench._core.checks import seconds

Authorize = Callable[[str], "str | Awaitable[str]"]
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host.lower() in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


