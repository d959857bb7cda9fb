"""Listings of one MCP connection: the one paginator, and ``tools/list`` read tool by tool.

**One paginator** (:func:`paginate`) serves every listing (tools, resources, resource
templates, prompts), with the same bounds (DESIGN.md, "The trust boundary"): it follows
``nextCursor`` at most ``MAX_PAGES`` pages and ``max_tools`` items, the whole within
``connect_timeout``; a repeated cursor is ``Malformed``, the other bounds ``Unreachable``.

**A tools page is read tool by tool.** The SDK's ``Client.list_tools`` validates the page
as a whole: a single tool without an ``inputSchema`` (or with any field of the wrong type)
fails it, and the server lists no tools at all. Here the page is received as plain JSON, each
tool is validated on its own, a tool that fails is skipped with its reason (DESIGN.md, "Be
all-or-nothing by accident"), and the rest is handed to the session exactly as its own
``list_tools`` would (``_absorb_tool_listing``: the 2026 header rules and per-tool state).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import mcp_types as types
import pydantic

from toolbench._core import html as _html
from toolbench._core.client import ToolSpec
from toolbench._core.errors import Malformed, Unreachable
from toolbench._core.offload import off_loop
from toolbench._transports.mcp import about as mcp_about
from toolbench._transports.mcp.methods import hints as _hints
from toolbench._transports.mcp.methods.tasks import requires_task
from toolbench._transports.wire.limits import oversize

if TYPE_CHECKING:
    from toolbench._transports.mcp.session import McpSession

T = TypeVar("T")
MAX_PAGES = 10_000
"""Pages one listing may take: a paginator that never ends must not hang discovery."""

SKIP_UNREADABLE = "its declaration is not a valid MCP tool"


@dataclass(frozen=True, slots=True)
class ToolListing:
    """One whole ``tools/list``: what the client keeps of it (``McpClient.list_tools``)."""

    specs: list[ToolSpec]
    output_schemas: dict[str, dict[str, Any]]
    """Each tool's output schema, for the bounded check of its results."""
    task_tools: frozenset[str]
    """The tools that run only as tasks (``toolbench._transports.mcp.methods.tasks``)."""
    skipped: list[tuple[str, str]]
    """``(name, reason)`` of each tool skipped as unreadable."""


async def paginate(mcp: McpSession, what: str, method: str,
                   page: Callable[[str | None], Awaitable[tuple[list[T], str | None]]],
                   ) -> list[T]:
    """Every item of one listing: ``await page(cursor)`` gives ``(items, next_cursor)``.

    Raises:
        Unreachable: more than ``max_tools`` items or ``MAX_PAGES`` pages, or longer than
            ``connect_timeout`` (nothing of the listing is kept).
        Malformed: the server repeated a cursor (the list would never end).
    """
    items: list[T] = []
    seen: set[str] = set()
    cursor: str | None = None
    pages = 0
    with anyio.move_on_after(mcp.connect_timeout):
        while pages < MAX_PAGES:
            found, cursor = await page(cursor)
            pages += 1
            if len(items) + len(found) > mcp.max_tools:
                raise Unreachable(f"server {mcp.name!r} lists more than max_tools="
                                  f"{mcp.max_tools:,} {what}; listing stopped after {pages} pages")
            items.extend(found)
            if cursor is None:
                return items
            if cursor in seen:
                raise Malformed(f"server {mcp.name!r} repeated the {method} cursor "
                                f"{_html.shorten(cursor, 60)!r}; the list never ends")
            seen.add(cursor)
        raise Unreachable(f"server {mcp.name!r} sent more than {MAX_PAGES:,} pages of {what} "
                          f"({len(items):,} so far); listing stopped")
    raise Unreachable(f"listing the {what} of {mcp.name!r} took longer than connect_timeout="
                      f"{mcp.connect_timeout:g} s ({len(items):,} in {pages} pages so far)")


async def list_tools(mcp: McpSession, server: str) -> ToolListing:
    """Every tool of ``server`` (see :meth:`McpClient.list_tools`), never from the SDK's cache,
    with the output schemas, the task-only tools and what was skipped (the client keeps them).
    Within the freshness the server's cache hints gave the last listing (2026-07-28), that
    listing is served again and nothing is sent (``methods.hints``)."""
    mcp.check_server(server)
    kept = mcp.responses.get("tools/list", "")
    if kept is not None:
        return cast(ToolListing, kept)
    with _hints.capture() as got:
        listing, pages = await _list_tools(mcp)
    if len(got) == pages:  # a hint per page read, else nothing is known to be fresh
        mcp.responses.put("tools/list", "", listing, _hints.combined(got))
    return listing


async def _list_tools(mcp: McpSession) -> tuple[ToolListing, int]:
    client = await mcp._client(None)
    pages = 0
    unreadable: list[tuple[str, str]] = []  # tools the SDK's page validation would reject

    async def page(cursor: str | None) -> tuple[list[types.Tool], str | None]:
        try:
            with anyio.fail_after(mcp.timeout):
                listed, skipped = await list_tools_page(client, cursor)
        except Exception as exc:
            error = mcp._mapped(exc, None, mcp.timeout, "tools/list")
            if oversize(exc) is not None:
                raise Unreachable(f"discovering the tools of {mcp.name!r} failed: "
                                  f"{error.detail}") from mcp._redact.cause(exc)
            raise error from mcp._redact.cause(exc)
        nonlocal pages
        pages += 1
        unreadable.extend(skipped)
        return listed.tools, listed.next_cursor

    tools = await paginate(mcp, "tools", "tools/list", page)
    specs = await off_loop(lambda: [spec(tool) for tool in tools], len(tools))
    return ToolListing(
        specs,
        {s.name: s.output_schema for s in specs if s.output_schema is not None},
        frozenset(tool.name for tool in tools if requires_task(tool)),
        unreadable,
    ), pages


def spec(tool: types.Tool) -> ToolSpec:
    """A listed tool as a ``ToolSpec``: its declaration as plain JSON, and its extras."""
    def plain(value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        if hasattr(value, "model_dump"):
            return cast(dict[str, Any], value.model_dump(by_alias=True, exclude_none=True))
        return dict(value)

    return ToolSpec(
        name=tool.name,
        description=tool.description or "",
        input_schema=plain(tool.input_schema) or {"type": "object"},
        output_schema=plain(tool.output_schema),
        annotations=plain(tool.annotations),
        title=tool.title,
        **extras(tool),
    )


class _Page(types.PaginatedResult):
    """``ListToolsResult`` with its tools left unread."""

    tools: list[Any]


def _why(error: pydantic.ValidationError) -> str:
    errors = error.errors()
    if not errors:
        return SKIP_UNREADABLE
    where = ".".join(str(p) for p in errors[0]["loc"]) or "(the tool)"
    return f"{SKIP_UNREADABLE}: {where}: {_html.shorten(str(errors[0]['msg']), 120)}"


async def list_tools_page(client: Any, cursor: str | None,
                          ) -> tuple[types.ListToolsResult, list[tuple[str, str]]]:
    """One page (``cursor``), and ``(name, reason)`` for each tool that was skipped."""
    session = client.session
    params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
    # The session's send_request validates the whole result against the method's schema
    # (one bad tool fails the page), so the request is stamped and sent as the session's
    # own ``listen`` driver does, and the page is read leniently here.
    data = types.ListToolsRequest(params=params).model_dump(by_alias=True, mode="json",
                                                            exclude_none=True)
    opts: dict[str, Any] = {}
    session._stamp(data, opts)
    received = await session._dispatcher.send_raw_request(data["method"], data.get("params"),
                                                          opts)
    raw = _Page.model_validate(received, by_name=False)
    items = raw.tools
    tools, skipped = await off_loop(lambda: _read_tools(items), len(items))
    if raw.next_cursor is not None and not isinstance(raw.next_cursor, str):
        raise Malformed("tools/list returned a nextCursor that is not a string")
    page = types.ListToolsResult(tools=tools, next_cursor=raw.next_cursor)
    absorb = getattr(session, "_absorb_tool_listing", None)
    if callable(absorb):  # the SDK's per-tool state (2026 header rules), as its list_tools
        page = absorb(page, complete=cursor is None and raw.next_cursor is None)
    return page, skipped


def _read_tools(items: list[Any]) -> tuple[list[types.Tool], list[tuple[str, str]]]:
    """A page's tools, each validated on its own, and ``(name, reason)`` for each skipped."""
    tools: list[types.Tool] = []
    skipped: list[tuple[str, str]] = []
    for index, item in enumerate(items):
        try:
            tools.append(types.Tool.model_validate(item))
        except pydantic.ValidationError as exc:
            name = item.get("name") if isinstance(item, dict) else None
            shown = (_html.shorten(name, 128) if isinstance(name, str)
                     else f"(tool #{index + 1} of the page)")
            skipped.append((shown, _why(exc)))
    return tools, skipped


def extras(tool: types.Tool) -> dict[str, Any]:
    """A tool's icons, ``_meta`` and execution, capped (``ToolSpec`` fields)."""
    execution = tool.execution
    return {
        "icons": mcp_about.icons(getattr(tool, "icons", None)),
        "meta": mcp_about.meta(getattr(tool, "meta", None)),
        "execution": (execution.model_dump(by_alias=True, exclude_none=True, mode="json")
                      if execution is not None else None),
    }
