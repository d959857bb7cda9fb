"""The MCP Apps faces on ``Bench``: ``apps()`` and ``app(call_id)`` (no state).

Each hands off to ``Apps`` (``views.py``) in one step. It may import ``_loop``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.apps.views import Apps


class AppFaces:
    """Tools' own views (MCP Apps); a face over ``Apps``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        views: Apps

    def apps(self, server: str | None = None) -> pd.DataFrame:
        """One row per tool that has an MCP App view, its view fetched (and cached).

        Returns:
            A frame with ``name``, ``server``, ``tool``, ``uri``, ``mime_type``, ``bytes``,
            ``csp`` (the policy the frame gets), ``permissions``, ``domain``,
            ``prefers_border`` and ``error`` (why the view cannot be shown, or None).

        Example:
            >>> bench.apps()                                      # doctest: +SKIP
        """
        return get_loop().run(self.views.frame, server)

    def app(self, call_id: str) -> Any:
        """A live view of a recorded call (this session's or a journal's), sent its
        recorded input and result: an ``AppView`` in a notebook.

        Raises:
            KeyError: no tool call with this id. ValueError: its tool has no view, or the
            bench was made with ``apps=False``.
        """
        return get_loop().run(self.views.reopen, call_id)
