"""What a resource read and a prompt fetch answer: values that render themselves, escaped.

They live beside ``Result`` (``toolbench._core.client``), and for the same reason: a value
returned by the bench must render wherever it is displayed, and rendering may only reach
down the layers (DESIGN.md, "Layers"), so the HTML comes from ``toolbench._core.html``.
Everything in them is the server's untrusted data, kept as sent (the wire form, camelCase
keys), and escaped and capped only when shown.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from toolbench._core import html as _html

RENDER_BUDGET = _html.RESULT_BUDGET
"""Characters of text a rendered read or transcript may hold (images come on top)."""
MAX_SHOWN = 200
"""Contents items, or prompt messages, shown at most (the rest are counted)."""


def _texts(contents: list[dict[str, Any]]) -> str:
    return "\n".join(str(c["text"]) for c in contents
                     if isinstance(c, dict) and isinstance(c.get("text"), str))


@dataclass(slots=True)
class ReadResult:
    """What ``bench.read`` returned: one resource's contents (a text, a JSON, an image, a blob).

    ``contents`` is the server's list as sent: each item ``{"uri", "mimeType", "text"}`` or
    ``{"uri", "mimeType", "blob"}`` (base64). In a notebook it shows like a tool ``Result``:
    text escaped and capped, JSON pretty, a PNG/JPEG/GIF/WebP inline, any other blob by its
    size and type only (never decoded into the page).
    """

    uri: str
    contents: list[dict[str, Any]] = field(default_factory=list)
    server: str | None = None
    latency_s: float | None = None

    @property
    def text(self) -> str:
        """Every text item's text, joined by newlines ("" when all are blobs)."""
        return _texts(self.contents)

    @property
    def mime_type(self) -> str | None:
        """The first item's MIME type, as the server declared it."""
        for item in self.contents:
            if isinstance(item, dict) and isinstance(item.get("mimeType"), str):
                return str(item["mimeType"])
        return None

    @property
    def data(self) -> Any:
        """The text parsed as JSON, else the text; the first blob's bytes if there is no text."""
        text = self.text
        if not text and any(isinstance(c, dict) and "blob" in c for c in self.contents):
            return self.blob()
        try:
            return json.loads(text)
        except ValueError:
            return text

    def blob(self, index: int = 0) -> bytes:
        """The bytes of the ``index``-th blob item (0: the first).

        Raises:
            IndexError: there is no such blob.
            ValueError: the server's base64 is not valid.
        """
        blobs = [c["blob"] for c in self.contents if isinstance(c, dict) and "blob" in c]
        if not -len(blobs) <= index < len(blobs):
            raise IndexError(f"resource {self.uri!r} has {len(blobs)} blob item(s), "
                             f"not an item {index}")
        try:
            return base64.b64decode(str(blobs[index]), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"blob {index} of {self.uri!r} is not valid base64") from exc

    def __repr__(self) -> str:
        try:
            head = f"ReadResult({self.server or '?'} {self.uri}"
            if self.latency_s is not None:
                head += f", {self.latency_s * 1000:.1f} ms"
            lines = [head + ")"]
            for item in self.contents[:MAX_SHOWN]:
                if not isinstance(item, dict):
                    continue
                if "blob" in item:
                    size = _html.blob_size(item.get("blob"))
                    lines.append(f"[binary: {size if size is not None else '?'} bytes, "
                                 f"{item.get('mimeType') or 'no type'}]")
                else:
                    lines.append(_html.shorten(str(item.get("text", "")), 2000))
            return "\n".join(lines)
        except Exception:  # a repr never raises
            return "<ReadResult>"

    def _repr_html_(self) -> str:
        try:
            head = f"<b>{_html.escape(_html.shorten(self.uri, 300))}</b>"
            if self.server:
                head += f" <small>on {_html.escape(self.server)}</small>"
            if self.latency_s is not None:
                head += f" <small>{self.latency_s * 1000:.1f} ms</small>"
            parts, left, count = [f"<div>{head}</div>"], RENDER_BUDGET, 0
            for item in self.contents[:MAX_SHOWN]:
                if left <= 0:  # the budget is spent: the rest are counted, not shown
                    break
                count += 1
                if len(self.contents) > 1 and isinstance(item, dict):
                    uri = _html.escape(_html.shorten(str(item.get("uri", "")), 300))
                    parts.append(f"<div><code>{uri}</code></div>")
                shown = _html.contents_html(item, max(left, 200))
                left -= len(shown)
                parts.append(shown)
            if len(self.contents) > count:
                parts.append(f"<i>[{len(self.contents) - count:,} more items]</i>")
            return "<div class='toolbench-read'>" + "".join(parts) + "</div>"
        except Exception as exc:  # never raise from display
            return f"<pre>{_html.escape(type(exc).__name__)}: contents could not be shown</pre>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """``text/plain`` and the HTML card only (see ``Result._repr_mimebundle_``)."""
        return {"text/plain": repr(self), "text/html": self._repr_html_()}


@dataclass(slots=True)
class PromptResult:
    """What ``bench.prompt`` returned: a prompt's messages, shown as a transcript.

    ``messages`` is the server's list as sent: each ``{"role": "user" | "assistant",
    "content": <a content block>}`` (text, image, audio, resource link, embedded resource).
    Every string is the server's, escaped and capped when shown.
    """

    name: str
    """The name it was fetched by (the prefixed one, ``beyond-welcome``)."""
    prompt: str
    """The server's own name for it."""
    server: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    description: str | None = None
    arguments: dict[str, str] = field(default_factory=dict)
    latency_s: float | None = None

    @property
    def text(self) -> str:
        """The transcript as text: ``role: text`` per text message, blank lines between."""
        lines = []
        for message in self.messages:
            if not isinstance(message, dict):
                continue
            block = message.get("content")
            kind = block.get("type") if isinstance(block, dict) else None
            said = (str(block.get("text", "")) if kind == "text" and isinstance(block, dict)
                    else f"[{kind} block]")
            lines.append(f"{message.get('role', '?')}: {said}")
        return "\n\n".join(lines)

    def __repr__(self) -> str:
        try:
            head = f"PromptResult({self.name}, {len(self.messages)} messages"
            if self.latency_s is not None:
                head += f", {self.latency_s * 1000:.1f} ms"
            return f"{head})\n{_html.shorten(self.text, 2000)}"
        except Exception:  # a repr never raises
            return "<PromptResult>"

    def _repr_html_(self) -> str:
        try:
            return self._transcript()
        except Exception as exc:  # never raise from display
            return f"<pre>{_html.escape(type(exc).__name__)}: transcript could not be shown</pre>"

    def _transcript(self) -> str:
        head = f"<b>{_html.escape(self.name)}</b> <small>on {_html.escape(self.server)}"
        if self.latency_s is not None:
            head += f", {self.latency_s * 1000:.1f} ms"
        head += "</small>"
        parts = [f"<div>{head}</div>"]
        if self.description:
            parts.append(f"<div><i>{_html.escape(_html.shorten(self.description, 500))}</i></div>")
        left, shown_count = RENDER_BUDGET, 0
        for message in self.messages[:MAX_SHOWN]:
            if left <= 0:  # the budget is spent: the rest are counted, not shown
                break
            shown_count += 1
            if not isinstance(message, dict):
                continue
            role = str(message.get("role", "?"))
            block = message.get("content")
            shown = _block_html(block, max(left, 200))
            left -= len(shown)
            side = "#eef4ff" if role == "user" else "#f4f4f4"
            parts.append(
                f"<div class='toolbench-message' style='margin:4px 0;padding:4px 8px;"
                f"background:{side};border-radius:4px'><small><b>"
                f"{_html.escape(_html.shorten(role, 40))}</b></small>{shown}</div>")
        if len(self.messages) > shown_count:
            parts.append(f"<i>[{len(self.messages) - shown_count:,} more messages]</i>")
        return "<div class='toolbench-transcript'>" + "".join(parts) + "</div>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """``text/plain`` and the transcript's HTML only."""
        return {"text/plain": repr(self), "text/html": self._repr_html_()}


def _block_html(block: object, room: int) -> str:
    """One message's content block, escaped and capped (a transcript's line)."""
    if not isinstance(block, dict):
        return "<i>[unreadable block]</i>"
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
        short = _html.shorten(text, room)
        more = (f" <small>({len(text):,} characters in all)</small>" if short != text
                else "")
        return f"<pre style='white-space:pre-wrap;margin:0'>{_html.escape(short)}</pre>{more}"
    if kind == "image":
        tag = _html.image_tag(block.get("data"), block.get("mimeType"))
        mime = _html.escape(_html.shorten(str(block.get("mimeType")), 80))
        return tag or f"<i>[image {mime} not shown]</i>"
    if kind in ("resource_link", "resource"):
        return _html.resource_block_html(block, room)
    return f"<i>[{_html.escape(_html.shorten(str(kind), 40))} block]</i>"
