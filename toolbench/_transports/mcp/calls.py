"""The call path of one MCP connection: tools/call, and every other request's envelope.

``Requests`` is a base class of ``McpClient`` (``toolbench._transports.mcp.client``). A request
takes the live connection from the lifecycle (``Lifecycle._session``: connecting or
reconnecting first when needed), one of ``max_concurrent`` slots, and one timeout over all of
it; its failure is sorted into DESIGN.md's error table (``toolbench._transports.mcp.errors``)
with a ticket (``toolbench._transports.mcp.tracking``) that tells a request that never left
(``did_not_happen``) from one that got no answer (``in_doubt``). Only a transport failure
restarts the connection (``_lost``); an error reply never does.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp_types import RequestParamsMeta

from toolbench._core import html as _html
from toolbench._core.arguments import check_arguments
from toolbench._core.checks import seconds
from toolbench._core.client import Result, ToolSpec
from toolbench._core.errors import Malformed, ToolError, ToolFailed, Unreachable
from toolbench._core.ids import Provenance, ToolId, is_tool_name
from toolbench._core.redact import Redactor, describe
from toolbench._core.schema.validate import validate_output
from toolbench._transports.auth.state import AuthState
from toolbench._transports.mcp.attempt import Conn
from toolbench._transports.mcp.errors import (
    NotOffered,
    is_transport_failure,
    map_call_error,
    refused_connect,
)
from toolbench._transports.mcp.methods.tasks import call_as_task
from toolbench._transports.mcp.session import Status, TransportName
from toolbench._transports.mcp.tracking import TICKET, CallTicket
from toolbench._transports.server_requests import ServerRequests, call_error
from toolbench._transports.wire.limits import oversize

T = TypeVar("T")
ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
NOT_OFFERED = "does not offer"
"""In the message of a :class:`NotOffered`."""
REFUSAL_WAIT_S = 2.0
"""How long a failed HTTP call waits for its transport to report why it ended."""

_INF = math.inf


class Requests:
    """``call`` and ``request`` of ``McpClient``, and the error mapping they share.

    The attributes below are ``McpClient``'s; ``_session``, ``_lost`` and ``_primitives``
    are the lifecycle's (``toolbench._transports.mcp.lifecycle``).
    """

    name: str
    transport: TransportName
    _requests: ServerRequests | None
    _timeout: float
    _max_concurrent: int | None
    _limiter: anyio.CapacityLimiter | None
    _bound: asyncio.AbstractEventLoop | None
    _redact: Redactor
    _auth: AuthState | None
    _status: Status
    _conn: Conn | None
    _task_tools: frozenset[str]
    _output_schemas: dict[str, dict[str, Any]] | None

    if TYPE_CHECKING:
        def _primitives(self) -> anyio.Lock: ...

        async def _session(self, tool: ToolId | None, deadline: float = ...,
                           limit: float | None = ...) -> tuple[Conn, Client]: ...

        def _lost(self, conn: Conn, why: str) -> None: ...

        def check_server(self, server: str, tool: ToolId | None = None) -> None: ...

        async def list_tools(self, server: str) -> list[ToolSpec]: ...

    async def call(
        self,
        tool: ToolId,
        arguments: Mapping[str, Any] | None,
        provenance: Provenance | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressFn | None = None,
    ) -> Result:
        """Call one tool; every failure is a ToolError (``help(toolbench.ToolError)``).

        Args:
            tool: ``ToolId(name, tool)`` of this client's server.
            arguments: a JSON object (checked locally first: NaN, lone surrogates and
                non-JSON values are refused before anything is sent).
            provenance: sent along as the request's ``_meta``.
            timeout: seconds for this call (default: the client's ``timeout``).
            progress: called with ``(progress, total, message)`` as the server reports.

        Returns:
            The ``Result``: content blocks, structured content, latency.

        Raises:
            Refused: bad arguments, or the server refused the request.
            Unreachable: not sent (not connected, queued past the timeout, egress).
            TimedOut: sent, no answer in time: it may have run.
            ToolFailed: the tool ran and reported an error.
            Malformed: an answer that breaks the protocol or the output schema.
        """
        args = check_arguments(tool, arguments)
        self.check_server(tool.server, tool)
        # What the router hands down is a float it computed: the rule is checked for anything
        # else (NaN and infinity fail the comparison, and go to the check too).
        limit = (self._timeout if timeout is None
                 else timeout if type(timeout) is float and 0.0 < timeout < _INF
                 else seconds(timeout, "timeout"))
        meta = _meta(provenance)
        # The shared loop is asyncio: its clock is anyio's, read without anyio's backend
        # lookup (a few µs per read, twice per call).
        loop = asyncio.get_running_loop()
        if loop is not self._bound:
            self._primitives()  # binds a new client; refuses a second live loop
        deadline = loop.time() + limit
        conn, client = await self._session(tool, deadline, limit)
        limiter = await self._slot(deadline, limit, "call", tool)
        ticket = CallTicket(tracked=conn.tracker.active)
        task_ids: list[str] = []  # a tool that runs only as a task: the server's task id
        token = TICKET.set(ticket)
        try:
            started = time.perf_counter()
            try:
                client.session  # noqa: B018 - raises RuntimeError once the client has exited
            except RuntimeError as exc:
                raise Unreachable(
                    f"the connection to {self.name!r} closed before the call was sent", tool=tool
                ) from exc
            try:
                # Our own clock, not the SDK's read timeout: then a REQUEST_TIMEOUT error can
                # only be one the server sent, and a timeout before the hand-over is ours.
                # The call's one timeout scope: asyncio's, about half the cost of
                # anyio.fail_after per call; the bench adds no backstop around it.
                async with asyncio.timeout_at(deadline):
                    if tool.tool in self._task_tools:
                        raw = await call_as_task(client, tool, args, meta, task_ids.append)
                    else:
                        raw = await client.call_tool(
                            tool.tool, args, read_timeout_seconds=None,
                            progress_callback=cast("ProgressFnT | None", progress),
                            meta=cast("RequestParamsMeta | None", meta),
                        )
            except Exception as exc:
                error = await self._failure(exc, tool, limit, "call", ticket, conn)
                if self._requests is not None:  # a failed sampling/elicitation answer says so
                    error = call_error(error, exc, self._requests, self.name, started)
                if task_ids:  # the server's task was cancelled (tasks/cancel) on the way out
                    error.detail = f"{error.detail} (task {task_ids[0]})"
                    error.task_id = task_ids[0]  # type: ignore[attr-defined]  # the record's
                raise error from self._redact.cause(exc)
        finally:
            self._settled(ticket, token, conn, limiter)
        latency = time.perf_counter() - started
        result = self._result(raw, tool, latency)
        if task_ids:
            result.task_id = task_ids[0]
        if raw.is_error:
            # Redact before shortening: a cut must never leave half a secret behind.
            text = _html.shorten(self._redact(result.text or "(no text)"), 500)
            failed = ToolFailed(f"the tool reported an error: {text}", tool=tool, result=result)
            if self._requests is not None:
                raise call_error(failed, None, self._requests, self.name, started)
            raise failed
        return result

    async def request(self, method: str, send: Callable[[Client], Awaitable[T]], *,
                      timeout: float | None = None, offers: str | None = None) -> T:
        """One request other than a tool call (``resources/read``, ``prompts/get``, ...),
        sent as ``send(sdk_client)`` inside the same envelope as :meth:`call`.

        The envelope: connecting on first use, a ``max_concurrent`` slot, one timeout over
        all of it, and the error table, with a ticket that tells a request that never left
        (``did_not_happen``) from one that got no answer (``in_doubt``).

        Args:
            method: the MCP method, for the ticket and the error messages.
            send: makes the request through the entered SDK client.
            timeout: seconds for all of it (default: the client's ``timeout``).
            offers: a server capability (``"resources"``, ``"prompts"``) the request needs;
                a server whose capabilities lack it is refused before anything is sent.

        Raises:
            ToolError: as for :meth:`call`; ``Refused`` when ``offers`` is not offered.
        """
        limit = self._timeout if timeout is None else seconds(timeout, "timeout")
        loop = asyncio.get_running_loop()
        if loop is not self._bound:
            self._primitives()
        deadline = loop.time() + limit
        conn, client = await self._session(None, deadline, limit)
        if offers is not None and getattr(client.server_capabilities, offers, None) is None:
            raise NotOffered(f"server {self.name!r} {NOT_OFFERED} {offers} (its capabilities "
                          "list none); nothing was sent")
        limiter = await self._slot(deadline, limit, method, None)
        ticket = CallTicket(method=method, tracked=conn.tracker.active)
        token = TICKET.set(ticket)
        try:
            try:
                async with asyncio.timeout_at(deadline):
                    return await send(client)
            except Exception as exc:
                error = await self._failure(exc, None, limit, method, ticket, conn)
                raise error from self._redact.cause(exc)
        finally:
            self._settled(ticket, token, conn, limiter)

    async def _slot(self, deadline: float, limit: float, what: str,
                    tool: ToolId | None) -> anyio.CapacityLimiter | None:
        """One of ``max_concurrent`` slots, waited for within the request's timeout: the
        timeout covers connecting, queueing and the request, and what runs out before the
        request reaches the transport did not happen (Unreachable), never in doubt."""
        limiter = self._limiter
        if limiter is not None:
            with anyio.move_on_at(deadline) as queued:
                await limiter.acquire()
            if queued.cancelled_caught:
                raise Unreachable(
                    f"the {what} was not sent: it waited {_html.seconds_text(limit)} s for one of "
                    f"max_concurrent={self._max_concurrent} slots", tool=tool
                )
        return limiter

    async def _failure(self, exc: Exception, tool: ToolId | None, limit: float, method: str,
                       ticket: CallTicket, conn: Conn) -> ToolError:
        """A request's exception as the error table's ToolError (an HTTP connect that was
        refused under a sent request is found first: then it never reached the server)."""
        if (self.transport == "http" and ticket.sent and not ticket.error_reply
                and is_transport_failure(exc, ticket, connection_up=False)):
            ticket.refused = await self._refusal(conn, ticket)
        return self._mapped(exc, tool, limit, method, ticket=ticket, conn=conn)

    @staticmethod
    def _settled(ticket: CallTicket, token: Any, conn: Conn,
                 limiter: anyio.CapacityLimiter | None) -> None:
        TICKET.reset(token)
        if ticket.request_id is not None:  # tracked streams only (none in process)
            conn.tracker.forget(ticket)
        if limiter is not None:
            limiter.release()

    async def _check_output(self, name: str, result: types.CallToolResult) -> None:
        """The SDK's output check, bounded: the tool ran, so a mismatch is ``Malformed``.

        The schemas come from the last discovery (one bounded listing if there was none); a
        tool missing from it is not re-listed on every call, as the SDK would.
        """
        if self._output_schemas is None:  # never listed: discover once, bounded as always
            with contextlib.suppress(ToolError):
                await self.list_tools(self.name)
        schema = (self._output_schemas or {}).get(name)
        if schema is None:
            return
        tool = ToolId(self.name, name) if is_tool_name(name) else None
        if result.structured_content is None and "structured_content" not in (
            result.model_fields_set
        ):
            raise Malformed("the tool declares an output schema but returned no structured "
                            "content", tool=tool)
        validate_output(tool, schema, result.structured_content)

    def _mapped(
        self, exc: Exception, tool: ToolId | None, limit: float, action: str,
        *, ticket: CallTicket | None = None, conn: Conn | None = None,
    ) -> ToolError:
        too_large = oversize(exc)  # the transport dropped an oversized reply unread
        if too_large is not None:
            if self._conn is not None:
                self._lost(self._conn, too_large)
            return Malformed(f"the {action} failed: {too_large}", tool=tool)
        # Only a transport failure restarts the connection; an error reply never does.
        conn = conn if conn is not None else self._conn
        up = (conn is not None and conn is self._conn and self._status is Status.CONNECTED
              and not conn.done.is_set())
        busy = (conn.busy.pop(ticket.request_id) if conn is not None and ticket is not None
                and not isinstance(exc, ToolError) else None)
        if busy is not None:  # the SDK's -32603 stand-in for a 429/503: nothing ran
            where = f"server {self.name!r}"
            error = Unreachable(f"{where} answered the {action} with {busy.describe()}; "
                                "it ran nothing", tool=tool)
            error.retry_after = busy.retry_after
            return error
        if self._auth is not None and not isinstance(exc, ToolError):
            denied = self._auth.explain(ticket.request_id if ticket is not None else None,
                                        action, tool, action)
            if denied is not None:
                denied.detail = self._redact(denied.detail)
                return denied
        if not isinstance(exc, ToolError) and conn is not None and is_transport_failure(
            exc, ticket, up
        ):
            self._lost(conn, describe(exc, self._redact))
        return map_call_error(exc, tool, timeout=limit, redact=self._redact, action=action,
                              ticket=ticket, connection_up=up)

    async def _refusal(self, conn: Conn, ticket: CallTicket) -> BaseException | None:
        """The HTTP connect failure that ended this call's POST, if that is what happened.

        The SDK reports any transport failure as "Connection closed"; the reason is the
        exception the transport ended with, which the owner task records when it exits.
        """
        with anyio.move_on_after(REFUSAL_WAIT_S):
            await conn.done.wait()
        return refused_connect(conn.error, ticket)

    def _result(self, raw: Any, tool: ToolId, latency: float) -> Result:
        try:
            content = [
                # A plain text block (the usual answer) as pydantic would dump it, without
                # pydantic's ~3 µs per block.
                {"type": "text", "text": block.text}
                if type(block) is types.TextContent and block.annotations is None
                and block.meta is None
                else block.model_dump(by_alias=True, exclude_none=True, mode="json")
                for block in raw.content
            ]
            structured = raw.structured_content
            meta = raw.meta
        except Exception as exc:
            raise Malformed(f"unreadable tool result: {describe(exc, self._redact)}",
                            tool=tool) from exc
        if structured is not None and not isinstance(structured, dict):
            raise Malformed(
                f"structuredContent is {type(structured).__name__}, not an object", tool=tool
            )
        result = Result(content, structured, bool(raw.is_error), latency, tool)
        if meta:  # as parsed from the wire: plain JSON values (a shallow copy costs ~0.1 µs)
            result.meta = dict(meta) if isinstance(meta, dict) else {"_meta": meta}
        return result


def _meta(provenance: Provenance | None) -> dict[str, Any] | None:
    if provenance is None:
        return None
    if not isinstance(provenance, Provenance):
        raise TypeError(f"provenance must be a Provenance, not {type(provenance).__name__}")
    return provenance.as_meta()

