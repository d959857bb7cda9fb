"""What every call to one tool in one operation shares, worked out once: a call's plan.

Why: in a ``map`` every case goes to the same tool, and a fast server answers in tens of
microseconds, so re-deriving per call what cannot differ between the calls (the timeout, the
server's pacing bucket, its secret hider, the names records show, whether the client bounds
itself, the spec whose input schema the arguments are checked against) was a share of the
map's time that the SDK does not pay (issue 46).

What stays per call, because it can change between two calls of one map and DESIGN promises
it per call: the pins' verdict (a re-list mid-map may block the tool: the guard is asked on
every call), the argument check itself, the intent, the record. What the plan caches is
re-checked cheaply on every call (:meth:`CallPlan.current`): the pegboard's board is
immutable and swapped on every listing, so one identity test says whether the tool was
re-listed (then its spec, and so its validator, is looked up again), and the server's row
is replaced on every connect (then its timeout, bucket and secrets are read again).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from toolbench._bench.servers.naming import Target
from toolbench._core.errors import ToolError

if TYPE_CHECKING:
    from toolbench._bench.calls.retry import Pacing
    from toolbench._bench.servers.servers import Servers
    from toolbench._core.rates import TokenBucket
    from toolbench._core.redact import Redactor
    from toolbench._routing.pegboard import PegBoard
    from toolbench._routing.router import ToolRouter


@dataclass(slots=True)
class CallPlan:
    """One tool's calls in one operation: what they share, and what it was derived from."""

    target: Target
    timeout: float | None
    """The operation's own timeout (None: the server's, else the bench's)."""
    batch_bucket: TokenBucket | None
    """The operation's own rate for this server (``map(..., rate=)``), if any."""
    limit: float = 0.0
    buckets: list[TokenBucket] = field(default_factory=list)
    redact: Redactor | None = None
    tool_shown: str = ""
    name_shown: str = ""
    bound: bool = False
    """Whether the router's client bounds its own calls (no backstop scope is needed)."""
    seen_board: object = None
    seen_row: object = None

    def current(self, servers: Servers, pegboard: PegBoard, router: ToolRouter,
                pacing: Pacing) -> CallPlan:
        """The plan, re-derived if the tool was re-listed or its server reconnected since.

        Cheap when nothing changed: two identity tests (the server's own bucket is keyed by
        its row, so an unchanged row means an unchanged bucket).
        """
        board = pegboard.board
        row = servers.row(self.target.tool.server)
        if board is self.seen_board and row is self.seen_row:
            return self
        if board is not self.seen_board and self.seen_board is not None:
            self.target = relisted(pegboard, self.target)
        self.seen_board, self.seen_row = board, row
        server = self.target.tool.server
        own_bucket = pacing.bucket(server)
        self.limit = servers.limit(server, self.timeout)
        self.buckets = [b for b in (own_bucket, self.batch_bucket) if b is not None]
        self.redact = servers.redactor(server)
        tool, name = self.target.tool.tool, self.target.name
        if self.redact is not None:
            tool, name = self.redact(tool), self.redact(name)
        self.tool_shown, self.name_shown = tool, name
        self.bound = router.bounds_itself(self.target.tool)
        return self


def relisted(pegboard: PegBoard, target: Target) -> Target:
    """``target`` as the pegboard lists it now: the same tool's new spec (so a changed input
    schema is what the next call is checked against); unchanged when the name is gone or
    names another tool now (the call goes where it went, and its server answers for it)."""
    try:
        entry = pegboard.entry(target.name)
    except ToolError:  # re-listed without it: the pins' guard, or the server, says so
        return target
    if entry.tool_id != target.tool:
        return target
    return Target(entry.name, entry.tool_id, entry.spec)
