"""One table cell, rendered safely: what every toolbench table shares.

The bench's tables (``toolbench._notebook.views.display``), the compare view and the widgets all
render
cells the same way: escaped, capped, numbers kept exact, dates and flags on one line. They
import it from here, below all of them, so no table module needs another.
"""

from __future__ import annotations

from typing import Any

from toolbench._core import html as _html

MAX_ROWS = 50
MAX_CELL = 80

# Cells wrap (long text breaks anywhere rather than widening the table past the page), but
# never wider than a readable measure, and text columns never narrower than one; dates,
# flags, names and numbers stay on one line. A table wider than its box scrolls sideways.
TABLE_STYLE = (
    "<style>.toolbench-table{border-collapse:collapse;font-size:12px;line-height:1.35}"
    ".toolbench-table td,.toolbench-table th{border:1px solid #ddd;padding:2px 6px;"
    "text-align:left;vertical-align:top;white-space:pre-wrap;max-width:32em;"
    "overflow-wrap:anywhere}"
    ".toolbench-table th{background:#f4f4f4;white-space:nowrap}"
    ".toolbench-table thead th{vertical-align:bottom}"
    ".toolbench-table th.tb-group{text-align:center}"
    ".toolbench-table td.tb-nowrap{white-space:nowrap;overflow-wrap:normal}"
    ".toolbench-table td.tb-wide{min-width:12em}"
    ".toolbench-table td.tb-number{white-space:nowrap;text-align:right}"
    ".toolbench-scroll{overflow-x:auto;max-width:100%}</style>"
)
NOWRAP_COLUMNS = frozenset({"started", "time", "ok", "case", "status", "transport",
                            "disposition", "error_type", "name", "server", "ui"})
WIDE_COLUMNS = frozenset({"arguments", "text", "error", "description", "structured", "content",
                          "provenance", "stderr_tail", "warnings", "answer", "destination"})
NUMBER_COLUMNS = frozenset({"latency_ms", "tools"})

def column_class(column: object) -> str:
    """The CSS class of a column's cells: numbers right-aligned, short fields on one line."""
    if column in NUMBER_COLUMNS:
        return " class='tb-number'"
    if column in NOWRAP_COLUMNS:
        return " class='tb-nowrap'"
    if column in WIDE_COLUMNS:
        return " class='tb-wide'"
    return ""


def cell(value: Any, limit: int, column: object = None) -> str:
    """One escaped cell. Latency is rounded to 0.1 ms here, for the eye only (the data keep
    every digit); other numbers keep their digits (answers that differ in the third decimal
    must look different)."""
    value = plain(value)
    if isinstance(value, bool):
        return "<span style='color:#1b7f1b'>✓</span>" if value else (
            "<span style='color:#b00020'>✗</span>")
    if isinstance(value, float):
        if str(column).endswith("_ms") and abs(value) < 1e9:
            return f"{value:.1f}"
        return _html.escape(f"{value:.12g}")
    if column == "description" and isinstance(value, str):  # prose: `code` shown as code
        return _html.description_cell(value, limit)
    if column == "ui" and isinstance(value, str) and value:  # the tool has an MCP App view
        return (f'<span class="tb-ui" title="{_html.escape(_html.shorten(value, 2000))}" '
                'style="border:1px solid #6a1b9a;border-radius:3px;padding:0 3px;'
                'color:#6a1b9a;font-size:11px">ui</span>')
    if column == "warnings" and isinstance(value, list):  # reasons, read as sentences
        value = "; ".join(str(v) for v in value[:20])
    if isinstance(value, (list, dict)):
        value = _html.bounded_json(value, 4000)
    return _html.cell(value if isinstance(value, str) else str(value), limit)


def plain(value: Any) -> Any:
    if value is None:
        return ""
    try:
        import pandas as pd

        if not isinstance(value, (list, dict, tuple)) and pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    if hasattr(value, "isoformat") and hasattr(value, "strftime"):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        try:
            return value.item()  # a numpy scalar
        except Exception:
            return value
    return value
