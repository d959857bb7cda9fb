"""One page of ``tools/list``, read tool by tool, so one broken tool cannot sink the page.

The SDK's ``Client.list_tools`` validates the page as a whole: a single tool without an
``inputSchema`` (or with any field of the wrong type) fails it, and the server lists no
tools at all. Here the page is received as plain JSON, each tool is validated on its own, a
tool that fails is skipped with its reason (DESIGN.md, "Be all-or-nothing by accident"),
and the rest is handed to the session exactly as its own ``list_tools`` would
(``_absorb_tool_listing``: the 2026 header rules and per-tool state).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pydantic

from toolbench._core import html as _html
from toolbench._core.errors import Malformed
from toolbench._transports import mcp_about

SKIP_UNREADABLE = "its declaration is not a valid MCP tool"


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
    tools: list[types.Tool] = []
    skipped: list[tuple[str, str]] = []
    for index, item in enumerate(raw.tools):
        try:
            tools.append(types.Tool.model_validate(item))
        except pydantic.ValidationError as exc:
            name = item.get("name") if isinstance(item, dict) else None
            shown = (_html.shorten(name, 128) if isinstance(name, str)
                     else f"(tool #{index + 1} of the page)")
            skipped.append((shown, _why(exc)))
    if raw.next_cursor is not None and not isinstance(raw.next_cursor, str):
        raise Malformed("tools/list returned a nextCursor that is not a string")
    page = types.ListToolsResult(tools=tools, next_cursor=raw.next_cursor)
    absorb = getattr(session, "_absorb_tool_listing", None)
    if callable(absorb):  # the SDK's per-tool state (2026 header rules), as its list_tools
        page = absorb(page, complete=cursor is None and raw.next_cursor is None)
    return page, skipped


def extras(tool: types.Tool) -> dict[str, Any]:
    """A tool's icons, ``_meta`` and execution, capped (``ToolSpec`` fields)."""
    execution = tool.execution
    return {
        "icons": mcp_about.icons(getattr(tool, "icons", None)),
        "meta": mcp_about.meta(getattr(tool, "meta", None)),
        "execution": (execution.model_dump(by_alias=True, exclude_none=True, mode="json")
                      if execution is not None else None),
    }
