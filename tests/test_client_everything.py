"""Completions and subscriptions through a Bench against the real reference server,
server-everything 2026.8.31 (npm; ``.ci/run`` installs it), over stdio and streamable HTTP:
``completable-prompt`` suggests departments, then names narrowed by the chosen department;
a template's argument completes; a subscribed resource's updates arrive as ``bench.logs``
rows of kind ``resource_updated`` and stop after ``unsubscribe``. The same against the SDK's
own 2026-07-28 server in process (``subscriptions/listen``), and an ambiguous template.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer
from servers import everything

import toolbench as tb

_why_not = everything.node_missing()
pytestmark = pytest.mark.slow

needs_everything = pytest.mark.skipif(
    _why_not is not None, reason=f"server-everything needs Node.js: {_why_not}")
DOC = "demo://resource/static/document/features.md"


def _wait_for(condition: Callable[[], bool], seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> Iterator[Any]:
    if _why_not is not None:
        pytest.skip(f"server-everything needs Node.js: {_why_not}")
    if request.param == "stdio":
        yield everything.stdio_command()
    else:
        with everything.streamable_http() as url:
            yield url


def _updates(bench: tb.Bench, uri: str) -> int:
    logs = bench.logs
    return int(((logs["kind"] == "resource_updated") & (logs["message"] == uri)).sum())


@needs_everything
def test_completions_of_a_prompt_and_a_template(target: Any) -> None:
    with tb.Bench(timeout=30, connect_timeout=60) as bench:
        bench.connect("everything", target)
        prompt = "everything-completable-prompt"
        assert bench.complete(prompt, "department", "") == ["Engineering", "Sales",
                                                            "Marketing", "Support"]
        assert bench.complete(prompt, "department", "S") == ["Sales", "Support"]
        assert bench.complete(prompt, "name", "", {"department": "Engineering"}) == [
            "Alice", "Bob", "Charlie"]
        assert bench.complete(prompt, "name", "", {"department": "Nope"}) == []
        template = "demo://resource/dynamic/text/{resourceId}"
        values = bench.complete(template, "resourceId", "1")
        assert values and all(v.startswith("1") for v in values)
        assert bench.complete(("everything", template), "resourceId", "1") == values
        with pytest.raises(tb.Unreachable, match="no connected server offers a prompt"):
            bench.complete("everything-no-such-prompt", "x", "")
        with pytest.raises(tb.Unreachable, match="resource template"):
            bench.complete("demo://nothing/{id}", "id", "")


@needs_everything
def test_subscribe_and_unsubscribe(target: Any) -> None:
    with tb.Bench(timeout=30, connect_timeout=60) as bench:
        bench.connect("everything", target)
        bench.subscribe("everything", DOC)
        assert bench.subscriptions() == {"everything": [DOC]}
        bench.call("everything-toggle-subscriber-updates")  # one at once, then every 5 s
        assert _wait_for(lambda: _updates(bench, DOC) >= 1)
        row = bench.logs[bench.logs["kind"] == "resource_updated"].iloc[-1]
        assert row["server"] == "everything" and row["data"] == {"uri": DOC}
        bench.unsubscribe("everything", DOC)
        assert bench.subscriptions() == {}
        seen = _updates(bench, DOC)
        time.sleep(6)  # one update period: none arrives for an unsubscribed URI
        assert _updates(bench, DOC) == seen
        with pytest.raises(tb.Refused, match="not subscribed"):
            bench.unsubscribe("everything", DOC)
        with pytest.raises(tb.Refused, match="a resource URI"):
            bench.subscribe("everything", "no scheme")


def modern_server(name: str = "modern") -> MCPServer:
    server = MCPServer(name)

    @server.resource("memo://{key}")
    def memo(key: str) -> str:
        """A memo."""
        return f"memo {key}"

    @server.resource("memo://fixed")
    def fixed() -> str:
        return "fixed"

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Say that ``uri`` changed."""
        await ctx.notify_resource_updated(uri)
        return "ok"

    return server


def test_subscriptions_on_a_2026_connection() -> None:
    with tb.Bench() as bench:
        bench.connect("modern", modern_server())
        assert bench.servers.set_index("name").loc["modern", "protocol"] == "2026-07-28"
        bench.subscribe("modern", "memo://fixed")
        bench.call("modern-touch", uri="memo://fixed")
        assert _wait_for(lambda: _updates(bench, "memo://fixed") == 1, 10)
        bench.call("modern-touch", uri="memo://other")  # not subscribed: nothing
        bench.subscribe("modern", "memo://b")
        bench.call("modern-touch", uri="memo://b")
        assert _wait_for(lambda: _updates(bench, "memo://b") == 1, 10)
        bench.unsubscribe("modern", "memo://fixed")
        bench.call("modern-touch", uri="memo://fixed")
        bench.call("modern-touch", uri="memo://b")
        assert _wait_for(lambda: _updates(bench, "memo://b") == 2, 10)
        assert _updates(bench, "memo://fixed") == 1
        assert _updates(bench, "memo://other") == 0


def test_an_ambiguous_template_names_the_servers() -> None:
    with tb.Bench() as bench:
        bench.connect("one", modern_server("one"))
        bench.connect("two", modern_server("two"))
        with pytest.raises(ValueError, match=r"offered by \['one', 'two'\]"):
            bench.complete("memo://{key}", "key", "")
