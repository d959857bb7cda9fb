"""MCP App views in a notebook: ``AppView`` (an anywidget) and its small ES module, ``view.js``."""

from toolbench._notebook.apps.view import AppView, make_view

__all__ = ["AppView", "make_view"]
