"""What a tool's ``_meta`` says about its MCP App view, checked (DESIGN.md, "MCP Apps").

A tool names its view in ``_meta.ui.resourceUri`` (or the older ``_meta["ui/resourceUri"]``)
and who may call it in ``_meta.ui.visibility`` (default ``("model", "app")``). Everything
here is the server's word, so it is checked and never trusted: a URI that is not ``ui://``
is ignored and the reason kept, to be shown in the catalog's ``warnings``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolbench._core import html as _html

EXTENSION: Final = "io.modelcontextprotocol/ui"
"""The MCP Apps extension's identifier under ``capabilities.extensions``."""
MIME_TYPE: Final = "text/html;profile=mcp-app"
"""The only MIME type of a view a bench renders."""
ADVERTISED: Final = {EXTENSION: {"mimeTypes": [MIME_TYPE]}}
"""What ``Bench(apps=True)`` advertises to every server, in both protocol eras."""
DEFAULT_VISIBILITY: Final = ("model", "app")
VISIBILITIES: Final = frozenset(DEFAULT_VISIBILITY)
MAX_URI_CHARS = 2048


@dataclass(frozen=True)
class ToolUi:
    """A tool's declared view (``uri`` None when it has none or a bad one) and visibility."""

    uri: str | None = None
    visibility: tuple[str, ...] = DEFAULT_VISIBILITY
    warnings: tuple[str, ...] = ()

    def visible_to(self, who: str) -> bool:
        return who in self.visibility


NO_UI: Final = ToolUi()


def tool_ui(meta: Mapping[str, Any] | None) -> ToolUi:
    """The view and visibility a tool's ``_meta`` declares; a bad value is noted, not used."""
    if not isinstance(meta, Mapping):
        return NO_UI
    ui = meta.get("ui")
    ui = ui if isinstance(ui, Mapping) else {}
    notes: list[str] = []
    raw = ui.get("resourceUri", meta.get("ui/resourceUri"))
    uri: str | None = None
    if raw is not None:
        shown = _html.shorten(repr(raw), 80)
        if not isinstance(raw, str) or not raw.startswith("ui://"):
            notes.append(f"_meta.ui.resourceUri {shown} is ignored: a view's URI must start "
                         "with ui://")
        elif len(raw) > MAX_URI_CHARS or any(c.isspace() or ord(c) < 32 for c in raw):
            notes.append(f"_meta.ui.resourceUri {shown} is ignored: a view's URI has at most "
                         f"{MAX_URI_CHARS:,} characters and no spaces or control characters")
        else:
            uri = raw
    visibility = DEFAULT_VISIBILITY
    given = ui.get("visibility")
    if given is not None:
        if (isinstance(given, list | tuple) and given
                and all(isinstance(v, str) and v in VISIBILITIES for v in given)):
            visibility = tuple(dict.fromkeys(given))
        else:
            notes.append(f"_meta.ui.visibility {_html.shorten(repr(given), 80)} is ignored: "
                         f"it is a non-empty list of {sorted(VISIBILITIES)}; the default "
                         f"{list(DEFAULT_VISIBILITY)} applies")
    if uri is None and visibility == DEFAULT_VISIBILITY and not notes:
        return NO_UI
    return ToolUi(uri, visibility, tuple(notes))
