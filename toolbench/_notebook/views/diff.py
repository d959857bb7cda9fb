"""The HTML of a diff frame (``tb.diff``) and a schema diff (``df.tb.schema_diff()``).

Every value a server declared is escaped and capped (``cells.cell``). Changes are marked by
row class: added green, removed red, changed amber; a description's word diff shows the
removed words struck through and the added ones underlined, built from the same segments as
``tb.diff``'s ``detail`` (``toolbench._bench.overtime.words``: at most ``WORD_DIFF_LIMIT``
words a side, a summary past that, bounded in time on any text), never by parsing the
plain-text markers, which a description could itself hold. Each segment shown is capped at
``SEGMENT_CHARS`` characters.
In a schema diff, a parameter on which the servers disagree is amber, and each aspect that
differs is bold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolbench._bench.overtime.words import MAX_DIFF_WORDS, word_segments, word_summary
from toolbench._core import html as _html
from toolbench._notebook.views.cells import MAX_CELL, MAX_ROWS, TABLE_STYLE, cell

if TYPE_CHECKING:
    import pandas as pd

DIFF_STYLE = ("<style>.toolbench-diff tr.added td{background:#e6ffec}"
              ".toolbench-diff tr.removed td{background:#ffebe9}"
              ".toolbench-diff tr.changed td{background:#fff8c5}"
              ".toolbench-diff del{background:#ffc1c0}.toolbench-diff ins{background:#abf2bc;"
              "text-decoration:none}.toolbench-diff td.differs{font-weight:bold}</style>")
WORD_DIFF_LIMIT = MAX_DIFF_WORDS
"""The most words of each side compared (a summary past that)."""
SEGMENT_CHARS = 2000
"""The most characters of one run of equal, removed or added words shown."""


def word_diff_html(old: Any, new: Any, limit: int = WORD_DIFF_LIMIT) -> str:
    """``old`` -> ``new`` word by word: removed words in ``<del>``, added in ``<ins>``; over
    ``limit`` words a side, the summary (lengths, where they first differ), escaped."""
    a, b = str(old or ""), str(new or "")
    segments = word_segments(a, b, limit)
    if segments is None:
        return f"<i>{_html.escape(word_summary(a, b, limit))}</i>"
    tags = {"equal": "{}", "delete": "<del>{}</del>", "insert": "<ins>{}</ins>"}
    return " ".join(tags[op].format(_html.escape(_html.shorten(text, SEGMENT_CHARS)))
                    for op, text in segments)


def _table(head: list[str], body: list[str], total: int, max_rows: int, caption: str) -> str:
    note = f"{total} rows" if total <= max_rows else f"showing {max_rows} of {total} rows"
    heads = "".join(f"<th>{_html.escape(h)}</th>" for h in head)
    return (f"{TABLE_STYLE}{DIFF_STYLE}<div class='toolbench-scroll'>"
            f"<table class='toolbench-table toolbench-diff'>"
            f"<caption>{_html.escape(caption)}</caption><thead><tr>{heads}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div><p><small>{note}</small></p>")


def diff_html(df: pd.DataFrame, *, max_rows: int = MAX_ROWS) -> str:
    """A diff frame as a table, one row per change, marked by kind of change."""
    if len(df) == 0:
        return "<p><i>no changes</i></p>"
    head = ["change", "server", "kind", "name", "field", "old", "new"]
    body = []
    for row in df.head(max_rows).to_dict("records"):
        change = str(row.get("change"))
        css = change if change in ("added", "removed", "changed") else ""
        if row.get("field") == "description":
            old = _html.escape(_html.shorten(str(row.get("old") or ""), MAX_CELL))
            new = word_diff_html(row.get("old"), row.get("new"))
        else:
            old = cell(row.get("old"), MAX_CELL)
            new = cell(row.get("new"), MAX_CELL)
            if row.get("detail"):
                new += f"<br><small>{_html.escape(_html.shorten(str(row['detail']), 500))}</small>"
        cells = [cell(row.get(c), 80) for c in ("change", "server", "kind", "name", "field")]
        body.append(f"<tr class='{css}'>" + "".join(f"<td>{c}</td>" for c in cells)
                    + f"<td>{old}</td><td>{new}</td></tr>")
    return _table(head, body, len(df), max_rows, "what changed")


def schema_diff_html(df: pd.DataFrame, *, max_rows: int = MAX_ROWS) -> str:
    """A schema diff as a table: parameters the servers disagree on marked, aspects bold."""
    if len(df) == 0:
        return "<p><i>no tool is offered by two or more servers</i></p>"
    head = ["tool", "parameter", "differs", "present_on", "missing_on", "type", "required",
            "enum", "default"]
    body = []
    for row in df.head(max_rows).to_dict("records"):
        differs = row.get("differs") or []
        css = "changed" if differs else ""
        cells = []
        for column in head:
            mark = (" class='differs'" if column in differs
                    or (column == "missing_on" and "present" in differs) else "")
            cells.append(f"<td{mark}>{cell(row.get(column), 200)}</td>")
        body.append(f"<tr class='{css}'>{''.join(cells)}</tr>")
    return _table(head, body, len(df), max_rows, "parameters of same-named tools")
