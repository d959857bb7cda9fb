"""One MCP connection as the modules around it see it: its status, and the ``McpSession`` face.

``McpClient`` (``toolbench._transports.mcp.client``) is built from the modules of this package,
and most of them need a little of it back: a request module sends through its envelope, a
listing reads its bounds. They type against :class:`McpSession`, declared here, below all of
them, and never import ``McpClient``; so the package has no import circle, and what each
module may use of the client is written down in one place.
"""

from __future__ import annotations

import contextvars
import enum
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from mcp import Client

    from toolbench._core.errors import ToolError
    from toolbench._core.ids import ToolId
    from toolbench._core.redact import Redactor
    from toolbench._transports.mcp.methods.hints import ResponseCache

T = TypeVar("T")

TransportName = Literal["stdio", "http", "sse", "in-process"]


class Status(enum.StrEnum):
    """Where a connection stands; the values are what ``status`` and ``bench.servers`` show."""

    NEW = "new"
    """Never connected: the first call connects."""
    CONNECTED = "connected"
    LOST = "lost"
    """It was connected and the connection ended: the next call reconnects once."""
    FAILED = "failed"
    """The last (re)connect failed: retried by a call after the backoff window."""
    CLOSED = "closed"


RECONNECTABLE = frozenset({Status.NEW, Status.LOST, Status.FAILED})
"""The statuses in which the next request (re)connects (``toolbench._transports.mcp.recovery``)."""

SEND_CHECK: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "toolbench_send_check", default=None)
"""Set by a caller (the bench's pin gate) around one request: called once the request has its
session, after any reconnect and its re-list, and before anything is sent; what it raises
(a ``ToolError``) is the request's error, and nothing is sent."""


class McpSession(Protocol):
    """What the request modules (``toolbench._transports.mcp.methods``) use of a connection.

    ``McpClient`` is the one implementation. The underscored members are its own, shared with
    the modules of this package only: the redactor of the connection's secrets, the entered
    SDK client, and the error mapping every failure goes through.
    """

    name: str
    _redact: Redactor
    responses: ResponseCache
    """Fresh answers kept as the server's cache hints say (``methods.hints``)."""

    @property
    def timeout(self) -> float:
        """Seconds each request may take, unless it says otherwise."""
        ...

    @property
    def connect_timeout(self) -> float:
        """Seconds connecting, and each whole listing, may take."""
        ...

    @property
    def max_tools(self) -> int:
        """The most items a listing may hold."""
        ...

    @property
    def max_message_bytes(self) -> int:
        """The largest message read from the server."""
        ...

    def check_server(self, server: str, tool: ToolId | None = None) -> None:
        """Refuse, before anything is sent, a request for a server this client does not serve."""
        ...

    async def request(self, method: str, send: Callable[[Client], Awaitable[T]], *,
                      timeout: float | None = None, offers: str | None = None) -> T:
        """One request other than a tool call, in the envelope every request shares."""
        ...

    async def _client(self, tool: ToolId | None) -> Client:
        """The entered SDK client, connecting or reconnecting first when needed."""
        ...

    def _mapped(self, exc: Exception, tool: ToolId | None, limit: float,
                action: str) -> ToolError:
        """``exc`` sorted into the error table (a transport failure restarts the connection)."""
        ...
