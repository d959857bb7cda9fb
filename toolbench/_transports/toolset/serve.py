"""A Toolset as a real MCP server, over stdio or streamable HTTP at ``/mcp``, and the watch
that warns when a started toolset is never reached.

Built on the SDK's low-level ``mcp.server.Server`` rather than ``MCPServer``: ``MCPServer``
derives each tool's schema from a Python signature, hides a failing tool's message, and answers
an unknown tool with an ``isError`` result. A Toolset needs the opposite on every count: the
schemas its author wrote, passed through verbatim; the handler's error text; and a refusal
(nothing ran) told apart from a failure (it ran), so that a client can map it to ``Refused``.
So every call goes through the toolset's own dispatch (caps, lanes and validation
included), handed over as a :class:`Served`, and:

- a value becomes a result exactly as in process (``result_from_value``);
- ``ToolFailed`` and a non-JSON value become an ``isError`` result (the tool ran);
- ``Refused`` becomes the JSON-RPC error ``INVALID_PARAMS`` (nothing ran).

**Who may reach it over HTTP.** The SDK checks the ``Host`` and ``Origin`` headers (its
``TransportSecuritySettings``, against DNS rebinding) only when it serves on ``127.0.0.1``,
``localhost`` or ``::1``; on any other host it silently checks nothing. So a toolset served on
a host that is not loopback must be given ``allowed_hosts`` and ``allowed_origins`` and is
refused with a ``ValueError`` naming the host and the keywords otherwise; every other loopback
address gets the SDK's loopback protection spelled out.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import ipaddress
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from toolbench._core.client import result_from_value
from toolbench._core.errors import Refused, ToolFailed
from toolbench._core.ids import Provenance

if TYPE_CHECKING:
    from toolbench._core.client import ToolSpec

HTTP_PATH = "/mcp"
_SDK_LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""Hosts for which ``streamable_http_app`` turns on Host/Origin checking by itself."""


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


@dataclass(frozen=True)
class Served:
    """What serving needs of a Toolset, handed over by the Toolset itself: its names, its
    specs, the one door every call goes through, and a way to say a client reached it. The
    server sees nothing else of the Toolset."""

    name: str
    address: str
    description: str
    specs: Callable[[], list[ToolSpec]]
    dispatch: Callable[[str, Mapping[str, Any], Provenance | None], Awaitable[Any]]
    reached: Callable[[], None]


def build_server(toolset: Served) -> Server[Any]:
    """The toolset's tools as a low-level MCP server; every call reaches its dispatch."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        toolset.reached()
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
            value = await toolset.dispatch(params.name, arguments, _provenance(ctx.meta))
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


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host`` (``localhost`` or a loopback address)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_list(keyword: str, value: object) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(f"{keyword} must be a list of strings, not {value!r}")
    items = list(value)
    bad = [v for v in items if not isinstance(v, str) or not v.strip()]
    if bad:
        raise ValueError(f"{keyword} must hold non-empty strings; got {bad[0]!r}")
    return items


def check_target(transport: object, host: object, port: object,
                 allowed_hosts: object = None, allowed_origins: object = None) -> None:
    """Refuse a bad transport, host, port or exposure before anything starts.

    Served over HTTP on anything but loopback, the toolset is reachable from other machines
    and from any web page a browser on the network shows (DNS rebinding): it must be told
    which ``Host`` and ``Origin`` headers to accept. On loopback the SDK's own protection
    (this machine's names only) applies unless lists are given.
    """
    if transport not in ("stdio", "streamable-http"):
        raise ValueError(
            f"unknown transport {transport!r}: a Toolset serves 'stdio' or 'streamable-http'"
        )
    if not isinstance(host, str) or not host:
        raise ValueError(f"host must be a non-empty string, not {host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an int from 0 to 65535, not {port!r}")
    hosts = _host_list("allowed_hosts", allowed_hosts)
    origins = _host_list("allowed_origins", allowed_origins)
    if transport == "stdio":
        if hosts is not None or origins is not None:
            raise ValueError("allowed_hosts and allowed_origins apply to 'streamable-http', "
                             "not to 'stdio'")
        return
    if hosts is not None and not hosts:
        raise ValueError("allowed_hosts is empty, so every request would be refused; list "
                         "the Host headers clients use (e.g. 'tools.example.org:8000')")
    if is_loopback(host):
        return
    missing = [k for k, v in (("allowed_hosts", hosts), ("allowed_origins", origins))
               if v is None]
    if missing:
        raise ValueError(
            f"serving streamable-http on host {host!r}, which is not a loopback address, "
            f"needs {' and '.join(f'{k}=[...]' for k in missing)}: the Host header values "
            f"(e.g. allowed_hosts=['tools.example.org:{port}']) and browser Origin values "
            "(e.g. allowed_origins=['https://app.example.org'], or [] for none) a request "
            "may carry; anything else is refused (DNS-rebinding protection)"
        )


def security_settings(host: str, allowed_hosts: Iterable[str] | None,
                      allowed_origins: Iterable[str] | None,
                      ) -> TransportSecuritySettings | None:
    """The SDK's Host/Origin checking for ``host``; ``None`` leaves the SDK's loopback default."""
    if allowed_hosts is None and allowed_origins is None:
        if host in _SDK_LOOPBACK:
            return None  # the SDK protects these itself: this machine's names, any port
        if is_loopback(host):  # another loopback address: the same protection, spelled out
            name = f"[{host}]" if ":" in host else host
            return TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=[f"{name}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=[f"http://{name}:*", "http://127.0.0.1:*",
                                 "http://localhost:*", "http://[::1]:*"],
            )
        raise ValueError(f"host {host!r} is not loopback: allowed_hosts and allowed_origins "
                         "are required")  # check_target says so first; a backstop
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(allowed_hosts or ()),
        allowed_origins=list(allowed_origins or ()),
    )


async def serve_toolset(
    toolset: Served,
    transport: Literal["stdio", "streamable-http"],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
) -> None:
    check_target(transport, host, port, allowed_hosts, allowed_origins)
    if transport == "stdio":
        await _serve_stdio(toolset)
    else:
        await _serve_http(toolset, host, port,
                          security_settings(host, allowed_hosts, allowed_origins))


async def _serve_stdio(toolset: Served) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(toolset)
    async with stdio_server() as (read_stream, write_stream):
        toolset.reached()  # the pipes are open: a client can reach us now
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(toolset: Served, host: str, port: int,
                      security: TransportSecuritySettings | None) -> None:
    import uvicorn

    class ToolsetServer(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:  # only a bound socket makes us reachable
                toolset.reached()

    app = build_server(toolset).streamable_http_app(streamable_http_path=HTTP_PATH, host=host,
                                                    transport_security=security)
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
