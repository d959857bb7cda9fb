"""A provider of many tools at one address, with lanes so one slow backend starves no one.

A request is ``{"tool": name, ...data}``. It is refused (nothing runs) unless it names a known
tool and its data fits that tool's schema. An accepted request first waits for its *lane* (the
backend it needs), and only then takes one of the toolset's ``max_concurrent`` slots: a queue
on a busy lane therefore never holds slots that requests for other lanes could use (the lanes,
slots and locks: ``toolbench._transports.toolset.lanes``). The same dispatch serves three
faces: ``deliver`` (payloads), ``call`` (the ToolClient protocol, so a router or bench can use
a Toolset in process) and ``serve`` (a real MCP server, in ``toolbench._transports.toolset.serve``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.to_thread

from toolbench._core import html as _html
from toolbench._core.arguments import check_arguments
from toolbench._core.client import Result, ToolSpec, result_from_value
from toolbench._core.errors import Malformed, Refused, TimedOut, ToolFailed, Unreachable
from toolbench._core.ids import Destination, Provenance, ToolId, check_server_name, check_tool_name
from toolbench._core.schema.validate import schema_problems, validate_arguments
from toolbench._transports.toolset.lanes import LaneChoice, Lanes, check_cap
from toolbench._transports.toolset.serve import (
    GraceWatch,
    Served,
    build_server,
    check_target,
    serve_toolset,
)

if TYPE_CHECKING:
    from mcp.server import Server

F = TypeVar("F", bound=Callable[..., Any])

HELP = "help"
HELP_DESCRIPTION = "List this toolset's tools: name, description and input schema of each."
HELP_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
DEFAULT_SCHEMA: dict[str, Any] = {"type": "object"}
_DETAIL_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a handler may want besides its data: which tool and lane it runs in, and locks.

    ``exclusive`` is an async context manager, so only an async handler can use it; a sync
    handler runs in a worker thread, away from the event loop that owns the locks.
    """

    toolset: Toolset
    tool: str
    lane: str | None
    provenance: Provenance | None = None

    def exclusive(self, key: Hashable) -> contextlib.AbstractAsyncContextManager[None]:
        """``async with ctx.exclusive(key):`` runs one block at a time per key, toolset-wide."""
        return self.toolset.exclusive(key)


@dataclass(slots=True)
class _Tool:
    name: str
    description: str
    input_schema: dict[str, Any] | None
    handler: Callable[..., Any]
    wants_ctx: bool
    is_async: bool
    lane: LaneChoice
    id: ToolId | None = None

    @property
    def spec(self) -> ToolSpec:
        schema = self.input_schema if self.input_schema is not None else dict(DEFAULT_SCHEMA)
        return ToolSpec(self.name, self.description, schema)


def _takes_ctx(handler: Callable[..., Any], name: str) -> bool:
    """``(data)`` or ``(data, ctx)``: decided once, from the signature, at registration."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError) as exc:
        raise TypeError(f"tool {name!r}: cannot read the handler's signature: {exc}") from exc
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    required_kw = [p for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    required_pos = [p for p in positional if p.default is p.empty]
    if required_kw or len(required_pos) > 2 or not positional:
        raise TypeError(
            f"tool {name!r}: a handler takes (data) or (data, ctx), not {handler!r} with "
            f"parameters ({', '.join(p.name for p in params)})"
        )
    return len(positional) >= 2


def _is_async(handler: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(handler):
        return True
    call = getattr(handler, "__call__", None)  # noqa: B004 - an object with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


class Toolset:
    """Many tools at one address; a ToolClient in process and an MCP server via ``serve``."""

    honours_timeout = True
    """``call(..., timeout=)`` bounds the queue and the handler itself: a bench adds no
    backstop scope around it (a sync handler's thread cannot be stopped by either)."""

    def __init__(
        self,
        address: str,
        name: str | None = None,
        description: str = "",
        max_concurrent: int | None = 8,
        connect_grace: float | None = 5.0,
    ) -> None:
        self.address = check_server_name(address)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Toolset name must be a string or None, not {name!r}")
        self.name = name if name else address
        if not isinstance(description, str):
            raise TypeError(f"Toolset description must be a string, not {description!r}")
        self.description = description
        self.max_concurrent = check_cap(max_concurrent, "Toolset max_concurrent")
        self._watch = GraceWatch(self.address, connect_grace)
        self._tools: dict[str, _Tool] = {}
        self._lanes = Lanes(self.address, self.max_concurrent)
        self._tools[HELP] = _Tool(
            HELP, HELP_DESCRIPTION, dict(HELP_SCHEMA), self._help, False, False, None,
            ToolId(self.address, HELP),
        )

    # -- registering ------------------------------------------------------------------------
    def lane(self, name: str, max_concurrent: int | None = 1) -> None:
        """Declare a lane: at most ``max_concurrent`` of its requests run at once.

        The default of 1 fits the usual lane, a backend that takes one request at a time;
        ``None`` makes the lane a label only (``ctx.lane``) with no cap of its own.
        """
        self._lanes.declare(name, max_concurrent)

    def tool(
        self,
        name: str,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
        lane: LaneChoice = None,
    ) -> Callable[[F], F]:
        """Register a sync or async handler taking ``(data)`` or ``(data, ctx)``."""
        check_tool_name(name)
        if name == HELP:
            raise ValueError(f"tool name {HELP!r} is reserved: the toolset answers it itself")
        if name in self._tools:
            raise ValueError(f"tool {name!r} is already registered on toolset {self.address!r}")
        if not isinstance(description, str):
            raise TypeError(f"tool {name!r}: description must be a string, not {description!r}")
        self._lanes.check_choice(name, lane)
        schema = self._check_schema(name, input_schema)

        def register(handler: F) -> F:
            if not callable(handler):
                raise TypeError(f"tool {name!r}: the handler must be callable, not {handler!r}")
            if name in self._tools:
                raise ValueError(f"tool {name!r} is already registered on {self.address!r}")
            self._tools[name] = _Tool(
                name, description, schema, handler, _takes_ctx(handler, name),
                _is_async(handler), lane, ToolId(self.address, name),
            )
            return handler

        return register

    @staticmethod
    def _check_schema(name: str, input_schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A private, JSON-only copy of the schema, which every request must pass.

        The toolset is the server, so nobody else would check what it lets through: a schema
        it cannot check in full (a reference outside itself, a pattern re2 cannot compile,
        limits) is refused here, at registration, rather than silently half-enforced.
        """
        if input_schema is None:
            return None
        if not isinstance(input_schema, Mapping):
            raise TypeError(f"tool {name!r}: input_schema must be a dict, not {input_schema!r}")
        try:
            schema: dict[str, Any] = json.loads(json.dumps(dict(input_schema)))
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"tool {name!r}: input_schema is not JSON: {exc}") from exc
        if schema.get("type") != "object":
            raise ValueError(
                f"tool {name!r}: an MCP input_schema has \"type\": \"object\" at its root, "
                f"not {schema.get('type')!r}"
            )
        problems = schema_problems(schema, check_metaschema=True)
        if problems:
            raise ValueError(
                f"tool {name!r}: invalid input_schema for a Toolset, which checks every request "
                f"against it: {'; '.join(problems)}"
            )
        return schema

    # -- what is offered --------------------------------------------------------------------
    def names(self) -> list[str]:
        """Every tool name, ``help`` included, sorted."""
        return sorted(self._tools)

    def specs(self) -> list[ToolSpec]:
        """``help`` first, then the tools in registration order."""
        return [tool.spec for tool in self._tools.values()]

    def manifest(self) -> dict[str, Any]:
        """The ``help`` manifest: every tool's name, description, schema, lane and lock."""
        tools = []
        for tool in self._tools.values():
            if tool.name == HELP:
                continue
            schema = tool.input_schema if tool.input_schema is not None else DEFAULT_SCHEMA
            tools.append({"name": tool.name, "description": tool.description,
                          "inputSchema": json.loads(json.dumps(schema))})
        return {"name": self.name, "description": self.description, "tools": tools}

    def _help(self, data: dict[str, Any]) -> dict[str, Any]:
        return self.manifest()

    @property
    def busy(self) -> bool:
        """True while at least one accepted request is waiting or running."""
        return self._lanes.in_flight > 0

    @property
    def in_flight(self) -> int:
        return self._lanes.in_flight

    # -- dispatch ---------------------------------------------------------------------------
    async def deliver(self, payload: object) -> Any:
        """Dispatch ``{"tool": name, **data}`` and return the handler's own value."""
        self._mark_reached()
        if not isinstance(payload, Mapping):
            raise Refused(
                f"poison payload on {self.address!r}: expected a JSON object with a \"tool\" "
                f"field, got {type(payload).__name__} {_html.shorten(repr(payload), 80)}"
            )
        name = payload.get("tool")
        if name is None or name == "":
            raise Refused(
                f"no \"tool\" field in the payload for {self.address!r}; send "
                '{"tool": "help"} to list the tools'
            )
        if not isinstance(name, str):
            raise Refused(
                f"poison payload on {self.address!r}: \"tool\" must be a string, not "
                f"{type(name).__name__} {_html.shorten(repr(name), 80)}"
            )
        data = {key: value for key, value in payload.items() if key != "tool"}
        return await self._dispatch(name, data, None)

    async def _dispatch(
        self, name: str, data: Mapping[str, Any], provenance: Provenance | None,
        *, timeout: float | None = None,
    ) -> Any:
        self._mark_reached()
        tool = self._tools.get(name)
        if tool is None:
            raise Refused(
                f"unknown tool {_html.shorten(repr(name), 140)} on {self.address!r}; "
                f"known tools: {', '.join(self.names())}"
            )
        tid = tool.id
        args = check_arguments(tid, data)
        if tool.name == HELP:
            return self.manifest()
        validate_arguments(tid, tool.input_schema, args, strict=True)
        lane = self._lanes.choose(tool.name, tool.lane, args, tid)
        ctx = ToolContext(self, name, lane, provenance)
        async with self._lanes.admitted(name, lane, tid, timeout) as deadline:
            if timeout is None:
                return await self._invoke(tool, args, ctx, tid)
            try:
                with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                    return await self._invoke(tool, args, ctx, tid)
            except TimeoutError as exc:
                raise TimedOut(f"{name!r} did not finish within "
                               f"{_html.seconds_text(timeout)} s; it was cancelled part-way",
                               tool=tid) from exc

    async def _invoke(
        self, tool: _Tool, data: dict[str, Any], ctx: ToolContext, tid: ToolId | None
    ) -> Any:
        args: tuple[Any, ...] = (data, ctx) if tool.wants_ctx else (data,)
        try:
            if tool.is_async:
                return await tool.handler(*args)
            return await anyio.to_thread.run_sync(lambda: tool.handler(*args))
        except Exception as exc:
            detail = _html.shorten(f"{type(exc).__name__}: {exc}", _DETAIL_LIMIT)
            raise ToolFailed(detail, tool=tid) from exc

    # -- locks ------------------------------------------------------------------------------
    def exclusive(self, key: Hashable) -> contextlib.AbstractAsyncContextManager[None]:
        """One block at a time per ``key``; the lock is dropped when nobody holds or awaits it."""
        return self._lanes.exclusive(key)

    # -- the ToolClient protocol ------------------------------------------------------------
    def servers(self) -> list[str]:
        """The toolset's one address, as a list (the ``ToolClient`` protocol)."""
        return [self.address]

    def destination(self, tool: ToolId) -> Destination:
        """Always ``LOCAL``: the tools run in this process."""
        return Destination.LOCAL

    async def list_tools(self, server: str) -> list[ToolSpec]:
        """Every tool's spec, ``help`` included.

        Raises:
            Unreachable: ``server`` is not this toolset's address.
        """
        self._check_server(server, None)
        self._mark_reached()
        return self.specs()

    async def call(
        self, tool: ToolId, arguments: Mapping[str, Any], provenance: Provenance | None = None,
        *, timeout: float | None = None,
    ) -> Result:
        """Run one tool in process; with ``timeout``, a call still queued for its lane or a
        slot when it runs out is ``Unreachable`` (nothing ran), one running is ``TimedOut``."""
        self._check_server(tool.server, tool)
        args = check_arguments(tool, arguments)
        if "tool" in args:
            raise Refused(
                "an argument named \"tool\" cannot reach a Toolset handler: that key carries "
                "the tool name in the payload",
                tool=tool,
            )
        started = time.perf_counter()
        try:
            value = await self._dispatch(tool.tool, args, provenance, timeout=timeout)
        except ToolFailed as exc:
            exc.result = Result([{"type": "text", "text": exc.detail}], None, True,
                                time.perf_counter() - started, tool)
            raise
        except Refused as exc:
            if exc.tool is None:
                exc.tool = tool
            raise
        try:
            return result_from_value(value, tool, time.perf_counter() - started)
        except TypeError as exc:
            raise Malformed(str(exc), tool=tool) from exc

    def _check_server(self, server: str, tool: ToolId | None) -> None:
        if server != self.address:
            raise Unreachable(
                f"this Toolset answers for {self.address!r} only, not {server!r}", tool=tool
            )

    # -- serving and the connect_grace watch ------------------------------------------------
    async def serve(
        self,
        transport: Literal["stdio", "streamable-http"] = "stdio",
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
    ) -> None:
        """Serve every tool, ``help`` included, as an MCP server until cancelled.

        Over HTTP on a host that is not loopback, ``allowed_hosts`` and ``allowed_origins``
        (the Host and Origin headers a request may carry) are required.
        """
        check_target(transport, host, port, allowed_hosts, allowed_origins)
        self.start()
        try:
            await serve_toolset(self._served(), transport, host=host, port=port,
                                allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
        finally:
            self._watch.stop()  # it ended or failed: that is said loudly enough already

    def mcp_server(self) -> Server[Any]:
        """The same tools as an SDK low-level ``mcp.server.Server`` (for an in-process
        ``mcp.Client``, or to mount in your own ASGI app); ``serve`` runs one of these."""
        return build_server(self._served())

    def run(
        self,
        transport: Literal["stdio", "streamable-http"] = "stdio",
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
    ) -> None:
        """Serve and block (a server script's last line)."""
        anyio.run(lambda: self.serve(transport, host=host, port=port,
                                     allowed_hosts=allowed_hosts,
                                     allowed_origins=allowed_origins))

    @property
    def connect_grace(self) -> float | None:
        return self._watch.grace

    def start(self) -> None:
        """Begin the connect_grace watch: warn once on stderr if no caller reaches us in time."""
        self._watch.start()

    def _mark_reached(self) -> None:
        self._watch.reached()

    def _served(self) -> Served:
        """The narrow face the MCP server module gets (it never reaches into the Toolset)."""
        return Served(self.name, self.address, self.description, self.specs, self._dispatch,
                      self._mark_reached)

    def __repr__(self) -> str:
        tools = len(self._tools) - 1
        return f"Toolset({self.address!r}, tools={tools}, lanes={self._lanes.names()})"
