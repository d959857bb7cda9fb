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
RESULT_BUDGET = 40_000
"""Characters of text and JSON a rendered result may hold (images come on top)."""


NO_MATH = "tex2jax_ignore mathjax_ignore"
"""The classes MathJax 2 and 3 (JupyterLab, classic Notebook) skip, with all they hold: a
server's ``$ref`` or "$5 … $10" must not be typeset as TeX (issue 37)."""


def no_math(html_text: str) -> str:
    """``html_text`` in an element MathJax leaves alone."""
    return f"<div class='{NO_MATH}'>{html_text}</div>"


def escape(value: object) -> str:
    """Escape anything for HTML text or a quoted attribute."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in "…".

    The cut falls after a word when one ends in the last fifth of the room, so a hint like
    "Did you mean 'Tokyo'?" is not left as "Did you me…"; a long run without spaces (a
    token, base64) is cut where the room ends.
    """
    if len(text) <= limit:
        return text
    room = max(limit - 1, 0)
    cut = text.rfind(" ", 0, room + 1)
    if room >= 20 and cut >= room * 4 // 5:
        return text[:cut].rstrip() + "…"
    return text[:room] + "…"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 row"``, ``"2 rows"``, ``"1,200 rows"``: a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def seconds_text(seconds: float | None) -> str:
    """A duration for a message, rounded for a reader: ``30`` for 29.999871 (a deadline's
    remainder), ``0.33`` for 0.333291, ``1.5`` for 1.5; never more digits than matter."""
    if seconds is None or seconds != seconds or abs(seconds) == float("inf"):  # none, NaN
        return str(seconds)
    if abs(seconds) >= 10:
        return f"{seconds:,.0f}"
    return f"{seconds:.2g}"


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


def bounded_json(value: Any, limit: int) -> str:
    """JSON text of ``value``, cut at ``limit``; huge strings inside are cut before dumping."""
    return shorten(to_text(trim(value, limit)), limit)


def trim(value: Any, limit: int, depth: int = 0, cut: list[bool] | None = None) -> Any:
    """``value`` with long strings and containers cut; ``cut`` gets True if anything was."""
    if isinstance(value, str):
        if len(value) > limit and cut is not None:
            cut.append(True)
        return shorten(value, limit)
    if depth > 20:
        if cut is not None:
            cut.append(True)
        return "…"
    if isinstance(value, (dict, list, tuple)) and len(value) > 200 and cut is not None:
        cut.append(True)
    if isinstance(value, dict):
        return {str(k)[:limit]: trim(v, limit, depth + 1, cut)
                for k, v in list(value.items())[:200]}
    if isinstance(value, (list, tuple)):
        return [trim(v, limit, depth + 1, cut) for v in list(value)[:200]]
    return value


# -- resources: links, embedded contents, reads ---------------------------------------------
JSON_TYPES = frozenset({"application/json", "text/json"})
MAX_PRETTY_CHARS = 1_000_000
"""JSON text longer than this is shown as sent (cut), not parsed to be pretty-printed."""
_PRE = "<pre style='white-space:pre-wrap'>"


def is_json_type(mime_type: object) -> bool:
    """``application/json`` and the ``+json`` family (a resource's text is then JSON)."""
    if not isinstance(mime_type, str):
        return False
    base = mime_type.split(";", 1)[0].strip().lower()
    return base in JSON_TYPES or base.endswith("+json")


def blob_size(blob: object) -> int | None:
    """The byte count of base64 text, from its length alone: a blob is never decoded for
    display (a 30 MB blob must cost nothing to show)."""
    if not isinstance(blob, str):
        return None
    length = len(blob) - blob.count("\n") - blob.count(" ") - blob.count("\r")
    return max(length * 3 // 4 - blob[-2:].count("="), 0)


def contents_html(item: object, room: int) -> str:
    """One resource's contents (``{uri, mimeType, text | blob}``), escaped and capped.

    Text is shortened to ``room``; JSON text is shown pretty; a safe raster image is inlined
    (``image_tag`` caps it); any other blob is shown by size and type, never decoded.
    """
    if not isinstance(item, dict):
        return "<i>[unreadable contents]</i>"
    mime = item.get("mimeType")
    mime_text = escape(shorten(str(mime), 80)) if mime else "no type"
    if "blob" in item:
        blob = item.get("blob")
        tag = image_tag(blob, mime)
        if tag is not None:
            return tag
        size = blob_size(blob)
        told = f"{size:,} bytes" if size is not None else "unreadable"
        return f"<i>[binary: {told}, {mime_text}; not shown]</i>"
    text = item.get("text")
    text = text if isinstance(text, str) else to_text(text)
    if is_json_type(mime) and len(text) <= MAX_PRETTY_CHARS:  # a huge one: shown as sent
        try:
            text = pretty_json(json.loads(text), room)
        except (ValueError, RecursionError):
            text = text  # not JSON after all: shown as text
    short = shorten(text, room)
    more = f" <small>({len(text):,} characters in all)</small>" if short != text else ""
    return f"{_PRE}{escape(short)}</pre>{more}"


def resource_block_html(block: dict[str, Any], room: int) -> str:
    """A ``resource_link`` or embedded ``resource`` content block: its URI, name and type,
    and (embedded) its contents; ``bench.read(block)`` follows either."""
    kind = block.get("type")
    inner = block.get("resource") if kind == "resource" else block
    inner = inner if isinstance(inner, dict) else {}
    facts = [f"<code>{escape(shorten(str(inner.get('uri', '')), 300))}</code>"]
    for key in ("name", "title"):
        if isinstance(block.get(key), str) and block.get(key):
            facts.append(escape(shorten(block[key], 120)))
    if inner.get("mimeType"):
        facts.append(f"<small>{escape(shorten(str(inner['mimeType']), 80))}</small>")
    label = "resource link" if kind == "resource_link" else "embedded resource"
    head = f"<div><i>[{label}]</i> {' · '.join(facts)}</div>"
    if kind == "resource_link":
        description = block.get("description")
        if isinstance(description, str) and description:
            head += f"<div><small>{escape(shorten(description, 300))}</small></div>"
        return f"<div class='toolbench-resource'>{head}</div>"
    return f"<div class='toolbench-resource'>{head}{contents_html(inner, room)}</div>"


# -- descriptions: a server's prose, shown as text with its paragraphs and inline code ------
MAX_DESCRIPTION = 20_000
"""Characters of a description shown in full (the rest is cut, and the cut says so)."""
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
"""A Markdown code span: a run of backticks closed by a run of the same length."""
_LIST_ITEM = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s")


def paragraphs(text: str) -> list[str]:
    """A description's paragraphs (blank-line separated), each on one line.

    Hard wraps inside a paragraph are joined with a space, and the indentation a docstring
    brings is dropped; a line that starts a list item ("- ", "1. ") stays on a line of its
    own (joined to the paragraph by a newline).
    """
    found = []
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n").strip()):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        joined = lines[0]
        for line in lines[1:]:
            joined += ("\n" if _LIST_ITEM.match(line) else " ") + line
        found.append(joined)
    return found


def inline_code(text: str) -> str:
    """``text`` escaped, with each `code` span as ``<code>`` (escaped too); an unmatched
    backtick stays a literal backtick."""
    out = []
    at = 0
    for match in _CODE_SPAN.finditer(text):
        code = match.group(2)
        if len(code) > 2 and code.startswith(" ") and code.endswith(" "):
            code = code[1:-1]  # Markdown: `` `x` `` shows `x`
        out.append(escape(text[at:match.start()]))
        out.append(f"<code>{escape(code)}</code>")
        at = match.end()
    out.append(escape(text[at:]))
    return "".join(out).replace("\n", "<br>")


def description_html(text: object, limit: int = MAX_DESCRIPTION) -> str:
    """A tool's (or resource's, or prompt's) description as HTML: escaped text in paragraphs,
    hard wraps joined, inline code as ``<code>``; at most ``limit`` characters of it."""
    whole = "\n\n".join(paragraphs(text if isinstance(text, str) else to_text(text)))
    if not whole:
        return ""
    shown = shorten(whole, limit)
    more = (f"<p><small>({len(whole):,} characters; shortened)</small></p>"
            if shown != whole else "")
    return "".join(f"<p style='margin:0 0 0.5em 0'>{inline_code(p)}</p>"
                   for p in shown.split("\n\n")) + more


def description_cell(text: object, limit: int = 80) -> str:
    """A description in a table cell: its paragraphs on one line, shortened, inline code as
    ``<code>``, the whole text (capped) in a tooltip."""
    whole = " ".join(paragraphs(text if isinstance(text, str) else to_text(text)))
    whole = whole.replace("\n", " ")
    short = shorten(whole, limit)
    body = inline_code(short)
    if short == whole:
        return body
    return f'<span title="{escape(shorten(whole, 2000))}">{body}</span>'
