"""Resources, resource templates and prompts of one MCP connection (``McpClient``'s requests).

Kept apart from the connection code in ``toolbench._transports.mcp.client``; ``McpClient``'s
``list_resources``, ``list_resource_templates``, ``read_resource``, ``list_prompts`` and
``get_prompt`` are one line each that call these. Every failure goes through the same
mapping as a tool call (``McpClient._mapped``, DESIGN.md's error table), with a
``CallTicket`` for the request's own method, so a request that never left is
``did_not_happen`` and one that got no answer is ``in_doubt``. A listing, a read and a
prompt fetch are idempotent (MCP defines them as reads), so the server's error reply to one
is ``Refused`` with its code and message, whatever the code (DESIGN.md, "Errors"), never
``in_doubt``; only a timeout or a lost connection is ``TimedOut`` here, and then it means
only that no answer came: asking again is safe.

Bounds (DESIGN.md, "The trust boundary"), as for tools: a listing goes through the one
paginator (``toolbench._transports.mcp.methods.listing.paginate``), each page within ``timeout``.
A read whose contents exceed ``max_message_bytes`` is ``Malformed`` on every transport
(stdio and HTTP drop such a message before it is parsed and restart the connection; in
process there is no message, so the contents are measured here).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import mcp_types as types
from mcp_types import RequestParamsMeta

from toolbench._core import html as _html
from toolbench._core.contents import PromptResult, ReadResult
from toolbench._core.errors import Malformed, Refused
from toolbench._core.ids import Provenance
from toolbench._transports.mcp import about as mcp_about
from toolbench._transports.mcp.methods import hints as _hints
from toolbench._transports.mcp.methods.listing import paginate

if TYPE_CHECKING:
    from mcp import Client

    from toolbench._transports.mcp.session import McpSession

MAX_URI_CHARS = 8192
"""A URI longer than this is refused before sending (no real resource needs more)."""


def _plain(value: Any) -> Any:
    if value is None:
        return None
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return value


async def _list_all(mcp: McpSession, server: str, what: str, method: str, field: str,
                    page: Callable[[Client, str | None], Awaitable[Any]],
                    row: Callable[[Any], dict[str, Any]]) -> list[dict[str, Any]]:
    """Every item of a listing, through the one paginator (``listing.paginate``); each
    page is one request in the client's envelope. Within the freshness the server's cache
    hints gave the last listing, that one is served again and nothing is sent."""
    mcp.check_server(server)
    kept = mcp.responses.get(method, "")
    if kept is not None:
        return cast("list[dict[str, Any]]", kept)
    pages = 0

    async def one(cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        nonlocal pages
        answer = await mcp.request(method, functools.partial(_page, page, cursor), offers=what)
        pages += 1
        return [row(item) for item in getattr(answer, field) or []], answer.next_cursor

    with _hints.capture() as got:
        rows = await paginate(mcp, what, method, one)
    if len(got) == pages:  # a hint per page read, else nothing is known to be fresh
        mcp.responses.put(method, "", rows, _hints.combined(got))
    return rows


async def _page(page: Callable[[Client, str | None], Awaitable[Any]], cursor: str | None,
                sdk: Client) -> Any:
    return await page(sdk, cursor)


def _resource_row(item: types.Resource) -> dict[str, Any]:
    row = {"name": item.name, "uri": str(item.uri), "title": item.title,
           "description": item.description, "mime_type": item.mime_type, "size": item.size,
           "annotations": _plain(item.annotations)}
    meta = mcp_about.meta(item.meta)  # an MCP App view's fallback _meta.ui; capped like a tool's
    if meta is not None:  # only when declared: a listing's rows stay as they were otherwise
        row["meta"] = meta
    return row


def _template_row(item: types.ResourceTemplate) -> dict[str, Any]:
    return {"name": item.name, "uri": str(item.uri_template), "title": item.title,
            "description": item.description, "mime_type": item.mime_type, "size": None,
            "annotations": _plain(item.annotations)}


def _prompt_row(item: types.Prompt) -> dict[str, Any]:
    return {"prompt": item.name, "title": item.title, "description": item.description,
            "arguments": [_plain(a) for a in item.arguments or []]}


async def list_resources(mcp: McpSession, server: str) -> list[dict[str, Any]]:
    """Every resource ``server`` lists (all pages), one row dict each."""
    return await _list_all(mcp, server, "resources", "resources/list", "resources",
                           lambda sdk, cursor: sdk.list_resources(cursor=cursor),
                           _resource_row)


async def list_resource_templates(mcp: McpSession, server: str) -> list[dict[str, Any]]:
    """Every resource template ``server`` lists (all pages); ``uri`` holds the template."""
    return await _list_all(mcp, server, "resources", "resources/templates/list",
                           "resource_templates",
                           lambda sdk, cursor: sdk.list_resource_templates(cursor=cursor),
                           _template_row)


async def list_prompts(mcp: McpSession, server: str) -> list[dict[str, Any]]:
    """Every prompt ``server`` lists (all pages), one row dict each."""
    return await _list_all(mcp, server, "prompts", "prompts/list", "prompts",
                           lambda sdk, cursor: sdk.list_prompts(cursor=cursor), _prompt_row)


async def _fetch(mcp: McpSession, method: str, offers: str, timeout: float | None,
                 provenance: Provenance | None,
                 send: Callable[[Client, RequestParamsMeta | None], Awaitable[Any]],
                 ) -> tuple[Any, float]:
    """One read or prompt fetch through the client's envelope, with its latency."""
    meta = cast("RequestParamsMeta | None",
                None if provenance is None else provenance.as_meta())
    started = time.perf_counter()
    raw = await mcp.request(method, lambda sdk: send(sdk, meta), timeout=timeout,
                            offers=offers)
    return raw, time.perf_counter() - started


def _dumped(items: Any, what: str) -> list[dict[str, Any]]:
    """The answer's items as plain JSON dicts; an answer that will not dump is Malformed."""
    try:
        return [item.model_dump(by_alias=True, exclude_none=True, mode="json")
                for item in items]
    except Exception as exc:
        raise Malformed(f"unreadable {what}: {type(exc).__name__}") from exc


async def read_resource(mcp: McpSession, server: str, uri: str, *, timeout: float | None = None,
                        provenance: Provenance | None = None) -> ReadResult:
    """Read one resource (a template's URI filled in works too); bounded in size."""
    mcp.check_server(server)
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS:
        shown = _html.shorten(repr(uri), 80)
        raise Refused(f"a resource URI is a non-empty str of at most {MAX_URI_CHARS:,} "
                      f"characters, not {shown}; nothing was sent")
    kept = mcp.responses.get("resources/read", uri)
    if kept is not None:  # fresh as the server's hint said: nothing is sent
        return ReadResult(uri, cast("list[dict[str, Any]]", kept), mcp.name, 0.0)
    with _hints.capture() as got:
        raw, latency = await _fetch(
            mcp, "resources/read", "resources", timeout, provenance,
            lambda sdk, meta: sdk.read_resource(uri, meta=meta))
    contents = _dumped(raw.contents,
                       f"resources/read answer for {_html.shorten(uri, 200)!r}")
    size = sum(len(str(c.get("text") or c.get("blob") or "")) for c in contents)
    if size > mcp.max_message_bytes:
        raise Malformed(f"resource {_html.shorten(uri, 200)!r} of {mcp.name!r} is {size:,} "
                        f"characters, more than max_message_bytes="
                        f"{mcp.max_message_bytes:,}; it is not kept")
    if len(got) == 1:  # one answer, and its hint (an input_required round: none kept)
        mcp.responses.put("resources/read", uri, contents, got[0])
    return ReadResult(uri, contents, mcp.name, latency)


async def get_prompt(mcp: McpSession, server: str, name: str,
                     arguments: Mapping[str, str] | None = None, *,
                     timeout: float | None = None,
                     provenance: Provenance | None = None) -> PromptResult:
    """Fetch one prompt's messages; MCP prompt arguments are strings, checked before sending."""
    mcp.check_server(server)
    args = dict(arguments or {})
    bad = [(k, v) for k, v in args.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        key, value = bad[0]
        raise Refused(f"prompt {name!r}: argument {_html.shorten(repr(key), 60)} is "
                      f"{type(value).__name__} {_html.shorten(repr(value), 60)}; MCP prompt "
                      "arguments are strings (pass str(value)); nothing was sent")
    raw, latency = await _fetch(
        mcp, "prompts/get", "prompts", timeout, provenance,
        lambda sdk, meta: sdk.get_prompt(name, args or None, meta=meta))
    messages = _dumped(raw.messages, f"prompts/get answer for {name!r}")
    return PromptResult(name, name, mcp.name, messages, raw.description, args, latency)
