"""McpClient driven from synchronous test code on the shared loop, as a Bench drives it.

``McpClient`` is purely async (DESIGN.md, "Layers"); the blocking face belongs to the Bench.
Tests of the transport that run in plain threads (and of the loop's interrupt handling) hand
each async method to the shared loop here, which is exactly what a Bench does for its calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolbench._core.client import Result, ToolSpec
from toolbench._core.ids import Provenance, ToolId
from toolbench._loop import get_loop
from toolbench._transports.mcp.client import McpClient


class LoopClient(McpClient):
    """An McpClient with blocking helpers that run its async methods on the shared loop."""

    def connect(self) -> None:
        get_loop().run(self.aconnect)

    def close(self) -> None:
        get_loop().run(self.aclose)

    def call_sync(self, tool: ToolId, arguments: Mapping[str, Any] | None,
                  provenance: Provenance | None = None, **options: Any) -> Result:
        return get_loop().run(self.call, tool, arguments, provenance, **options)

    def list_tools_sync(self, server: str) -> list[ToolSpec]:
        return get_loop().run(self.list_tools, server)

    def __enter__(self) -> LoopClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
