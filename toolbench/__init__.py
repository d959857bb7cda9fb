"""toolbench: explore, call, record and compare tools from many MCP servers, in Jupyter."""

from toolbench._bench.config import ConfigError, ConfigWarning
from toolbench._bench.diff import diff
from toolbench._bench.handles import ToolHandle
from toolbench._bench.journal import JournalWarning
from toolbench._bench.pins import PinWarning
from toolbench._bench.recording import serve_recording
from toolbench._bench.resources import ListingWarning
from toolbench._bench.snapshot_store import load_snapshot
from toolbench._core.client import Result, ToolClient, ToolSpec
from toolbench._core.contents import PromptResult, ReadResult
from toolbench._core.errors import (
    Disposition,
    Malformed,
    NameCollision,
    Refused,
    TimedOut,
    ToolError,
    ToolFailed,
    Unreachable,
)
from toolbench._core.ids import Destination, Egress, Provenance, ToolId
from toolbench._core.version import __version__ as __version__
from toolbench._notebook import accessor as _accessor
from toolbench._notebook import ask as _ask  # noqa: F401 - registers "ask" (sampling, elicitation)
from toolbench._notebook import signin as _signin  # noqa: F401 - the default sign-in (a card)
from toolbench._notebook.bench import Bench
from toolbench._notebook.display import show
from toolbench._routing.pegboard import PegBoard
from toolbench._routing.router import ToolRouter
from toolbench._transports.auth import ClientCredentials, OAuth
from toolbench._transports.mcp import McpClient
from toolbench._transports.toolbox import ToolBox, tool
from toolbench._transports.toolset import ToolContext, Toolset

__all__ = [
    "Bench",
    "ClientCredentials",
    "ConfigError",
    "ConfigWarning",
    "Destination",
    "Disposition",
    "Egress",
    "JournalWarning",
    "ListingWarning",
    "Malformed",
    "McpClient",
    "NameCollision",
    "OAuth",
    "PegBoard",
    "PinWarning",
    "PromptResult",
    "Provenance",
    "ReadResult",
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
    "diff",
    "load_snapshot",
    "serve_recording",
    "show",
    "tool",
]


# df.tb on every DataFrame, registered when pandas is imported; this does not import pandas.
_accessor.install()
