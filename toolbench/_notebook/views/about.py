"""What a server says about itself, as the explorer shows it: escaped, capped, never fetched.

A server's title, description, website, instructions and icons are untrusted text. Every
string is escaped; an icon is an inline image only when its ``src`` is a ``data:`` URI of a
safe raster type (PNG, JPEG, GIF, WebP: never SVG, which can carry script) with valid
base64; anything else (an ``http(s)`` URL included) is shown as text, so the browser and the
kernel never load it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolbench._core import html as _html

_DATA_RE = re.compile(r"^data:(image/(?:png|jpeg|gif|webp));base64,(.*)$", re.S)
INSTRUCTIONS_SHOWN = 2_000
"""Characters of the instructions shown inline (the rest in ``bench.servers``)."""


def icon_html(icon: object, *, size: int = 16) -> str:
    """One icon: an inline image for a safe ``data:`` raster, else its escaped ``src``."""
    src = icon.get("src") if isinstance(icon, Mapping) else None
    if not isinstance(src, str):
        return ""
    found = _DATA_RE.match(src)
    if found is not None:
        tag = _html.image_tag(found.group(2), found.group(1), max_width=size)
        if tag is not None:
            return tag.replace("<img ", f"<img height='{size}' alt='icon' ", 1)
    return f"<small><code>{_html.escape(_html.shorten(src, 120))}</code></small>"


def server_about_html(server: str, info: Mapping[str, Any]) -> str:
    """A server's title, icons, description, website and instructions, escaped."""
    title = info.get("title") or info.get("server_name") or server
    icons = "".join(icon_html(i) for i in (info.get("icons") or [])[:4])
    parts = [f"<div class='toolbench-server-about'>{icons} <strong>"
             f"{_html.escape(_html.shorten(str(title), 200))}</strong> <small>server "
             f"<code>{_html.escape(server)}</code></small>"]
    if info.get("description"):
        parts.append(f"<div>{_html.escape(_html.shorten(str(info['description']), 500))}</div>")
    if info.get("website"):
        parts.append(f"<div><small>website: <code>"
                     f"{_html.escape(_html.shorten(str(info['website']), 300))}</code></small>"
                     "</div>")
    instructions = info.get("instructions")
    if instructions:
        parts.append("<details class='toolbench-instructions'><summary>instructions</summary>"
                     "<div style='white-space:pre-wrap;max-height:12em;overflow:auto'>"
                     f"{_html.escape(_html.shorten(str(instructions), INSTRUCTIONS_SHOWN))}"
                     "</div></details>")
    parts.append("</div>")
    return "".join(parts)
