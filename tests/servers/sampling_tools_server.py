"""A server whose tools ask the client to sample its LLM with tools offered (2025-11-25+).

`python sampling_tools_server.py` serves it over stdio; `create()` in process.

- ``pick(question)``: one sampling request offering ``get_weather`` and ``geo.lookup`` (a
  name with a dot, which the OpenAI format rejects: the client must map it back); returns
  the client's reply as JSON (its content blocks, model, stop reason).
- ``finish(city)``: a request whose conversation already holds the model's tool use and
  the tool's result (text plus structured content); returns the reply the same way.
- ``plain(question)``: a request without tools.
"""

from __future__ import annotations

from typing import Annotated, Any

import mcp.types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Resolve, Sample

WEATHER = types.Tool(
    name="get_weather", description="The weather in a city now.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"]})
LOOKUP = types.Tool(
    name="geo.lookup", description="Where a place is.",
    input_schema={"type": "object", "properties": {"place": {"type": "string"}},
                  "required": ["place"]})


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _pick(question: str) -> Sample:
    return Sample([types.SamplingMessage(role="user", content=_text(question))],
                  max_tokens=200, system_prompt="Use a tool when one helps.",
                  tools=[WEATHER, LOOKUP])


def _finish(city: str) -> Sample:
    return Sample([
        types.SamplingMessage(role="user", content=_text(f"What is the weather in {city}?")),
        types.SamplingMessage(role="assistant", content=[types.ToolUseContent(
            type="tool_use", id="use-1", name="get_weather", input={"city": city})]),
        types.SamplingMessage(role="user", content=[types.ToolResultContent(
            type="tool_result", tool_use_id="use-1", content=[_text("Sunny")],
            structured_content={"celsius": 24})]),
    ], max_tokens=200, tools=[WEATHER])


def _plain(question: str) -> Sample:
    return Sample([types.SamplingMessage(role="user", content=_text(question))],
                  max_tokens=50)


def _shown(reply: types.CreateMessageResult | types.CreateMessageResultWithTools
           ) -> dict[str, Any]:
    return reply.model_dump(mode="json", by_alias=True, exclude_none=True)


def create() -> MCPServer:
    server = MCPServer("sampling-tools")

    @server.tool()
    async def pick(question: str, reply: Annotated[types.CreateMessageResultWithTools,
                                                    Resolve(_pick)]) -> dict[str, Any]:
        """Ask the client's model, offering two tools."""
        return _shown(reply)

    @server.tool()
    async def finish(city: str, reply: Annotated[types.CreateMessageResultWithTools,
                                                  Resolve(_finish)]) -> dict[str, Any]:
        """Ask the client's model after a tool already answered."""
        return _shown(reply)

    @server.tool()
    async def plain(question: str, reply: Annotated[types.CreateMessageResult,
                                                     Resolve(_plain)]) -> dict[str, Any]:
        """Ask the client's model without tools."""
        return _shown(reply)

    return server


if __name__ == "__main__":
    create().run("stdio")
