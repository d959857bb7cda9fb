"""toolbench: explore, call, record and compare tools from many MCP servers, in Jupyter."""

from toolbench import _accessor
from toolbench._bench import Bench
from toolbench._client import Result, ToolClient, ToolSpec
from toolbench._config import ConfigError, ConfigWarning
from toolbench._display import show
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
from toolbench._handles import ToolHandle
from toolbench._ids import Destination, Egress, Provenance, ToolId
from toolbench._journal import JournalWarning
from toolbench._mcp import McpClient
from toolbench._pegboard import PegBoard
from toolbench._router import ToolRouter
from toolbench._toolbox import ToolBox, tool
from toolbench._toolset import ToolContext, Toolset

__all__ = [
    "Bench",
    "ConfigError",
    "ConfigWarning",
    "Destination",
    "Disposition",
    "Egress",
    "JournalWarning",
    "Malformed",
    "McpClient",
    "NameCollision",
    "PegBoard",
    "Provenance",
    "Refused",
    "Result",
    "TimedOut",
    "ToolBox",
    "ToolClient",
    "ToolContext",
    "ToolError",
    "ToolFailed",
    "ToolHandle",
    "ToolId",
    "ToolRouter",
    "ToolSpec",
    "Toolset",
    "Unreachable",
    "show",
    "tool",
]

__version__ = "0.1.0"

# df.tb on every DataFrame, registered when pandas is imported; this does not import pandas.
_accessor.install()
