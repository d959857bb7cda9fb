"""Requests a server sends to the bench: sampling, elicitation and roots (DESIGN.md, "Beyond
tools").

A bench answers them through the SDK's own callbacks (``sampling_callback``,
``elicitation_callback``, ``list_roots_callback`` on ``mcp.Client``); nothing here speaks the
protocol. :class:`ServerRequests` holds one bench's answers and makes those callbacks for each
of its connections. A kind with no handler gets no callback, so the SDK does not advertise
that capability and a server never asks.

A handler is a function (sync or async) of the SDK's request parameters, or ``"ask"``: a
person answers in a notebook widget. The widgets live in the notebook layer, which this layer
must not import, so ``"ask"`` is resolved when a request arrives, through the :class:`Asker`
that ``toolbench._notebook.ask.ask`` registers (:func:`register_asker`). Outside a kernel nothing
is registered, and the server gets an error reply that says so.

What a handler does is untrusted too, from the server's point of view, and from ours: it may
raise, hang, or return garbage. Each of those becomes a proper JSON-RPC error reply to the
server (code ``INTERNAL_ERROR``, or ``-1`` when a person rejects a sampling request, as the MCP
specification suggests), never an exception inside the SDK's dispatcher. Every wait has a
bound: ``function_timeout`` for a function, ``ask_timeout`` for a person, and the call's own
timeout around both. A sync function runs in a worker thread so it cannot stall the shared
loop. An elicitation answer is checked against the requested schema with the bounded
validator (``toolbench._core.schema.validate``: no ``$ref`` fetched, linear-time patterns) before
the server sees it. At most ``MAX_OPEN_ASKS`` asks wait at once per bench; a server that
floods the notebook with forms gets error replies beyond that.

A failure is also remembered per server (:meth:`ServerRequests.failures_since`), so that the
tool call that the request belonged to can say why it failed: the SDK turns our error reply
into an ``MCPError`` on one protocol path and the server words it its own way on the other.
"""

from __future__ import annotations

import collections
import inspect
import os
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Protocol
from urllib.parse import unquote, urlsplit

import anyio
import anyio.to_thread
import mcp_types as types
import pydantic

from toolbench._core import html as _html
from toolbench._core.errors import Malformed, Refused, TimedOut, ToolError, ToolFailed, Unreachable
from toolbench._core.schema.validate import field_errors, schema_problems

ASK: Final = "ask"
"""The handler value that asks a person in a notebook widget."""
Kind = Literal["sampling", "elicitation"]
ACTIONS = ("accept", "decline", "cancel")

FUNCTION_TIMEOUT_S = 60.0
"""How long a handler function may take before the server is told it failed."""
ASK_TIMEOUT_S = 300.0
"""How long a person may take to answer a widget (the call's own timeout bounds it too)."""
MAX_OPEN_ASKS = 8
"""Asks waiting at once, per bench; more get an error reply instead of another widget."""
USER_REJECTED = -1
"""The JSON-RPC code for "the user rejected the sampling request" (MCP specification)."""
MARK = "toolbench"
"""The key in an error reply's ``data`` that says the bench's handler made it."""
MAX_FAILURES = 64
"""Handler failures remembered per bench (to explain the calls they broke)."""
_SHOWN = 300


class HandlerError(Exception):
    """A handler's answer cannot be sent; the text says why (it reaches the server)."""

    def __init__(self, message: str, *, code: int = types.INTERNAL_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class Asker(Protocol):
    """What answers ``"ask"``: a person, through widgets (``toolbench._notebook.ask.ask``).

    Each method returns what a handler function would (an ``ElicitResult``, a
    ``CreateMessageResult``, a str), or raises :class:`HandlerError`. The caller bounds the
    wait; a cancelled wait must close the widget.
    """

    def available(self) -> str | None:
        """None when a person can be asked here; else why not (no kernel, no ipywidgets)."""
        ...

    def prepare(self) -> None:
        """A bench that asks was made: get ready before any call blocks (install the pump)."""
        ...

    async def sampling(self, server: str, params: types.CreateMessageRequestParams,
                       timeout: float) -> Any: ...

    async def elicitation(self, server: str, params: types.ElicitRequestParams,
                          timeout: float) -> Any: ...


_asker: Asker | None = None


def register_asker(asker: Asker | None) -> None:
    """Install what answers ``"ask"`` (the notebook layer does, on import); None removes it."""
    global _asker
    _asker = asker


def registered_asker() -> Asker | None:
    return _asker


Handler = Callable[[Any], Any] | str | None
SamplingReply = (types.CreateMessageResult | types.CreateMessageResultWithTools
                 | types.ErrorData)
ElicitReply = types.ElicitResult | types.ErrorData


def check_handler(kind: str, handler: object) -> Handler:
    """``handler`` if it is None, ``"ask"`` or callable; else a TypeError naming the rule."""
    if handler is None or handler == ASK or callable(handler):
        return handler  # type: ignore[return-value]
    raise TypeError(f"invalid {kind} handler {handler!r}: use a function (sync or async) of "
                    f"the request, or {ASK!r} to ask in a notebook widget, or None")


def root(value: object) -> types.Root:
    """One root from a path, a ``file://`` URI or an SDK ``Root``; anything else is refused."""
    if isinstance(value, types.Root):
        return value
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"invalid root {value!r}: a root is a path or a file:// URI")
    if "://" in value:
        parts = urlsplit(value)
        if parts.scheme.lower() != "file":
            raise ValueError(f"invalid root {value!r}: only file:// URIs are roots "
                             f"(MCP roots are folders), not {parts.scheme}://")
        name = Path(unquote(parts.path)).name or None
        return types.Root(uri=value, name=name)  # type: ignore[arg-type]
    path = Path(value).expanduser().resolve()
    return types.Root(uri=path.as_uri(), name=path.name or None)  # type: ignore[arg-type]


def roots_of(values: Iterable[object] | None) -> tuple[types.Root, ...] | None:
    if values is None:
        return None
    if isinstance(values, str | os.PathLike | types.Root):
        values = [values]
    return tuple(root(v) for v in values)


def warn_if_nobody_can_answer(sampling: Handler, elicitation: Handler) -> None:
    """Say once, where the bench is made, that ``"ask"`` has nobody to ask in this process.

    Without a kernel (a script, a REPL, a terminal) or without ipywidgets, a server's request
    would get an error reply and fail its tool call mid-run; a ``UserWarning`` at
    ``Bench(...)`` names the reason instead, pointing at the caller's own line. The bench
    still advertises the capability, so a server that asks is told why in its error reply.
    """
    kinds = [kind for kind, handler in (("sampling", sampling), ("elicitation", elicitation))
             if handler == ASK]
    if not kinds:
        return
    asker = registered_asker()
    why = "toolbench's notebook layer is not loaded" if asker is None else asker.available()
    if why is None:
        return
    named = " and ".join(f"{kind}={ASK!r}" for kind in kinds)
    verb = "needs" if len(kinds) == 1 else "need"
    warnings.warn(
        f"{named} {verb} a person at a Jupyter notebook, and nobody can answer here ({why}): "
        f"a server that asks gets an error reply, and its tool call fails. Give the bench a "
        f"function instead, e.g. Bench({kinds[0]}=lambda request: ...).",
        UserWarning, stacklevel=_callers_level(),
    )


def _callers_level() -> int:
    """The ``stacklevel`` of the first frame outside toolbench (the user's ``Bench(...)``)."""
    frame = inspect.currentframe()
    level = 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if level > 1 and module != "toolbench" and not module.startswith("toolbench."):
            return level - 1
        frame = frame.f_back
        level += 1
    return 1


@dataclass(frozen=True)
class Failure:
    at: float  # time.perf_counter(), the clock a call's latency uses
    server: str
    text: str


class ServerRequests:
    """One bench's answers to sampling, elicitation and roots requests, for every connection,
    and the ``extensions`` it advertises. ``roots`` may change (``set_roots``); the bench then
    tells connected servers. A bench made with ``roots=None`` advertises no roots capability,
    so roots set later reach only servers connected after that.
    **Roots are per server.** ``set_server_roots(server, roots)`` gives one server its own
    list (``connect(..., roots=)``, a config's ``"roots"``); the bench's ``roots`` is only
    the default for servers without one: a server is answered from its own list (``roots_for``).
    """

    def __init__(self, sampling: Handler = None, elicitation: Handler = None,
                 roots: Iterable[object] | None = None, *,
                 function_timeout: float = FUNCTION_TIMEOUT_S, ask_timeout: float = ASK_TIMEOUT_S,
                 extensions: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.sampling = check_handler("sampling", sampling)
        self.extensions = {k: dict(v) for k, v in (extensions or {}).items()}
        self.elicitation = check_handler("elicitation", elicitation)
        self._roots = roots_of(roots)
        self._server_roots: dict[str, tuple[types.Root, ...]] = {}
        self.function_timeout = _seconds("function_timeout", function_timeout)
        self.ask_timeout = _seconds("ask_timeout", ask_timeout)
        self._failures: collections.deque[Failure] = collections.deque(maxlen=MAX_FAILURES)
        self._open_asks = 0
        asker = registered_asker()
        if asker is not None and ASK in (self.sampling, self.elicitation):
            asker.prepare()
        warn_if_nobody_can_answer(self.sampling, self.elicitation)

    # -- roots ------------------------------------------------------------------------------
    @property
    def roots(self) -> tuple[types.Root, ...] | None:
        return self._roots

    def set_roots(self, values: Iterable[object] | None) -> None:
        self._roots = roots_of(values)

    def set_server_roots(self, server: str, values: Iterable[object] | None) -> None:
        """Give ``server`` its own roots (``None``: back to the bench's default)."""
        own = roots_of(values)
        if own is None:
            self._server_roots.pop(server, None)
        else:
            self._server_roots[server] = own

    def has_own_roots(self, server: str) -> bool:
        return server in self._server_roots

    def roots_for(self, server: str) -> tuple[types.Root, ...] | None:
        """The roots ``server`` sees: its own, else the bench's (``None``: no capability)."""
        own = self._server_roots.get(server)
        return own if own is not None else self._roots

    def active_for(self, server: str) -> bool:
        """Whether ``server``'s connection needs any of these callbacks."""
        return self.active or server in self._server_roots

    # -- what the SDK gets ------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return (self.sampling is not None or self.elicitation is not None
                or self._roots is not None or bool(self.extensions))

    def callbacks(self, server: str) -> dict[str, Any]:
        """The keyword arguments for ``mcp.Client``: one callback per configured kind."""
        from mcp.client import advertise
        found: dict[str, Any] = {"extensions": [advertise(*kv) for kv in self.extensions.items()]
                                 or None}
        if self.sampling is not None:
            async def sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
                return await self.answer_sampling(server, params)

            found["sampling_callback"] = sampling
            found["sampling_capabilities"] = getattr(self.sampling, "sampling_capabilities", None)
        if self.elicitation is not None:
            async def elicitation(context: Any, params: types.ElicitRequestParams) -> Any:
                return await self.answer_elicitation(server, params)

            found["elicitation_callback"] = elicitation
        if self.roots_for(server) is not None:
            async def list_roots(context: Any) -> types.ListRootsResult:
                return types.ListRootsResult(roots=list(self.roots_for(server) or ()))

            found["list_roots_callback"] = list_roots
        return found

    async def answer_sampling(self, server: str,
                              params: types.CreateMessageRequestParams) -> SamplingReply:
        """The reply to one ``sampling/createMessage``; never raises (but for cancellation)."""
        try:
            reply = await self._run("sampling", server, self.sampling, params)
            return sampling_result(reply, "human" if self.sampling == ASK else "function")
        except HandlerError as exc:
            return self._refuse("sampling", server, exc)

    async def answer_elicitation(self, server: str,
                                 params: types.ElicitRequestParams) -> ElicitReply:
        """The reply to one ``elicitation/create``; never raises (but for cancellation)."""
        try:
            reply = await self._run("elicitation", server, self.elicitation, params)
            return elicit_result(reply, params)
        except HandlerError as exc:
            return self._refuse("elicitation", server, exc)

    async def _run(self, kind: Kind, server: str, handler: Handler, params: Any) -> Any:
        if handler == ASK:
            asker = registered_asker()
            why = "toolbench's notebook layer is not loaded" if asker is None else \
                asker.available()
            if asker is None or why is not None:
                raise HandlerError(f"{kind}={ASK!r} needs a person at a Jupyter notebook "
                                   f"({why}); give the bench a function instead")
            if self._open_asks >= MAX_OPEN_ASKS:
                raise HandlerError(f"{MAX_OPEN_ASKS} requests are already waiting for an "
                                   f"answer in the notebook; this {kind} request was refused")
            self._open_asks += 1
            try:
                with anyio.fail_after(self.ask_timeout):
                    if kind == "sampling":
                        return await asker.sampling(server, params, self.ask_timeout)
                    return await asker.elicitation(server, params, self.ask_timeout)
            except TimeoutError:
                raise HandlerError(f"nobody answered the {kind} request within "
                                   f"{self.ask_timeout:g} s") from None
            finally:
                self._open_asks -= 1
        assert callable(handler)
        name = getattr(handler, "__name__", type(handler).__name__)
        try:
            with anyio.fail_after(self.function_timeout):
                if inspect.iscoroutinefunction(handler):
                    value = await handler(params)
                else:
                    value = await anyio.to_thread.run_sync(handler, params,
                                                           abandon_on_cancel=True)
                if inspect.isawaitable(value):
                    value = await value
                return value
        except TimeoutError:
            raise HandlerError(f"the {kind} handler {name}() did not answer within "
                               f"{self.function_timeout:g} s") from None
        except HandlerError:
            raise
        except Exception as exc:
            text = _html.shorten(f"{type(exc).__name__}: {exc}".replace("\n", " "), _SHOWN)
            raise HandlerError(f"the {kind} handler {name}() raised {text}") from exc

    def _refuse(self, kind: Kind, server: str, exc: HandlerError) -> types.ErrorData:
        text = _html.shorten(exc.message, _SHOWN)
        self._failures.append(Failure(time.perf_counter(), server, f"{kind}: {text}"))
        return types.ErrorData(code=exc.code, message=text, data={MARK: kind})

    # -- explaining failed calls ------------------------------------------------------------
    def failures_since(self, server: str, started: float) -> list[str]:
        """What went wrong answering ``server`` since ``started`` (``time.perf_counter()``)."""
        return [f.text for f in self._failures if f.server == server and f.at >= started]


def sampling_result(reply: Any, model: str) -> SamplingReply:
    """A handler's value as the SDK's sampling result: a str is the reply's text."""
    if isinstance(reply, types.CreateMessageResult | types.CreateMessageResultWithTools
                  | types.ErrorData):
        return reply
    if isinstance(reply, str):
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=reply),
            model=f"toolbench-{model}", stop_reason="endTurn")
    if isinstance(reply, Mapping):
        try:
            return types.CreateMessageResult.model_validate(dict(reply))
        except pydantic.ValidationError as exc:
            raise HandlerError(
                "the sampling handler returned a mapping that is not a CreateMessageResult: "
                + _html.shorten(str(exc).replace("\n", " "), _SHOWN)) from None
    raise HandlerError(f"the sampling handler returned {type(reply).__name__}, not a str or "
                       "a CreateMessageResult")


def elicit_result(reply: Any, params: types.ElicitRequestParams) -> ElicitReply:
    """A handler's value as the SDK's elicitation result, checked against the schema."""
    if isinstance(reply, types.ErrorData):
        return reply
    action: Any
    content: Any
    if isinstance(reply, types.ElicitResult):
        action, content = reply.action, reply.content
    elif isinstance(reply, Mapping):
        action, content = reply.get("action"), reply.get("content")
    else:
        raise HandlerError(f"the elicitation handler returned {type(reply).__name__}, not "
                           "{'action': ..., 'content': {...}} or an ElicitResult")
    if action not in ACTIONS:
        raise HandlerError(f"the elicitation handler's action is {_html.shorten(repr(action), 80)}"
                           f", not one of {list(ACTIONS)}")
    if action != "accept" or isinstance(params, types.ElicitRequestURLParams):
        return types.ElicitResult(action=action)
    if content is None:
        content = {}
    if not isinstance(content, Mapping):
        raise HandlerError(f"the elicitation handler's content is {type(content).__name__}, "
                           "not a mapping of field names to values")
    content = dict(content)
    errors = field_errors(params.requested_schema, content)
    if errors:
        shown = "; ".join(f"{k}: {v}" for k, v in list(errors.items())[:3])
        raise HandlerError("the elicitation answer does not match the requested schema: "
                           + _html.shorten(shown, _SHOWN))
    try:
        return types.ElicitResult(action="accept", content=content)
    except pydantic.ValidationError as exc:
        raise HandlerError(
            "the elicitation answer holds values that are not strings, numbers, booleans or "
            "lists of strings: " + _html.shorten(str(exc).replace("\n", " "), _SHOWN)) from None


def schema_notes(schema: object) -> list[str]:
    """Why a requested schema is not (fully) checked here, for the form to show."""
    try:
        return [str(p) for p in schema_problems(schema)]
    except Exception as exc:  # a form must render even if the schema upsets the checker
        return [f"the schema could not be examined: {type(exc).__name__}"]


def explain(error: ToolError, notes: list[str]) -> ToolError:
    """``error`` with what the bench's handlers reported during the call, or as it is."""
    if not notes:
        return error
    extra = "; ".join(notes[-3:])
    detail = f"{error.detail} (while the call ran, the bench's answer to a server request " \
             f"failed: {extra})"
    if isinstance(error, ToolFailed):
        return ToolFailed(detail, tool=error.tool, result=error.result)
    if isinstance(error, Unreachable | Refused | TimedOut | Malformed):
        return type(error)(detail, tool=error.tool)
    return error


def handler_error(exc: BaseException) -> str | None:
    """The message of an error reply our own handler made, if ``exc`` is (or wraps) one.

    On the 2026-07-28 path the SDK raises the ``ErrorData`` a callback returned as an
    ``MCPError`` in the caller; on the older path an in-process ``MCPServer`` passes it back
    with its ``data`` intact. Either way the ``data`` carries :data:`MARK`.
    """
    from mcp.shared.exceptions import MCPError

    stack: list[BaseException] = [exc]
    seen = 0
    while stack and seen < 20:
        current = stack.pop()
        seen += 1
        if isinstance(current, MCPError):
            data = current.error.data
            if isinstance(data, Mapping) and data.get(MARK) in ("sampling", "elicitation"):
                return f"{data[MARK]}: {current.error.message}"
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
    return None


async def notify_roots_changed(client: Any) -> None:
    """Send ``notifications/roots/list_changed`` on an entered ``mcp.Client``.

    The SDK marks roots deprecated as of protocol 2026-07-28 but still sends the
    notification; its deprecation warning is muted here only.
    """
    from mcp.shared.exceptions import MCPDeprecationWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        # The session's method: the Client's wrapper warns again when awaited.
        sending: Awaitable[None] = client.session.send_roots_list_changed()
    await sending


def _seconds(label: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
        raise ValueError(f"invalid {label} {value!r}: a positive number of seconds")
    return float(value)


def call_error(error: ToolError, exc: BaseException | None, requests: ServerRequests,
               server: str, started: float) -> ToolError:
    """A failed call's error, saying so when the bench's answer to a server request failed.

    When the call ended on our own error reply (the 2026-07-28 path raises it in the caller),
    the server asked, got an error and may have done part of its work: ``TimedOut``
    (in doubt), naming the handler's failure. Otherwise the mapped error keeps its class and
    gains the failures reported while it ran.
    """
    own = handler_error(exc) if exc is not None else None
    if own is not None:
        return TimedOut(
            f"the call did not complete: the server asked the bench for {own}; the server got "
            "an error reply, so the tool may have done part of its work", tool=error.tool)
    return explain(error, requests.failures_since(server, started))
