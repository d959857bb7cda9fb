"""Safe HTML fragments for untrusted text; stdlib only so every layer may use it."""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
from typing import Any

# Raster formats only: SVG can carry script, so it is never inlined.
SAFE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64_RE = re.compile(r"[A-Za-z0-9+/=\s]*")
MAX_INLINE_IMAGE_BYTES = 4 * 1024 * 1024


def escape(value: object) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def cell(value: object, limit: int = 80) -> str:
    """A table cell: shortened, escaped, the full text (capped) in a tooltip."""
    text = value if isinstance(value, str) else to_text(value)
    short = shorten(text, limit)
    if short == text:
        return escape(text)
    return f'<span title="{escape(shorten(text, 2000))}">{escape(short)}</span>'


def to_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def image_tag(data: object, mime_type: object, *, max_width: int = 480) -> str | None:
    """An inline <img> for a safe raster image, or None when the block is not one."""
    if mime_type not in SAFE_IMAGE_TYPES or not isinstance(data, str):
        return None
    if len(data) > MAX_INLINE_IMAGE_BYTES * 4 // 3 + 4 or not _BASE64_RE.fullmatch(data):
        return None
    try:
        base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None
    compact = "".join(data.split())
    return f'<img style="max-width:{max_width}px" src="data:{mime_type};base64,{compact}"/>'


def pretty_json(value: Any, limit: int = 20_000) -> str:
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return shorten(text, limit)
