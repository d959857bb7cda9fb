"""OpenTelemetry: one span of the bench's own around each tool call, when tracing is on.

The SDK already opens a CLIENT span for every JSON-RPC request it sends (``MCP send
tools/call {tool}``, ``mcp/shared/_otel.py``) and puts its trace context into the request's
``_meta``. The bench's calls run on the shared loop's thread, so the caller's context is
carried there (``toolbench._loop``), and the SDK's spans nest under the span current in the
cell. This module adds what only the bench knows, in one span per call, named and
attributed as OpenTelemetry's semantic conventions for MCP say (``{mcp.method.name}
{target}``: ``tools/call {tool}``; ``mcp.method.name``, ``gen_ai.tool.name``,
``gen_ai.operation.name``, ``mcp.protocol.version``, ``network.transport``, ``error.type``)
plus the bench's own ``toolbench.*`` attributes: the disposition, the attempts, the call id,
the batch and the cell. It is an INTERNAL span, the parent of the SDK's CLIENT span: one
call (all its attempts, the argument check, the journal) over the one request on the wire,
so no request is counted twice (in process there is no SDK span; this one is then the only).

**Nothing happens unless tracing is on**: with no tracer provider set (the API's proxy), a
call costs one lookup and no span is made; nothing is exported unless the user configured
an exporter. ``opentelemetry`` is imported only here and only when a call is made (the API
comes with the ``mcp`` SDK; the SDK proper is the ``otel`` extra).

**No payloads, no secrets.** Arguments and results become attributes
(``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``) only with
``Bench(trace_payloads=True)``, and then as the record holds them, redacted and capped; the
tool's name is the one records show (a tool named after a secret, redacted).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from toolbench._bench.journal.record import Record
    from toolbench._bench.servers.naming import Target
    from toolbench._bench.servers.servers import Servers

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
MAX_PAYLOAD_CHARS = 4_096
"""The most of an argument set or a result a span attribute holds (``trace_payloads``)."""
TRANSPORTS = {"stdio": "pipe", "http": "tcp", "sse": "tcp"}
"""``network.transport`` per transport (the conventions' values); in process: none."""


_trace: Any = None  # opentelemetry.trace, imported on the first call


def _tracer() -> Any | None:
    """The tracer, or None when no tracer provider is set (tracing is off: no span at all;
    under 1 µs a call, measured)."""
    global _trace
    if _trace is None:
        from opentelemetry import trace

        _trace = trace
    if isinstance(_trace.get_tracer_provider(), _trace.ProxyTracerProvider):
        return None
    from toolbench._core.version import __version__

    return _trace.get_tracer("toolbench", __version__)


def _capped(value: Any) -> str:
    """A payload as JSON text, capped; never an exception (the span must not change the
    call's outcome): arguments refused as nested too deeply reach here too."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
    except RecursionError:
        return "(cannot be shown: nested too deeply)"
    except (TypeError, ValueError) as exc:
        return f"(cannot be shown: {type(exc).__name__})"
    return text if len(text) <= MAX_PAYLOAD_CHARS else text[:MAX_PAYLOAD_CHARS] + "…"


def _before(servers: Servers, target: Target, tool_shown: str) -> dict[str, Any]:
    server = target.tool.server
    row = servers.row(server)
    attributes: dict[str, Any] = {
        "mcp.method.name": "tools/call", "gen_ai.tool.name": tool_shown,
        "gen_ai.operation.name": "execute_tool", "toolbench.server": server}
    transport = TRANSPORTS.get(row.transport) if row is not None else None
    if transport is not None:
        attributes["network.transport"] = transport
    mcp = getattr(row.connection, "mcp", None) if row is not None else None
    protocol = getattr(mcp, "server_info", {}).get("protocol") if mcp is not None else None
    if isinstance(protocol, str):
        attributes["mcp.protocol.version"] = protocol
    return attributes


def _after(record: Record, payloads: bool, redact: Callable[[str], str] | None
           ) -> dict[str, Any]:
    prov = record.provenance or {}
    attempts = getattr(record, "attempts", None)  # retries keep every attempt (issue 47)
    count = len(attempts) if isinstance(attempts, list | tuple) else (
        attempts if isinstance(attempts, int) else 1)
    attributes: dict[str, Any] = {
        "toolbench.call_id": record.call_id, "toolbench.disposition": record.disposition,
        "toolbench.ok": record.ok, "toolbench.attempts": max(1, count)}
    if record.batch is not None:
        attributes["toolbench.batch"] = record.batch
    if isinstance(prov.get("cell"), int):
        attributes["toolbench.cell"] = prov["cell"]
    if record.error_type is not None:
        attributes["error.type"] = record.error_type
    if payloads:  # the server's secrets (env, header values) hidden, as everywhere
        shown = redact or (lambda text: text)
        attributes["gen_ai.tool.call.arguments"] = shown(_capped(record.arguments))
        result = record.structured if record.structured is not None else record.text
        if result is not None:
            attributes["gen_ai.tool.call.result"] = shown(_capped(result))
    return attributes


def traced(invoke: F) -> F:
    """Wrap ``Calls.invoke`` in the call's span (see the module); as it is when tracing is
    off. The span ends with the call's record: its disposition, attempts and error."""

    @functools.wraps(invoke)
    async def wrapper(calls: Any, target: Target, *args: Any, **kwargs: Any) -> Any:
        tracer = _tracer()
        if tracer is None:
            return await invoke(calls, target, *args, **kwargs)
        from opentelemetry.trace import SpanKind, Status, StatusCode

        tool_shown = calls.shown(target)[0]
        with tracer.start_as_current_span(
                f"tools/call {tool_shown}", kind=SpanKind.INTERNAL,
                attributes=_before(calls.servers, target, tool_shown),
                record_exception=False) as span:
            outcome = await invoke(calls, target, *args, **kwargs)
            record = outcome[0]
            span.set_attributes(_after(record, calls.trace_payloads,
                                       calls.servers.redactor(target.tool.server)))
            if not record.ok:
                span.set_status(Status(StatusCode.ERROR, record.error_type or "error"))
            return outcome

    return wrapper  # type: ignore[return-value]
