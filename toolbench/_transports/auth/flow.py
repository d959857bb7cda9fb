"""One sign-in as it runs, around the SDK's provider: the person's step and what stops the flow.

- **The person** (:class:`PersonStep`). The one step that needs a person is ``authorize``:
  given the authorization URL, return the URL the browser came back to. ``OAuth(authorize=...)``
  (an async function is awaited on the shared loop, a plain one runs in a worker thread), else
  the process-wide default that higher layers register with :func:`register_authorizer` (the
  notebook's sign-in card, the terminal flow). ``OAuth(timeout=...)`` bounds the wait. The
  returned URL's ``state`` must match the one sent (checked here, before the SDK checks it
  again); ``iss`` goes to the SDK, which checks it. While it runs, the sign-in's
  :class:`~toolbench._transports.auth.signin.SignInOutcome` is current; the flow settles it once
  tokens came (or says why not).
- **What an authorization server may not do.** An authorization or token endpoint that is not
  https (loopback aside), a discovery document naming a non-http(s) URL, a request to it that
  takes over ``AS_TIMEOUT_S`` or cannot connect, a token over ``MAX_TOKEN_CHARS``, a state that
  does not match: each stops the flow with a clear reason. :class:`Guarded` answers the
  request locally instead (:class:`LocalAnswers`: nothing leaves), so it fails at once as
  ``Unreachable`` and is explained (``AuthState.explain``); a request given up on while its
  sign-in held it back (a timeout) says what it waited for. Never ``TimedOut``.

The flow reads and settles one connection's sign-in through :class:`SignInState`, declared
here; ``AuthState`` (``toolbench._transports.auth.state``), which builds the flow, is the one
implementation, so this module never imports it.
"""


from __future__ import annotations

import contextlib
import inspect
import json
import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
)

from toolbench._core import html as _html
from toolbench._transports.auth.options import OAuth, is_loopback
from toolbench._transports.auth.signin import OUTCOME, SignInOutcome
from toolbench._transports.auth.tokens import (
    TokenStoreError,
)

logger = logging.getLogger(__name__)

DefaultAuthorizer = Callable[[str, str, float], Awaitable[str]]
"""``async (authorization_url, redirect_uri, timeout) -> the URL the browser came back to``."""

AS_REQUEST = "toolbench.authorization_server"
"""A request extension: an authorization server's request (bounded; a transport failure is
answered locally, the reason in the response's extension of the same name)."""
LOCAL_ANSWER = "toolbench.local_answer"
"""A request extension: the transport answers it itself (a refused sign-in), sending nothing."""
AS_TIMEOUT_S = 20.0
"""How long one request to an authorization server may take (the flow then stops)."""
AS_TIMEOUT = httpx2.Timeout(AS_TIMEOUT_S)
PERSON = "the sign-in (the authorization server, or the person's step)"
UNDER_WAY = "a sign-in already under way"
"""What a request waits for while another request's sign-in runs (the SDK's flow lock)."""

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


class SignInState(Protocol):
    """One connection's sign-in, as the flow sees it: what it notes while a request waits, and
    where its outcome goes (``AuthState`` is the one implementation)."""

    server: str
    outcome: SignInOutcome | None
    """A person's step came back; the flow settles it once tokens came (or says why not)."""
    signing_in: bool
    """A person is being asked right now."""
    asking: anyio.CancelScope | None
    """The person's step while it runs: closing the connection cancels it (no wait)."""
    closing: bool
    """The connection is closing: nobody is asked."""
    failure: str | None
    """Why the last sign-in stopped, until a request's error reports it."""
    pause: Callable[[], contextlib.AbstractContextManager[None]]
    """Stops the connect clock while a person signs in."""

    def hold(self, request: httpx2.Request, what: str | None) -> None:
        """Note what ``request`` waits for before it is sent; ``None``: it was sent."""
        ...

    def hide(self, values: list[str]) -> None:
        """Keep these values (a code, a token) out of every message from now on."""
        ...


class SignInError(Exception):
    """Why a sign-in stopped (our own checks; the SDK's ``OAuthFlowError`` is the other kind)."""


class PersonStep:
    """The SDK's ``redirect_handler`` and ``callback_handler``, around the ``authorize`` step."""

    def __init__(self, state: SignInState, option: OAuth, redirect_uri: str) -> None:
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
        self.state.hide([code])
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
        if self.state.closing:
            raise SignInError("the connection was closed while a person was signing in")
        self.state.signing_in = True
        try:
            with self.state.pause(), anyio.CancelScope() as asking:
                self.state.asking = asking
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
            raise SignInError("the connection was closed while a person was signing in")
        finally:
            self.state.signing_in = False
            self.state.asking = None


class Guarded(httpx2.Auth):
    """The provider's flow, with what stops it answered locally instead of raised.

    Raised inside the HTTP transport's task, a flow error would end the transport and leave
    the request waiting until its timeout (then ``TimedOut``). Instead the reason is kept in
    the sign-in's state and the request is answered with a local 401 that never leaves this
    process (:class:`LocalAnswers`), so the request fails at once and is explained.
    """

    requires_request_body = True
    requires_response_body = True

    def __init__(self, inner: httpx2.Auth, state: SignInState) -> None:
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
            state.hold(request, UNDER_WAY)
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

