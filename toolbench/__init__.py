"""toolbench: explore, call, record and compare tools from many MCP servers, in Jupyter."""

from toolbench._client import Result, ToolClient, ToolSpec
from toolbench._errors import (
    Disposition,
    Malformed,
    NameCollision,
    Refused,
    TimedOut,
    ToolError,
    ToolFailed,
    Unreachable,
)
from toolbench._ids import Destination, Egress, Provenance, ToolId
from toolbench._router import ToolRouter
from toolbench._toolbox import ToolBox, tool

__all__ = [
    "Destination",
    "Disposition",
    "Egress",
    "Malformed",
    "NameCollision",
    "Provenance",
    "Refused",
    "Result",
    "TimedOut",
    "ToolBox",
    "ToolClient",
    "ToolError",
    "ToolFailed",
    "ToolId",
    "ToolRouter",
    "ToolSpec",
    "Unreachable",
    "tool",
]

__version__ = "0.1.0"
