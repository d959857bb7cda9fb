"""A Toolset as a real MCP server, over stdio or streamable HTTP at ``/mcp``, and the watch
that warns when a started toolset is never reached.

Built on the SDK's low-level ``mcp.server.Server`` rather than ``MCPServer``: ``MCPServer``
derives each tool's schema from a Python signature, hides a failing tool's message, and answers
an unknown tool with an ``isError`` result. A Toolset needs the opposite on every count: the
schemas its author wrote, passed through verbatim; the handler's error text; and a refusal
(nothing ran) told apart from a failure (it ran), so that a client can map it to ``Refused``.
So every call goes through ``Toolset._dispatch`` (caps, lanes and validation included) and:

- a value becomes a result exactly as in process (``result_from_value``);
- ``ToolFailed`` and a non-JSON value become an ``isError`` result (the tool ran);
- ``Refused`` becomes the JSON-RPC error ``INVALID_PARAMS`` (nothing ran).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import sys
import threading
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from toolbench._client import result_from_value
from toolbench._errors import Refused, ToolFailed
from toolbench._ids import Provenance

if TYPE_CHECKING:
    from toolbench._toolset import Toolset

HTTP_PATH = "/mcp"


class GraceWatch:
    """Warns once on stderr when a started toolset is not reached within ``grace`` seconds.

    A toolset that was started but never served (a forgotten ``serve``, a port nobody
    listens on) otherwise fails in silence: its callers just wait. One daemon timer per
    watch, cancelled the moment a caller arrives; safe from any thread or event loop.
    """

    def __init__(self, address: str, grace: float | None) -> None:
        if grace is not None and (
            isinstance(grace, bool) or not isinstance(grace, (int, float)) or not grace >= 0
        ):
            raise ValueError(
                f"connect_grace must be a number of seconds >= 0, or None for no watch, "
                f"not {grace!r}"
            )
        self.address = address
        self.grace = None if grace is None else float(grace)
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self.is_reached = False
        self.warned = False

    def start(self) -> None:
        with self._lock:
            if self.grace is None or self._timer is not None or self.is_reached or self.warned:
                return
            timer = threading.Timer(self.grace, self._expired)
            timer.name = f"toolbench-toolset-grace-{self.address}"
            timer.daemon = True
            self._timer = timer
        timer.start()

    def reached(self) -> None:
        if self.is_reached:  # the hot path: one attribute read per request
            return
        with self._lock:
            self.is_reached = True
        self.stop()

    def stop(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    @property
    def pending(self) -> bool:
        return self._timer is not None

    def _expired(self) -> None:
        with self._lock:
            if self.is_reached or self.warned or self._timer is None:
                return
            self.warned = True
            self._timer = None
        message = (
            f"toolbench: toolset {self.address!r} was started {self.grace:g} s ago but no "
            "caller has reached it (no deliver, call or serve); is it being served?\n"
        )
        with contextlib.suppress(Exception):  # a closed stderr must not kill the timer thread
            sys.stderr.write(message)
            sys.stderr.flush()


def _provenance(meta: Any) -> Provenance | None:
    raw = meta.get(Provenance.META_KEY) if isinstance(meta, dict) else None
    try:
        return Provenance.from_dict(raw) if isinstance(raw, dict) else None
    except (TypeError, ValueError):
        return None  # someone else's malformed _meta never blocks the call


def build_server(toolset: Toolset) -> Server[Any]:
    """The toolset's tools as a low-level MCP server; every call reaches ``_dispatch``."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        toolset._mark_reached()
        return types.ListToolsResult(
            tools=[
                types.Tool(name=s.name, description=s.description, input_schema=s.input_schema)
                for s in toolset.specs()
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if "tool" in arguments:
            raise MCPError(
                types.INVALID_PARAMS,
                'an argument named "tool" cannot reach a Toolset handler: that key carries '
                "the tool name in the payload",
            )
        try:
            value = await toolset._dispatch(params.name, arguments, _provenance(ctx.meta))
        except Refused as exc:
            raise MCPError(types.INVALID_PARAMS, exc.detail) from exc
        except ToolFailed as exc:
            return _error_result(exc.detail)
        try:
            result = result_from_value(value, None, None)
        except TypeError as exc:
            return _error_result(str(exc))
        return types.CallToolResult(
            content=[types.TextContent(text=b["text"]) for b in result.content],
            structured_content=result.structured,
        )

    def input_schema(name: str) -> dict[str, Any] | None:
        for spec in toolset.specs():
            if spec.name == name:
                return spec.input_schema
        return None

    return Server(
        toolset.name,
        version=_version(),
        description=toolset.description or None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )


def _version() -> str:
    try:
        return importlib.metadata.version("toolbench")
    except importlib.metadata.PackageNotFoundError:
        return ""


def _error_result(detail: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=detail)], is_error=True)


def check_target(transport: object, host: object, port: object) -> None:
    """Refuse a bad transport, host or port before anything starts."""
    if transport not in ("stdio", "streamable-http"):
        raise ValueError(
            f"unknown transport {transport!r}: a Toolset serves 'stdio' or 'streamable-http'"
        )
    if not isinstance(host, str) or not host:
        raise ValueError(f"host must be a non-empty string, not {host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an int from 0 to 65535, not {port!r}")


async def serve_toolset(
    toolset: Toolset,
    transport: Literal["stdio", "streamable-http"],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
) -> None:
    check_target(transport, host, port)
    if transport == "stdio":
        await _serve_stdio(toolset)
    else:
        await _serve_http(toolset, host, port)


async def _serve_stdio(toolset: Toolset) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(toolset)
    async with stdio_server() as (read_stream, write_stream):
        toolset._mark_reached()  # the pipes are open: a client can reach us now
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(toolset: Toolset, host: str, port: int) -> None:
    import uvicorn

    class ToolsetServer(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:  # only a bound socket makes us reachable
                toolset._mark_reached()

    app = build_server(toolset).streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                            log_config=None)  # a library must not reconfigure logging
    server = ToolsetServer(config)
    try:
        await server.serve()
    except SystemExit as exc:  # uvicorn exits the process when it cannot bind; we raise
        if server.started:
            raise
        raise OSError(
            f"toolset {toolset.address!r} could not serve on http://{host}:{port}{HTTP_PATH} "
            f"(uvicorn startup failed with exit code {exc.code}; is the port in use?)"
        ) from None
