"""What a view knows of its host, and keeps knowing (DESIGN.md, "The bridge": ``hostContext``
in the ``ui/initialize`` answer, then ``ui/notifications/host-context-changed``).

The front end says what it sees (JupyterLab's theme, the output's width, the window's height
in fullscreen, and the person closing fullscreen); :meth:`HostContext.update` keeps it and
returns only what changed, in the specification's names, so the bridge sends a view a change
and nothing else. Everything the front end says is checked here: a theme is ``light`` or
``dark``, a size is a whole number of pixels, a display mode is one this host grants.
"""

from __future__ import annotations

from typing import Any, Final

from toolbench._bench.apps.policy import MAX_HEIGHT

HOST_CONTEXT_CHANGED: Final = "ui/notifications/host-context-changed"
DISPLAY_MODES: Final = ("inline", "fullscreen")
"""What ``ui/request-display-mode`` grants (``pip`` is not offered: a notebook has no such
place); ``inline`` is the default."""
THEMES: Final = ("light", "dark")
MAX_PIXELS = 100_000


def pixels(value: Any) -> int | None:
    """A size the front end measured, or None when it is not a plausible one."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return int(value) if 0 < value < MAX_PIXELS else None


class HostContext:
    """The host's side of ``hostContext``: theme, container size and display mode."""

    def __init__(self) -> None:
        self.theme = "light"
        self.width: int | None = None
        self.height: int | None = None
        """The container's height, known in fullscreen only (inline, the view sizes itself)."""
        self.display_mode = "inline"

    def dimensions(self) -> dict[str, Any]:
        """``containerDimensions``: the width, and a fixed height in fullscreen, else the
        most the view may ask for."""
        dims: dict[str, Any] = ({"height": self.height}
                                if self.display_mode == "fullscreen" and self.height
                                else {"maxHeight": MAX_HEIGHT})
        if self.width is not None:
            dims["width"] = self.width
        return dims

    def wire(self) -> dict[str, Any]:
        """The host-owned part of ``ui/initialize``'s ``hostContext``."""
        return {"theme": self.theme, "displayMode": self.display_mode,
                "availableDisplayModes": list(DISPLAY_MODES),
                "containerDimensions": self.dimensions()}

    def update(self, *, theme: Any = None, width: Any = None, height: Any = None,
               mode: Any = None) -> dict[str, Any]:
        """Take what the front end (or the view's request) says; return what changed, in
        wire names (empty when nothing did). Anything unrecognised is ignored."""
        changed: dict[str, Any] = {}
        if theme in THEMES and theme != self.theme:
            self.theme = changed["theme"] = theme
        if mode in DISPLAY_MODES and mode != self.display_mode:
            self.display_mode = changed["displayMode"] = mode
        width, height = pixels(width), pixels(height)
        if width is not None and (width, height) != (self.width, self.height):
            self.width, self.height = width, height
            changed["containerDimensions"] = self.dimensions()
        elif "displayMode" in changed:
            changed["containerDimensions"] = self.dimensions()
        return changed
