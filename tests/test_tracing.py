"""OpenTelemetry: the bench's span per call nests under the caller's span, on the shared loop's
thread, with the SDK's own request span below it; no payloads unless asked. The real
``opentelemetry-sdk`` with its in-memory exporter."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb

trace_sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.util._once import Once  # noqa: E402

ECHO = str(Path(__file__).parent / "servers" / "echo_server.py")
SECRET = "env-secret-for-the-tracing-test"


@pytest.fixture(scope="module")
def provider() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    """A real tracer provider with an in-memory exporter, set for this module (the API allows
    one global provider per process, and the SDK's tracer binds to the first one it sees;
    reset after, as OpenTelemetry's own tests do, so other modules run untraced)."""
    exporter = InMemorySpanExporter()
    made = trace_sdk.TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(exporter))
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    trace.set_tracer_provider(made)
    try:
        yield made, exporter
    finally:
        made.shutdown()
        trace._TRACER_PROVIDER_SET_ONCE = Once()
        trace._TRACER_PROVIDER = None


@pytest.fixture
def spans(provider: tuple[Any, InMemorySpanExporter]) -> InMemorySpanExporter:
    provider[1].clear()
    return provider[1]


def _in_process() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("mem")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def fail() -> str:
        raise ValueError("no")

    return server


def _ours(exporter: InMemorySpanExporter) -> list[Any]:
    """The bench's spans (an in-process server's own SERVER spans share their names)."""
    return [s for s in exporter.get_finished_spans()
            if s.instrumentation_scope is not None and s.instrumentation_scope.name == "toolbench"]


def _by_name(exporter: InMemorySpanExporter) -> dict[str, Any]:
    return {span.name: span for span in _ours(exporter)}


def test_an_in_process_call_nests_under_the_cell_s_span(spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("the-notebook")
    with tb.Bench() as bench:
        bench.connect("mem", _in_process())
        with tracer.start_as_current_span("cell") as cell:
            assert bench.call("mem-echo", text="hi").text == "hi"
        found = _by_name(spans)
        ours = found["tools/call echo"]
        assert ours.parent is not None
        assert ours.parent.span_id == cell.get_span_context().span_id
        assert ours.context.trace_id == cell.get_span_context().trace_id
        attributes = dict(ours.attributes)
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["gen_ai.tool.name"] == "echo"
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["toolbench.disposition"] == "landed"
        assert attributes["toolbench.attempts"] == 1
        assert attributes["toolbench.call_id"] == bench.records.iloc[-1]["call_id"]
        assert not any(k.startswith("gen_ai.tool.call.") for k in attributes)  # no payloads
        assert "hi" not in repr(attributes)
        assert ours.kind == trace.SpanKind.INTERNAL


@pytest.mark.slow
def test_a_stdio_call_has_the_sdk_s_request_span_below_the_bench_s(
        spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("the-notebook")
    with tb.Bench(trace_payloads=True) as bench:
        bench.connect("e", [sys.executable, ECHO], env={"TOOLBENCH_TEST_SECRET": SECRET})
        spans.clear()
        with tracer.start_as_current_span("cell") as cell:
            bench.call("e-echo", text="over the pipe")
        found = _by_name(spans)
        ours = found["tools/call echo"]
        sdk = [s for s in spans.get_finished_spans() if s.name.startswith("MCP send tools/call")]
        assert len(sdk) == 1, [s.name for s in spans.get_finished_spans()]
        assert ours.parent is not None and ours.parent.span_id == cell.get_span_context().span_id
        assert sdk[0].parent is not None and sdk[0].parent.span_id == ours.context.span_id
        assert sdk[0].kind == trace.SpanKind.CLIENT  # the one client span: the SDK's
        assert dict(ours.attributes)["network.transport"] == "pipe"
        assert "over the pipe" in dict(ours.attributes)["gen_ai.tool.call.arguments"]
        bench.call("e-echo", text=f"a secret: {SECRET}")  # the server's secret, said back
        texts = repr([dict(s.attributes) for s in spans.get_finished_spans()])
        assert SECRET not in texts  # redacted, payloads and all


def test_payloads_only_when_asked_and_a_failure_is_an_error_span(
        spans: InMemorySpanExporter) -> None:
    with tb.Bench(trace_payloads=True) as bench:
        bench.connect("mem", _in_process())
        bench.call("mem-echo", text="shown")
        with pytest.raises(tb.ToolError):
            bench.call("mem-fail")
        finished = _ours(spans)
        echo = next(s for s in finished if s.name == "tools/call echo")
        assert "shown" in dict(echo.attributes)["gen_ai.tool.call.arguments"]
        assert "shown" in dict(echo.attributes)["gen_ai.tool.call.result"]
        failed = next(s for s in finished if s.name == "tools/call fail")
        assert failed.status.status_code == trace.StatusCode.ERROR
        assert dict(failed.attributes)["error.type"] == bench.records.iloc[-1]["error_type"]
    with pytest.raises(TypeError, match="trace_payloads"):
        tb.Bench(trace_payloads="yes")  # type: ignore[arg-type]


def test_without_a_tracer_provider_no_span_is_made(spans: InMemorySpanExporter) -> None:
    from toolbench._bench.calls.tracing import _tracer

    kept = trace._TRACER_PROVIDER
    trace._TRACER_PROVIDER = None  # as in a process where nobody set one
    try:
        assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
        assert _tracer() is None
        with tb.Bench() as bench:
            bench.connect("mem", _in_process())
            assert bench.call("mem-echo", text="x").text == "x"
    finally:
        trace._TRACER_PROVIDER = kept
    assert _ours(spans) == []


def test_a_map_s_calls_each_have_a_span_under_the_caller_s(
        spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("the-notebook")
    with tb.Bench() as bench:
        bench.connect("mem", _in_process())
        with tracer.start_as_current_span("cell") as cell:
            bench.map("mem-echo", [{"text": str(i)} for i in range(5)], progress=False)
        ours = [s for s in _ours(spans) if s.name == "tools/call echo"]
        assert len(ours) == 5
        assert {s.parent.span_id for s in ours if s.parent} == {cell.get_span_context().span_id}
        assert len({dict(s.attributes)["toolbench.batch"] for s in ours}) == 1


def test_an_awaited_call_nests_under_the_awaiting_task_s_span(
        spans: InMemorySpanExporter) -> None:
    import asyncio

    tracer = trace.get_tracer("the-notebook")
    with tb.Bench() as bench:
        bench.connect("mem", _in_process())

        async def cell() -> Any:
            with tracer.start_as_current_span("async cell") as span:
                await bench.acall("mem-echo", text="awaited")
                return span

        parent = asyncio.run(cell())
        ours = _by_name(spans)["tools/call echo"]
        assert ours.parent is not None
        assert ours.parent.span_id == parent.get_span_context().span_id


def test_payloads_that_cannot_be_encoded_leave_the_call_its_own_error(
        spans: InMemorySpanExporter) -> None:
    """With ``trace_payloads``, arguments nested past the encoder's depth (refused before
    sending) still end the call with its own ``Refused``: the span says it could not show
    them, instead of raising the encoder's RecursionError out of ``bench.call``."""
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"a": deep}
    with tb.Bench(trace_payloads=True) as bench:
        bench.connect("mem", _in_process())
        with pytest.raises(tb.Refused):
            bench.call("mem-echo", text=deep)
    attributes = dict(_by_name(spans)["tools/call echo"].attributes)
    assert attributes["toolbench.disposition"] == "did_not_happen"
    assert attributes["gen_ai.tool.call.arguments"] == "(cannot be shown: nested too deeply)"
