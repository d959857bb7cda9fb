"""The compare table as HTML: where servers disagree within a case, and how fast each was.

An answer is what a user would compare by eye: the structured value if any, else the text,
or the error type for a failure. Cells that differ from the answer most servers gave in a
case are highlighted (all of them when no answer has a majority); latency is a bar scaled
to the slowest call in the table. Pure HTML: no plotting library, nothing that could run a
script.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._notebook.views.cells import MAX_ROWS, TABLE_STYLE, cell, column_class, plain

if TYPE_CHECKING:
    import pandas as pd

DIFFER = "background:#fff3cd"
FAILED = "background:#fde2e2"
BAR = "display:inline-block;height:9px;background:#4c8bf5;vertical-align:middle"


def answer_key(row: Any) -> str:
    """A canonical text for one row's answer, so equal answers compare equal."""
    if not bool(row.get("ok")):
        return f"error:{row.get('error_type')}"
    structured = row.get("structured")
    if isinstance(structured, dict):
        try:
            return "json:" + json.dumps(structured, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return "repr:" + repr(structured)
    return "text:" + str(plain(row.get("text")))


def disagreements(df: pd.DataFrame) -> dict[int, int]:
    """For each case, how many distinct answers the servers gave (1 means they agree)."""
    found: dict[int, set[str]] = {}
    for row in df.to_dict("records"):
        found.setdefault(int(row["case"]), set()).add(answer_key(row))
    return {case: len(keys) for case, keys in found.items()}


def compare_html(df: pd.DataFrame, *, max_rows: int = MAX_ROWS, max_cell: int = 80) -> str:
    """One row per (case, server): differing cells highlighted, latency bars, then a summary."""
    try:
        return _compare_html(df, max_rows, max_cell)
    except Exception as exc:  # display never raises
        return f"<pre>compare table could not be shown ({_html.escape(type(exc).__name__)})</pre>"


def _compare_html(df: pd.DataFrame, max_rows: int, max_cell: int) -> str:
    if len(df) == 0:
        return "<i>no rows</i>"
    extra = [str(c) for c in df.columns if str(c).startswith("structured.")]
    rows: list[dict[str, Any]] = [{str(k): v for k, v in r.items()}
                                  for r in df.to_dict("records")]
    # Narrow enough for a notebook: when every answer is structured, its fields show it column
    # by column (no answer column), and an error column only when something failed.
    failed = any(not r.get("ok") for r in rows)
    in_fields = bool(extra) and all(isinstance(r.get("structured"), dict)
                                    for r in rows if r.get("ok"))
    columns = ["case", "server", "ok", "latency_ms", *([] if in_fields else ["answer"]),
               *extra, *(["error"] if failed else [])]
    latencies = [float(r["latency_ms"]) for r in rows
                 if isinstance(r.get("latency_ms"), (int, float))
                 and math.isfinite(float(r["latency_ms"]))]
    slowest = max(latencies, default=0.0) or 1.0
    by_case: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_case.setdefault(int(row["case"]), []).append(row)
    majority = {case: _majority(group) for case, group in by_case.items()}
    column_sets = {
        (case, column): {_json(r.get(column)) for r in group}
        for case, group in by_case.items() for column in extra
    }
    column_majority = {  # as for answers: the value most servers gave, else none
        (case, column): _field_majority([_json(r.get(column)) for r in group])
        for case, group in by_case.items() for column in extra
    }
    counts = disagreements(df)
    head = _head(columns, extra)
    body = []
    for row in rows[:max_rows]:
        case = int(row["case"])
        cells = []
        for column in columns:
            style = ""
            if column == "answer":
                text = row.get("text") if row.get("ok") else row.get("error_type")
                value = cell(text, max_cell)
                if not row.get("ok"):
                    style = FAILED
                    value = _error_cell(text, row.get("error"), max_cell)
                elif counts[case] > 1 and answer_key(row) != majority[case]:
                    style = DIFFER
            elif column == "latency_ms":
                value = _latency_cell(row.get("latency_ms"), slowest)
            elif column == "case":
                flag = (" <span style='color:#a15c00' title='servers disagree'>≠</span>"
                        if counts[case] > 1 else "")
                value = f"{case}{flag}"
            elif column == "error" and not row.get("ok"):
                if in_fields:  # no answer column: the error cell says what failed, in red
                    value = _error_cell(f"{plain(row.get('error_type'))}: "
                                        f"{plain(row.get('error'))}", row.get("error"), max_cell)
                    style = FAILED
                else:
                    value = _error_cell(row.get("error"), row.get("error"), max_cell)
            else:
                value = cell(row.get(column), max_cell, column)
                if column in extra and len(column_sets[(case, column)]) > 1:
                    usual = column_majority[(case, column)]
                    style = DIFFER if usual is None or _json(row.get(column)) != usual else ""
            attr = f" style='{style}'" if style else ""
            attr += " class='tb-nowrap'" if column == "latency_ms" else column_class(column)
            cells.append(f"<td{attr}>{value}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    total = len(rows)
    shown = min(total, max_rows)
    rows_note = _html.counted(total, "row")
    note = f"showing {shown:,} of {rows_note}" if total > shown else rows_note
    split = sum(1 for n in counts.values() if n > 1)
    summary = (f"<p><small>{note}; servers disagree on {split:,} of "
               f"{_html.counted(len(counts), 'case')}</small></p>")

    return (f"{TABLE_STYLE}<div class='toolbench-scroll'><table class='toolbench-table "
            f"toolbench-compare'><thead>{head}</thead><tbody>{''.join(body)}</tbody>"
            f"</table></div>{summary}"
            f"{latency_summary(df, slowest)}")


MAX_FIELD_HEAD = 24
"""A structured field's header is cut here (its whole column name is in the tooltip): a header
stays on one line, so a long key would otherwise set its column's width."""


def _head(columns: list[str], extra: list[str]) -> str:
    """The header rows. Structured fields sit under one ``structured`` group header, each
    headed by its key alone: repeating ``structured.`` on every field made notebook 04's
    ``city`` compare wider than its output cell (issue 37, item 16). The frame's own column
    name (``structured.<key>``) is each field header's tooltip."""
    if not extra:
        return "<tr>" + "".join(f"<th>{_html.cell(c, 40)}</th>" for c in columns) + "</tr>"
    top: list[str] = []
    fields_at = set(extra)
    for column in columns:
        if column == extra[0]:
            top.append(f"<th colspan='{len(extra)}' class='tb-group'>structured</th>")
        elif column not in fields_at:
            top.append(f"<th rowspan='2'>{_html.cell(column, 40)}</th>")
    fields = "".join(
        f"<th title=\"{_html.escape(_html.shorten(column, 2000))}\">"
        f"{_html.escape(_html.shorten(column.removeprefix('structured.'), MAX_FIELD_HEAD))}</th>"
        for column in extra)
    return f"<tr>{''.join(top)}</tr><tr>{fields}</tr>"


MAX_ERROR_TITLE = 8000


def _error_cell(value: Any, error: Any, limit: int) -> str:
    """``value`` shortened, with the whole error (escaped, capped) as its tooltip."""
    full = _html.to_text(plain(error))
    shown = _html.escape(_html.shorten(_html.to_text(plain(value)), limit))
    if not full:
        return shown
    title = _html.escape(_html.shorten(full, MAX_ERROR_TITLE))
    return f'<span class="tb-error" title="{title}">{shown}</span>'


def _majority(group: list[dict[str, Any]]) -> str | None:
    """The answer more than half the servers gave, if any: without one, nobody is the odd one
    out, so every answer in a split case is highlighted."""
    key, count = Counter(answer_key(r) for r in group).most_common(1)[0]
    return key if count * 2 > len(group) else None


def _field_majority(values: list[str]) -> str | None:
    """The value of one structured field that more than half the servers gave, if any."""
    key, count = Counter(values).most_common(1)[0]
    return key if count * 2 > len(values) else None


def _json(value: Any) -> str:
    value = plain(value)
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _latency_cell(value: Any, slowest: float) -> str:
    value = plain(value)
    if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        return ""
    width = max(1, round(80 * float(value) / slowest))
    return (f"<span style='{BAR};width:{width}px'></span> "
            f"<small>{float(value):.1f} ms</small>")


def latency_summary(df: pd.DataFrame, slowest: float | None = None) -> str:
    """Median latency per server, as a bar each."""
    medians: dict[str, float] = {}
    for server, group in df.groupby("server", sort=True):
        values = [float(v) for v in group["latency_ms"] if isinstance(v, (int, float))
                  and math.isfinite(float(v))]
        if values:
            values.sort()
            middle = len(values) // 2
            medians[str(server)] = (values[middle] if len(values) % 2 else
                                    (values[middle - 1] + values[middle]) / 2)
    if not medians:
        return ""
    top = slowest or max(medians.values()) or 1.0
    rows = "".join(
        f"<tr><td>{_html.cell(server, 40)}</td><td>{_latency_cell(ms, top)}</td></tr>"
        for server, ms in list(medians.items())[:50]
    )
    return (f"<table class='toolbench-table'><caption>median latency per server</caption>"
            f"{rows}</table>")
