"""toolbench: explore, call, record and compare tools from many MCP servers, in Jupyter."""

from toolbench import models as models  # tb.models.sampler, tb.models.openai, ...
from toolbench._bench.catalog.handles import ToolHandle
from toolbench._bench.clients.locations import client_configs
from toolbench._bench.journal.journal import JournalWarning
from toolbench._bench.models.cases import load_cases
from toolbench._bench.models.model import Reply, ScriptedModel
from toolbench._bench.models.run import Run
from toolbench._bench.overtime.diff import diff
from toolbench._bench.overtime.pins import PinWarning
from toolbench._bench.overtime.snapshot_store import load_snapshot
from toolbench._bench.replay.serve import serve_recording
from toolbench._bench.report.rules import report_rules
from toolbench._bench.servers.config import ConfigError, ConfigWarning
from toolbench._bench.servers.servers import ListingWarning
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
from toolbench._notebook import accessor as _accessor  # noqa: F401 - df.tb, once pandas is
from toolbench._notebook.ask import ask as _ask  # noqa: F401 - registers "ask" (sampling, elicitation)
from toolbench._notebook.ask import inputs as _inputs  # noqa: F401 - VS Code inputs (a form)
from toolbench._notebook.ask import signin as _signin  # noqa: F401 - the default sign-in (a card)
from toolbench._notebook.bench import Bench
from toolbench._notebook.views.display import show
from toolbench._routing.pegboard import PegBoard
from toolbench._routing.router import ToolRouter
from toolbench._transports.auth.state import ClientCredentials, OAuth
from toolbench._transports.mcp.client import McpClient
from toolbench._transports.toolbox import ToolBox, tool
from toolbench._transports.toolset.toolset import ToolContext, Toolset

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
    "Reply",
    "Result",
    "Run",
    "ScriptedModel",
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
    "client_configs",
    "diff",
    "load_cases",
    "load_snapshot",
    "report_rules",
    "serve_recording",
    "show",
    "tool",
]

