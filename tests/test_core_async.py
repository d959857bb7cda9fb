"""The core (ids, errors, client protocol, transports, routing) from a plain async program.

DESIGN.md, "Layers": the core can be used without the bench's shared loop. An McpClient round
trip inside ``anyio.run`` must therefore start no loop thread, and importing the transport
must not import the loop at all. Run in a fresh interpreter: in this one, other tests may
already have started the loop.
"""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import anyio
import pytest
from servers.memory import make_mem_server

from toolbench._core.client import Result
from toolbench._core.ids import ToolId
from toolbench._transports.mcp.client import McpClient

ROOT = Path(__file__).parent.parent
ECHO = [sys.executable, str(ROOT / "tests" / "servers" / "echo_server.py")]


@pytest.mark.slow
def test_mcp_round_trip_in_anyio_run_starts_no_loop_thread() -> None:
    code = textwrap.dedent(f"""
        import sys, threading
        import anyio
        import toolbench._transports.mcp.client
        from toolbench._core.ids import ToolId
        from toolbench._routing.router import ToolRouter

        async def main():
            async with toolbench._transports.mcp.client.McpClient({ECHO!r}, name="echo") as client:
                router = ToolRouter()
                router.server("echo", client)
                specs = await router.list_tools("echo")
                echoed = await router.call(ToolId("echo", "echo"), {{"text": "plain"}})
                added = await client.call(ToolId("echo", "add"), {{"a": 2, "b": 3}})
                return (sorted(s.name for s in specs), echoed.text, added.structured,
                        client.status, [t.name for t in threading.enumerate()])

        names, text, added, status, threads = anyio.run(main)
        print("tools", "echo" in names and "add" in names)
        print("text", text)
        print("added", added)
        print("status", status)
        print("threads", threads)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["tools"] == "True"
    assert lines["text"] == "plain"
    assert lines["added"] == "{'result': 5}"
    assert lines["status"] == "connected"
    assert "toolbench-loop" not in lines["threads"], lines["threads"]


ABOVE_THE_CORE = {"_loop", "_bench", "_notebook", "_cli", "demo"}
"""The folders (layers) above transports and routing."""


def _toolbench_imports(module: str) -> set[str]:
    """The toolbench modules (``_transports/mcp.py`` → ``_transports.mcp``) that ``module``
    imports anywhere in its source, lazily included."""
    source = ROOT / "toolbench" / (module.replace(".", "/") + ".py")
    tree = ast.parse(source.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "toolbench" and len(parts) > 1:
                found.add(".".join(parts[1:]))
    return found


def test_transports_and_routing_never_import_the_loop_or_above() -> None:
    """DESIGN.md, "Layers": lower layers never import higher ones, not even lazily."""
    seen: set[str] = set()
    todo = ["_transports.mcp.client", "_routing.router"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(m for m in _toolbench_imports(module)
                    if (ROOT / "toolbench" / (m.replace(".", "/") + ".py")).exists())
    assert {"_transports.mcp.client", "_transports.wire.stdio", "_transports.mcp.errors"} <= seen
    above = {m for m in seen if m.split(".")[0] in ABOVE_THE_CORE}
    assert not above, sorted(above)


def test_client_refuses_a_second_event_loop() -> None:
    """A client belongs to the loop it first ran on (as httpx's AsyncClient), and says so."""
    client = McpClient(make_mem_server(), name="mem")

    async def connect() -> None:
        await client.aconnect()

    async def call() -> Result:
        return await client.call(ToolId("mem", "add"), {"a": 1, "b": 1})

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(connect(), loop).result(30)
        with pytest.raises(RuntimeError, match="another event loop"):
            anyio.run(call)
        result = asyncio.run_coroutine_threadsafe(call(), loop).result(30)
        assert result.structured == {"result": 2}
    finally:
        asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
