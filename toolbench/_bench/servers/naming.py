"""Names on the bench: a tool's pegboard name (or ``tool://`` reference) resolved to the tool,
and a prompt's prefixed name.

Both only read the pegboard (``toolbench._routing.pegboard``), so every part of the bench can
use them: the calls, the pins (``approve`` takes a pegboard name), the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolbench._core.errors import Unreachable
from toolbench._core.ids import ToolId

if TYPE_CHECKING:
    from toolbench._core.client import ToolSpec
    from toolbench._routing.pegboard import PegBoard


@dataclass
class Target:
    """A resolved name: the pegboard name, the tool it routes to and its declared spec."""

    name: str
    tool: ToolId
    spec: ToolSpec | None


def resolve(pegboard: PegBoard, name: object) -> Target:
    """The tool a pegboard name or a ``tool://server/tool`` reference names.

    Raises:
        TypeError: ``name`` is not a str.
        Unreachable: a malformed reference, or no such tool.
    """
    if not isinstance(name, str):
        raise TypeError(f"a tool name is a str, not {type(name).__name__} {name!r}")
    if name.startswith("tool://"):
        tid = ToolId.parse(name)
        if tid is None:
            raise Unreachable(f"malformed reference {name!r}: expected tool://server/tool")
        for entry in pegboard.entries(tid.server):
            if entry.tool == tid.tool:
                return Target(entry.name, tid, entry.spec)
        raise Unreachable(f"no tool {tid.tool!r} on server {tid.server!r}", tool=tid)
    entry = pegboard.entry(name)
    return Target(entry.name, entry.tool_id, entry.spec)


def prompt_name(pegboard: PegBoard, server: str, prompt: str) -> str:
    """A prompt's prefixed name: its server's tool namespace, the separator, its own name."""
    namespace = pegboard.namespace_of(server)
    namespace = server if namespace is None else namespace
    return f"{namespace}{pegboard.separator}{prompt}" if namespace else prompt
