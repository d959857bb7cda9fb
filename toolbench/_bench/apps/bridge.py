"""The host side of one MCP App view: JSON-RPC 2.0 in, answers out (DESIGN.md, "The bridge").

A :class:`Bridge` answers every message one view's frame posts, exactly as DESIGN lists
them, and knows nothing of widgets: ``AppView`` (the notebook layer) forwards the frame's
messages to :meth:`Bridge.handle` and posts what :attr:`Bridge.post` is given back into the
frame, and tests drive it directly. Everything a view sends is untrusted: a message over
``MAX_MESSAGE_BYTES``, a malformed one, a seventeenth request in flight, a call to another
server's tool or to a tool not visible to ``"app"`` gets an error reply, never a crash, and a
refused call is recorded (``Refused``) without the server being asked. A view's calls and
reads go through the bench like any other (egress, pins, the schema check, timeouts, the
journal), recorded with ``provenance["app"] = {"uri", "opened_by"}``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

from toolbench._bench.apps.guards import Backlog, Guarded, Refusals
from toolbench._bench.apps.hostcontext import HOST_CONTEXT_CHANGED, HostContext
from toolbench._bench.apps.meta import tool_ui
from toolbench._bench.apps.opened import Opened, wire_result
from toolbench._bench.apps.policy import DEFAULT_HEIGHT, View, clamp_height
from toolbench._core import html as _html
from toolbench._core.errors import Refused, ToolError, ToolFailed
from toolbench._core.version import __version__
from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.journal.record import Record
    from toolbench._core.client import Result
    from toolbench._core.contents import ReadResult
    from toolbench._core.ids import Egress
    from toolbench._routing.pegboard_names import PegEntry

PROTOCOL_VERSION: Final = "2026-01-26"
MAX_IN_FLIGHT = 16
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
TEARDOWN_WAIT_S = 2.0
TEARDOWN: Final = "ui/resource-teardown"
TEARDOWN_ID: Final = "toolbench-teardown"
"""The id of every ``ui/resource-teardown`` the host sends (the front end's is exactly this)."""
LOG_ROWS = 1_000
KEPT = 100
"""Messages, links and downloads a view keeps (the newest)."""
LOG_COLUMNS = ("time", "direction", "method", "id", "ok", "error")
INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_ERROR = -32600, -32601, -32602, -32000


class Host(Protocol):
    """What a bridge needs of its bench (``toolbench._bench.apps.host.BenchHost``)."""

    @property
    def egress(self) -> Egress | None: ...

    @property
    def has_sampling(self) -> bool: ...

    def limit(self, server: str) -> float: ...

    def entries(self, server: str | None) -> list[PegEntry]: ...

    def entry_of(self, server: str, tool: str) -> PegEntry | None: ...

    def record(self, call_id: str) -> Record | None: ...

    async def read_view(self, server: str, uri: str, timeout: float | None) -> ReadResult: ...

    async def listed_meta(self, server: str, uri: str, timeout: float | None,
                          ) -> dict[str, Any] | None: ...

    async def call(self, entry: PegEntry, arguments: Any, provenance: dict[str, Any],
                   ) -> tuple[Result | None, ToolError | None]: ...

    def refuse(self, server: str, tool: str, arguments: Any, provenance: dict[str, Any],
               error: Refused) -> None: ...

    async def read(self, server: str, uri: str, provenance: dict[str, Any],
                   ) -> tuple[ReadResult | None, ToolError | None]: ...

    def log(self, server: str, level: Any, logger: Any, data: Any) -> None: ...

    async def sample(self, server: str, params: Any) -> Any: ...


def _error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def _reply(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


class Bridge(Guarded):
    """One live view's host: answers its frame's JSON-RPC messages (DESIGN.md, "MCP Apps")."""

    def __init__(self, host: Host, entry: PegEntry, view: View, opened: Opened) -> None:
        assert view.html is not None and view.policy is not None
        self._host = host
        self.entry = entry
        self.view = view
        self.opened = opened
        self.server, self.tool, self.uri = entry.server, entry.tool, view.uri
        self.html: str = view.html
        self.policy = view.policy
        self.height = DEFAULT_HEIGHT
        self.host_context = HostContext()
        """Theme, container size and display mode, as the front end last said them."""
        self.heights: dict[tuple[str, str], int] | None = None
        """Where the last known height of a (server, uri) view is kept, for the next one."""
        self.initialized = False
        self.torn_down = False
        self.messages: collections.deque[dict[str, Any]] = collections.deque(maxlen=KEPT)
        self.context: dict[str, Any] | None = None
        self.links: collections.deque[str] = collections.deque(maxlen=KEPT)
        self.downloads: collections.deque[dict[str, Any]] = collections.deque(maxlen=KEPT)
        self.outbox: collections.deque[dict[str, Any]] = collections.deque(maxlen=KEPT)
        """What was posted to the frame, newest last (``post`` sends it on)."""
        self.post: Callable[[dict[str, Any]], None] | None = None
        """Where messages for the frame go (the widget's comm); None: kept in ``outbox``."""
        self.on_event: Callable[[str, Any], None] | None = None
        """Told of ``height``, ``link``, ``download`` and ``teardown`` (the widget redraws)."""
        self._log: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=LOG_ROWS)
        self._in_flight = 0
        self._teardown_answered: asyncio.Event | None = None
        self._sent_ids = 0
        self.refusals = Refusals(self._write_refusal)
        self.backlog = Backlog(self._note)

    # -- what the view shows --------------------------------------------------------------
    @property
    def log(self) -> pd.DataFrame:
        """The traffic both ways, oldest first (the last ``LOG_ROWS``)."""
        import pandas as pd

        return pd.DataFrame(list(self._log), columns=list(LOG_COLUMNS), dtype=object)

    @property
    def provenance(self) -> dict[str, Any]:
        return {"app": {"uri": self.uri, "opened_by": self.opened.call_id}}

    def _note(self, direction: str, message: Any, ok: bool | None = None,
              error: str | None = None) -> None:
        method = message.get("method") if isinstance(message, Mapping) else None
        id_ = message.get("id") if isinstance(message, Mapping) else None
        self._log.append((dt.datetime.now(dt.UTC), direction,
                          _html.shorten(method, 80) if isinstance(method, str) else None,
                          _html.shorten(repr(id_), 80) if id_ is not None else None, ok,
                          _html.shorten(error, 300) if error else None))

    def _send(self, message: dict[str, Any]) -> None:
        self.outbox.append(message)
        self._note("out", message, True)
        if self.post is not None:
            try:
                self.post(message)
            except Exception as exc:  # a closed comm: the view is gone
                self._note("out", message, False, f"{type(exc).__name__}: {exc}")

    def _event(self, kind: str, value: Any) -> None:
        if self.on_event is not None:
            with contextlib.suppress(Exception):  # a widget's redraw never breaks the bridge
                self.on_event(kind, value)

    # -- the one door ---------------------------------------------------------------------
    def handle(self, message: Any) -> dict[str, Any] | None:
        """Answer one message exactly as if the frame had posted it; the reply, or None for
        a notification (blocks a cell; on toolbench's loop, await :meth:`ahandle`)."""
        return get_loop().run(self.answer, message)

    async def ahandle(self, message: Any) -> dict[str, Any] | None:
        """Awaitable :meth:`handle`, from any event loop."""
        return await get_loop().arun(self.answer, message)

    async def answer(self, message: Any) -> dict[str, Any] | None:
        """:meth:`handle` on the shared loop (where the bench's connections live)."""
        reply = await self._handle(message)
        if reply is not None:
            error = reply.get("error")
            self._note("out", {"id": reply.get("id"), "method": _method_of(message)},
                       error is None, error.get("message") if error else None)
        return reply

    async def _handle(self, message: Any) -> dict[str, Any] | None:
        size = _size(message)
        id_ = message.get("id") if isinstance(message, Mapping) else None
        if size > MAX_MESSAGE_BYTES:
            why = (f"message of {size:,} bytes is over the limit of {MAX_MESSAGE_BYTES:,} "
                   "bytes per message; it was not read")
            self._note("in", {"id": id_}, False, why)
            return _error(_plain_id(id_), INVALID_REQUEST, why)
        problem = _malformed(message)
        if problem is not None:
            self._note("in", message, False, problem)
            return _error(_plain_id(id_), INVALID_REQUEST, problem) if id_ is not None else None
        method = message.get("method")
        if method is None:  # a response to one of ours (teardown)
            answered = message.get("id")
            teardown = isinstance(answered, str) and answered.startswith(TEARDOWN_ID)
            self._note("in", {"id": answered, "method": TEARDOWN if teardown else None},
                       "error" not in message, _error_text(message.get("error")))
            if self._teardown_answered is not None:
                self._teardown_answered.set()
            return None
        self._note("in", message, True)
        params = message.get("params")
        params = params if isinstance(params, Mapping) else {}
        if "id" not in message:
            self._notification(method, params)
            return None
        if self.torn_down:
            return _error(id_, SERVER_ERROR, "this view was torn down; nothing more is answered")
        if self._in_flight >= MAX_IN_FLIGHT:
            return _error(id_, SERVER_ERROR, f"{method!r} refused: {MAX_IN_FLIGHT} requests "
                                              "are already in flight for this view")
        self._in_flight += 1
        try:
            return await asyncio.wait_for(self._request(id_, method, params),
                                          self._host.limit(self.server))
        except TimeoutError:
            return _error(id_, SERVER_ERROR, f"{method!r} took longer than the call's timeout "
                                              f"({self._host.limit(self.server):g} s)")
        except Exception as exc:  # our own bug: the view gets an error, never silence
            return _error(id_, SERVER_ERROR, f"{type(exc).__name__}: {exc}")
        finally:
            self._in_flight -= 1

    # -- requests ---------------------------------------------------------------------------
    async def _request(self, id_: Any, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if method == "ui/initialize":
            return _reply(id_, self.initialize_result())
        if method == "tools/call":
            return await self._call(id_, params)
        if method == "resources/read":
            uri = params.get("uri")
            if not isinstance(uri, str):
                return _error(id_, INVALID_PARAMS, f"resources/read: uri {uri!r} is not a str")
            answer, error = await self._host.read(self.server, uri, self.provenance)
            if error is not None or answer is None:
                return _error(id_, SERVER_ERROR, f"{type(error).__name__}: {error}")
            return _reply(id_, {"contents": answer.contents})
        if method == "ui/open-link":
            url = params.get("url")
            if not isinstance(url, str) or not url.lower().startswith(("https://", "http://")):
                return _error(id_, INVALID_PARAMS, f"ui/open-link: url "
                              f"{_html.shorten(repr(url), 80)} is not an http(s) URL")
            self.links.append(_html.shorten(url, 2000))
            self._event("link", url)
            return _reply(id_, {})
        if method == "ui/message":
            self.messages.append(_capped(params))
            return _reply(id_, {})
        if method == "ui/update-model-context":
            self.context = _capped(params)
            return _reply(id_, {})
        if method == "ui/download-file":
            self.downloads.append(_capped(params))
            self._event("download", self.downloads[-1])
            return _reply(id_, {})
        if method == "ui/request-display-mode":
            self.context_changed(mode=params.get("mode"))
            return _reply(id_, {"mode": self.host_context.display_mode})
        if method == "ping":
            return _reply(id_, {})
        if method == "sampling/createMessage" and self._host.has_sampling:
            answer = await self._host.sample(self.server, params)
            dump = getattr(answer, "model_dump", None)
            if dump is None:
                return _error(id_, SERVER_ERROR, "the sampling handler gave no answer")
            body = dump(by_alias=True, exclude_none=True, mode="json")
            if "code" in body and "message" in body and "role" not in body:  # an ErrorData
                return _error(id_, int(body["code"]), str(body["message"]))
            return _reply(id_, body)
        return _error(id_, METHOD_NOT_FOUND, f"method {_html.shorten(method, 80)!r} is not "
                                             "one a toolbench view host answers")

    async def _call(self, id_: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments")
        arguments = {} if arguments is None else arguments
        shown = _html.shorten(repr(name), 80)
        entry = self._host.entry_of(self.server, name) if isinstance(name, str) else None
        if entry is None:
            why = (f"tool {shown} is not a tool of this view's server {self.server!r}; a view "
                   "may call only its own server's tools; the server was not asked")
        elif not tool_ui(entry.spec.meta).visible_to("app"):
            why = (f"tool {shown} of {self.server!r} is not visible to apps (its "
                   f"_meta.ui.visibility is {list(tool_ui(entry.spec.meta).visibility)}); "
                   "a view may call only tools visible to \"app\"; the server was not asked")
        else:
            why = None
        if why is not None:
            wait = self.refusals.refuse("unknown" if entry is None else f"hidden {name}",
                                        str(name) if isinstance(name, str) else shown,
                                        arguments, why)
            if wait:  # a flood: its answer (and the slot it holds) waits a moment
                await asyncio.sleep(wait)
            return _error(id_, INVALID_PARAMS, why)
        assert entry is not None
        result, error = await self._host.call(entry, arguments, self.provenance)
        if result is not None and error is None:
            return _reply(id_, wire_result(result))
        if isinstance(error, ToolFailed) and error.result is not None:
            return _reply(id_, wire_result(error.result))
        return _error(id_, SERVER_ERROR, f"{type(error).__name__}: {error}")

    def initialize_result(self) -> dict[str, Any]:
        """What ``ui/initialize`` is answered with (DESIGN.md, "The bridge")."""
        caps: dict[str, Any] = {k: {} for k in (
            "serverTools", "serverResources", "logging", "openLinks", "message",
            "updateModelContext", "downloadFile")}
        if self._host.has_sampling:
            caps["sampling"] = {}
        spec = self.entry.spec
        tool: dict[str, Any] = {"name": self.tool, "inputSchema": spec.input_schema}
        for key, value in (("title", spec.title), ("description", spec.description),
                           ("outputSchema", spec.output_schema),
                           ("annotations", spec.annotations), ("_meta", spec.meta)):
            if value:
                tool[key] = value
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "hostInfo": {"name": "toolbench", "version": __version__},
            "hostCapabilities": caps,
            "hostContext": {
                "toolInfo": {"id": self.opened.call_id, "tool": tool},
                **self.host_context.wire(),
                "locale": "en-US", "timeZone": _time_zone(), "platform": "web"},
        }

    # -- notifications ----------------------------------------------------------------------
    def _notification(self, method: str, params: Mapping[str, Any]) -> None:
        if method == "ui/notifications/initialized":
            if self.initialized or self.torn_down:
                return
            self.initialized = True
            self._send({"jsonrpc": "2.0", "method": "ui/notifications/tool-input",
                        "params": {"arguments": self.opened.arguments}})
            if self.opened.result is not None:
                self._send({"jsonrpc": "2.0", "method": "ui/notifications/tool-result",
                            "params": self.opened.result})
            else:
                self._send({"jsonrpc": "2.0", "method": "ui/notifications/tool-cancelled",
                            "params": {"reason": self.opened.cancelled or "the call failed"}})
        elif method == "ui/notifications/size-changed":
            height = clamp_height(params.get("height"))
            if height is not None:
                self.height = height
                if self.heights is not None:  # a re-run starts at it
                    self.heights[(self.server, self.uri)] = height
                self._event("height", height)
        elif method == "notifications/message":
            self._host.log(self.server, params.get("level"), params.get("logger"),
                           params.get("data"))
        elif method == "ui/notifications/request-teardown":
            self._event("teardown", None)

    # -- the host's context after initialize ------------------------------------------------
    def context_changed(self, **facts: Any) -> None:
        """The front end's word on the host (``theme``, ``width``, ``height``, ``mode``), or
        the view's request for a display mode: kept, and what changed is sent to the view as
        ``host-context-changed`` once it is initialized (never before)."""
        changed = self.host_context.update(**facts)
        if "displayMode" in changed:
            self._event("display-mode", changed["displayMode"])
        if changed and self.initialized and not self.torn_down:
            self._send({"jsonrpc": "2.0", "method": HOST_CONTEXT_CHANGED, "params": changed})

    # -- teardown ---------------------------------------------------------------------------
    async def ateardown(self) -> bool:
        """Awaitable :meth:`teardown`, from any event loop."""
        return await get_loop().arun(self.teardown)

    async def teardown(self) -> bool:
        """Send ``ui/resource-teardown`` and wait at most 2 s for its answer; True if the
        view answered. Safe to repeat. A widget does this in the front end instead (it
        removes the frame); here it serves the bench's close and code-driven views."""
        if self.torn_down:
            return False
        self.torn_down = True
        self.refusals.flush()  # an open fold is recorded before the bench closes
        if not self.initialized or self.post is not None:  # a front end sends it, and waits
            self._event("teardown", None)
            return False
        self._teardown_answered = asyncio.Event()
        self._sent_ids += 1
        id_ = f"{TEARDOWN_ID}-{self._sent_ids}"
        self._send({"jsonrpc": "2.0", "id": id_, "method": TEARDOWN, "params": {}})
        self._event("teardown", None)
        try:
            await asyncio.wait_for(self._teardown_answered.wait(), TEARDOWN_WAIT_S)
            return True
        except TimeoutError:
            self._note("in", {"id": id_, "method": TEARDOWN}, False, _UNANSWERED)
            return False

    def told_teardown(self, state: Any, id_: Any = TEARDOWN_ID) -> None:
        """The front end's word on a teardown it ran itself (the output was cleared or
        closed, or the kernel asked): ``sent`` to the live document, ``unanswered`` within
        2 s (the frame was removed anyway), or ``gone`` (the page had already discarded the
        frame, so nothing could be sent). Each is a row of :attr:`log`. The bridge is not
        torn down by it: one front-end view went, and the same widget may be showing in
        another output (displayed twice), whose frame is still answered."""
        shown = {"id": id_ if isinstance(id_, str) else TEARDOWN_ID, "method": TEARDOWN}
        if state == "sent":
            self._note("out", shown, True)
        elif state == "unanswered":
            self._note("in", shown, False, _UNANSWERED)
        elif state == "gone":
            self._note("out", shown, False, "not sent: the page had already removed the view's "
                                            "frame (this browser cannot keep it alive)")


_UNANSWERED: Final = (f"the view did not answer {TEARDOWN} within {TEARDOWN_WAIT_S:g} s; "
                      "its frame was removed anyway")


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    message = error.get("message") if isinstance(error, Mapping) else None
    return message if isinstance(message, str) else _html.shorten(repr(error), 300)


def _method_of(message: Any) -> Any:
    return message.get("method") if isinstance(message, Mapping) else None


def _plain_id(id_: Any) -> Any:
    return id_ if isinstance(id_, str | int) and not isinstance(id_, bool) else None


def _size(message: Any) -> int:
    try:
        return len(json.dumps(message, ensure_ascii=False, default=str).encode())
    except (TypeError, ValueError, RecursionError):
        return MAX_MESSAGE_BYTES + 1


def _malformed(message: Any) -> str | None:
    """Why ``message`` is not a JSON-RPC 2.0 message (None when it is one)."""
    if not isinstance(message, Mapping):
        return f"not a JSON-RPC message: a {type(message).__name__}, not an object"
    if message.get("jsonrpc") != "2.0":
        return f"not JSON-RPC 2.0: jsonrpc is {_html.shorten(repr(message.get('jsonrpc')), 40)}"
    if "id" in message and _plain_id(message["id"]) is None:
        shown = _html.shorten(repr(message["id"]), 40)
        return f"a JSON-RPC id is a string or an integer, not {shown}"
    method = message.get("method")
    if method is None:
        if "id" in message and ("result" in message or "error" in message):
            return None
        return "a JSON-RPC message has a method, or is a response (id and result or error)"
    if not isinstance(method, str) or not method or len(method) > 200:
        return f"a JSON-RPC method is a non-empty string, not {_html.shorten(repr(method), 40)}"
    params = message.get("params")
    if params is not None and not isinstance(params, Mapping):
        return "JSON-RPC params here are an object"
    return None


def _capped(params: Mapping[str, Any]) -> dict[str, Any]:
    """A copy small enough to keep (a view's word is capped like a log's)."""
    text = json.dumps(params, ensure_ascii=False, default=str)
    if len(text) <= 100_000:
        return dict(params)
    return {"_shortened": _html.shorten(text, 100_000)}


def _time_zone() -> str:
    name = time.tzname[0] if time.tzname else "UTC"
    try:
        key = getattr(dt.datetime.now().astimezone().tzinfo, "key", None)
    except Exception:
        key = None
    return str(key or name or "UTC")
