"""What a server says about itself (``serverInfo``, capabilities, instructions), made safe.

Everything here is untrusted text from the server, so each field is capped where it enters:
names, versions and titles at ``NAME_CHARS``, a description at ``DESCRIPTION_CHARS``, the
instructions at ``INSTRUCTIONS_CHARS`` (DESIGN.md: 10,000), a website at ``URL_CHARS``,
at most ``MAX_ICONS`` icons, and a tool's ``_meta`` at ``META_BYTES`` of JSON (a bigger one is
replaced by a note saying how big it was). Nothing is fetched: an icon's ``src`` stays text
here; only the display layer turns a ``data:`` URI of a safe raster type into an image
(``toolbench._core.html.icon_html``), and a remote URL is never loaded by the kernel.
"""

from __future__ import annotations

import json
from typing import Any

from toolbench._core import html as _html

NAME_CHARS = 200
DESCRIPTION_CHARS = 2_000
INSTRUCTIONS_CHARS = 10_000
URL_CHARS = 2_000
MAX_ICONS = 8
ICON_SRC_CHARS = 100_000
"""A ``data:`` icon longer than this (about 75 kB of image) is cut to a note."""
META_BYTES = 10_000
"""A ``_meta`` whose JSON is longer than this is not kept (a note says how long it was)."""


def _text(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    return _html.shorten(str(value), limit)


def _plain(value: Any) -> Any:
    if value is not None and hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return value


def icons(raw: Any) -> list[dict[str, Any]] | None:
    """Up to ``MAX_ICONS`` icons as plain dicts (``src``, ``mimeType``, ``sizes``, ``theme``)."""
    if not raw:
        return None
    found: list[dict[str, Any]] = []
    for item in list(raw)[:MAX_ICONS]:
        icon = _plain(item)
        if not isinstance(icon, dict) or not isinstance(icon.get("src"), str):
            continue
        src = icon["src"]
        if len(src) > ICON_SRC_CHARS:
            src = f"(an icon of {len(src):,} characters, not kept)"
        kept: dict[str, Any] = {"src": src}
        for key in ("mimeType", "theme"):
            if isinstance(icon.get(key), str):
                kept[key] = _html.shorten(icon[key], 100)
        sizes = icon.get("sizes")
        if isinstance(sizes, list):
            kept["sizes"] = [_html.shorten(str(s), 40) for s in sizes[:10]]
        found.append(kept)
    return found or None


def meta(raw: Any) -> dict[str, Any] | None:
    """A tool's ``_meta`` as a dict, or a note when its JSON exceeds ``META_BYTES``."""
    value = _plain(raw)
    if value is None:
        return None
    if not isinstance(value, dict):
        return {"(not an object)": _html.shorten(repr(value), 200)}
    try:
        size = len(json.dumps(value, default=str, ensure_ascii=False).encode())
    except (TypeError, ValueError, RecursionError):
        return {"(unreadable)": _html.shorten(repr(value), 200)}
    if size > META_BYTES:
        return {"(too large)": f"_meta of {size:,} bytes of JSON, more than {META_BYTES:,}; "
                               "not kept"}
    return value


def capabilities(raw: Any) -> dict[str, Any]:
    """The server's capabilities as a plain dict (wire names), capped as ``_meta`` is."""
    value = _plain(raw)
    if not isinstance(value, dict):
        return {}
    return meta(value) or {}


def about(client: Any) -> dict[str, Any]:
    """Everything an entered ``mcp.Client`` knows of its server, capped, secrets not judged
    here (the bench redacts what it shows)."""
    info = client.server_info
    try:
        instructions = client.instructions
    except Exception:
        instructions = None
    return {
        "protocol": client.protocol_version,
        "server_name": _text(getattr(info, "name", None), NAME_CHARS),
        "server_version": _text(getattr(info, "version", None) or None, NAME_CHARS),
        "title": _text(getattr(info, "title", None), NAME_CHARS),
        "description": _text(getattr(info, "description", None), DESCRIPTION_CHARS),
        "instructions": _text(instructions, INSTRUCTIONS_CHARS),
        "capabilities": capabilities(client.server_capabilities),
        "icons": icons(getattr(info, "icons", None)),
        "website": _text(getattr(info, "website_url", None), URL_CHARS),
    }
