"""The tool specs' face on ``Bench``: ``tool_specs``, the bench's tools as a model API takes
them.

``SpecFaces`` holds no state: ``tool_specs`` keeps its signature and docstring here and hands
off to :func:`bench_specs`, a function of the collaborators it reads (the pegboard's current
listing, and each server's secret hider), like the bench's tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from toolbench._bench.models.runs import offered_tools
from toolbench._bench.models.specs import FORMATS, ToolSpecs, secret_free_specs

if TYPE_CHECKING:
    from toolbench._bench.servers.servers import Servers
    from toolbench._routing.pegboard import PegBoard


class SpecFaces:
    """The bench's tools for a model API; a face over the pegboard's listing."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        connections: Servers
        pegboard: PegBoard

    def tool_specs(self, format: str = "openai", servers: str | Iterable[str] | None = None,
                   tools: str | Iterable[str] | None = None) -> ToolSpecs:
        """The bench's tools as a model API takes them, with names it accepts.

        A pegboard name the provider's name rule rejects (``files-read.file`` for OpenAI,
        whose names are ``^[a-zA-Z0-9_-]{1,64}$``) is sanitized and given a short stable
        hash (``files-read_file_83f79e``); ``specs.names`` maps every provider-facing name
        back, and ``specs.pegboard_name(name)`` turns a model's tool call into the name
        ``bench.call`` takes. Two tools whose sanitized names would collide are both kept,
        told apart. A schema form the provider documents it rejects is listed in
        ``specs.warnings`` (the catalog report's portability rules; ``tb.report_rules()``),
        never silently rewritten. Only a tool's name, description and input schema are
        copied (everything the server declared, for ``mcp``), never a server's config, and
        a server's secrets (env, headers) are hidden wherever its tools show them.

        Args:
            format: ``"openai"`` (``{"type": "function", "function": {"name",
                "description", "parameters"}}``, for Chat Completions and the many
                OpenAI-compatible APIs), ``"anthropic"`` (``{"name", "description",
                "input_schema"}``), ``"gemini"`` (function declarations: ``{"name",
                "description", "parameters"}``) or ``"mcp"`` (the tools as ``tools/list``
                gives them, under their pegboard names).
            servers: only these servers' tools (default: every server's).
            tools: only these tools (pegboard names, or a tool's own name).

        Returns:
            ``ToolSpecs``: a sequence of the provider's tool dicts (pass ``list(specs)``
            as ``tools=``), with ``format``, ``names``, ``warnings`` and ``pegboard_name``.

        Raises:
            ValueError: an unknown ``format``, a server that is not on the bench, or a tool
                no chosen server has.

        Example:
            >>> specs = bench.tool_specs("anthropic")               # doctest: +SKIP
            >>> client.messages.create(..., tools=list(specs))      # doctest: +SKIP
            >>> bench.call(specs.pegboard_name(block.name), block.input)  # doctest: +SKIP
        """
        return bench_specs(self.connections, self.pegboard, format, servers, tools)


def bench_specs(connections: Servers, pegboard: PegBoard, format: str,
                servers: str | Iterable[str] | None, tools: str | Iterable[str] | None
                ) -> ToolSpecs:
    """``bench.tool_specs``: the chosen tools of the current listing, each server's secrets
    hidden, in ``format``'s shape."""
    if format not in FORMATS:
        raise ValueError(f"format {format!r} is not one of {', '.join(FORMATS)}")
    return secret_free_specs(connections, pegboard, offered_tools(pegboard, servers, tools),
                             format)
