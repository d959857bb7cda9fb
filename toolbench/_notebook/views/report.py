"""The HTML of a catalog report (``df.tb.report()``), per tool, per server and per name.

Every value is escaped and capped like the other tables (``cells.cell``). Severities are
marked: a finding shows as a coloured badge (error red, warning amber, info blue) before its
rule and message, and a tool's row is tinted by its worst finding. A finding's message quotes
a server's text only through ``poisoning.visible`` (hidden and bidi characters spelled out as
``<U+202E>``), and is escaped here again. Per name, the cheapest server and the best documented
one are marked in their cells. The explorer uses :func:`findings_html` beside a tool's
description.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._notebook.views.cells import MAX_ROWS, TABLE_STYLE, cell, column_class

if TYPE_CHECKING:
    import pandas as pd

SEVERITIES = ("error", "warning", "info")
REPORT_STYLE = (
    "<style>.toolbench-report .tb-sev{display:inline-block;border-radius:3px;padding:0 4px;"
    "font-size:11px;font-weight:bold;color:#fff;margin-right:4px}"
    ".toolbench-report .tb-sev-error{background:#b00020}"
    ".toolbench-report .tb-sev-warning{background:#9a6700}"
    ".toolbench-report .tb-sev-info{background:#3a6fb0}"
    ".toolbench-report tr.tb-worst-error td:first-child{border-left:4px solid #b00020}"
    ".toolbench-report tr.tb-worst-warning td:first-child{border-left:4px solid #d4a72c}"
    ".toolbench-report tr.tb-worst-info td:first-child{border-left:4px solid #3a6fb0}"
    ".toolbench-report td.tb-count-error{color:#b00020;font-weight:bold}"
    ".toolbench-report td.tb-count-warning{color:#9a6700;font-weight:bold}"
    ".toolbench-report .tb-best{background:#dafbe1;font-weight:bold}"
    ".toolbench-report td.tb-has-error{background:#ffebe9}"
    ".toolbench-report .tb-mark{font-size:11px;color:#1a7f37}</style>"
)
MAX_FINDINGS = 20
"""Findings shown in one cell; the rest are counted."""
MESSAGE = 300
"""Characters of one finding's message shown."""


def severity_badge(severity: object) -> str:
    name = str(severity)
    css = name if name in SEVERITIES else "info"
    return f"<span class='tb-sev tb-sev-{css}'>{_html.escape(_html.shorten(name, 20))}</span>"


def findings_html(findings: object, limit: int = MAX_FINDINGS) -> str:
    """Findings as badges, each on its own line: severity, rule, message; "none" when
    empty."""
    items = [f for f in findings if isinstance(f, dict)] if isinstance(findings, list) else []
    if not items:
        return "<span style='color:#1a7f37'>none</span>"
    ordered = sorted(items, key=lambda f: _rank(f.get("severity")))
    lines = [f"{severity_badge(f.get('severity'))}"
             f"<code>{_html.escape(_html.shorten(str(f.get('rule')), 60))}</code> "
             f"{_html.escape(_html.shorten(str(f.get('message', '')), MESSAGE))}"
             for f in ordered[:limit]]
    if len(items) > limit:
        lines.append(f"<small>and {len(items) - limit:,} more</small>")
    return "<br>".join(lines)


def explorer_html(findings: object, tokens: int | None, tokenizer: str | None) -> str:
    """What the explorer shows beside a tool's description: its cost and its findings."""
    cost = (f"<small>{tokens:,} tokens ({_html.escape(str(tokenizer))})</small> · "
            if tokens is not None else "")
    return (f"{REPORT_STYLE}<div class='toolbench-report toolbench-findings' "
            f"style='margin-top:0.4em'>{cost}<small>findings:</small><br>"
            f"{findings_html(findings)}</div>")


def _rank(severity: object) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def _worst(findings: object) -> str | None:
    ranks = [_rank(f.get("severity")) for f in findings or [] if isinstance(f, dict)] \
        if isinstance(findings, list) else []
    best = min(ranks, default=len(SEVERITIES))
    return SEVERITIES[best] if best < len(SEVERITIES) else None


def _table(head: Sequence[str], body: list[str], total: int, max_rows: int, caption: str
           ) -> str:
    note = _html.counted(total, "row") if total <= max_rows else (
        f"showing {max_rows:,} of {_html.counted(total, 'row')}")
    heads = "".join(f"<th>{_html.escape(h)}</th>" for h in head)
    return (f"{TABLE_STYLE}{REPORT_STYLE}<div class='toolbench-scroll'>"
            f"<table class='toolbench-table toolbench-report'>"
            f"<caption>{_html.escape(caption)}</caption><thead><tr>{heads}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div><p><small>{note}</small></p>")


def _share(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{float(value):.0%}"


def _tokenizers(values: Any) -> str:
    return ", ".join(sorted({str(v) for v in values})) or "none"


def report_html(df: pd.DataFrame, *, max_rows: int = MAX_ROWS) -> str:
    """One row per tool, tinted by its worst finding."""
    if len(df) == 0:
        return "<p><i>no tools</i></p>"
    head = ["name", "server", "tokens", "description_chars", "parameters", "documented",
            "findings"]
    body = []
    for row in df.head(max_rows).to_dict("records"):
        worst = _worst(row.get("findings"))
        css = f" class='tb-worst-{worst}'" if worst else ""
        cells = [f"<td{column_class(c)}>{cell(row.get(c), 60, c)}</td>"
                 for c in ("name", "server")]
        cells += [f"<td class='tb-number'>{_count(row.get(c))}</td>"
                  for c in ("tokens", "description_chars", "parameters")]
        cells.append(f"<td class='tb-number'>{_share(row.get('documented'))}</td>")
        cells.append(f"<td class='tb-wide'>{findings_html(row.get('findings'))}</td>")
        body.append(f"<tr{css}>{''.join(cells)}</tr>")
    caption = f"catalog report (tokens: {_tokenizers(df['tokenizer'])})"
    return _table(head, body, len(df), max_rows, caption)


def by_server_html(df: pd.DataFrame, *, max_rows: int = MAX_ROWS) -> str:
    """One row per server; error and warning counts coloured when not zero."""
    if len(df) == 0:
        return "<p><i>no servers</i></p>"
    head = ["server", "tools", "tokens", "errors", "warnings", "infos", "documented"]
    body = []
    for row in df.head(max_rows).to_dict("records"):
        cells = [f"<td class='tb-nowrap'>{cell(row.get('server'), 60)}</td>",
                 f"<td class='tb-number'>{cell(row.get('tools'), 20)}</td>",
                 f"<td class='tb-number'>{_count(row.get('tokens'))}</td>"]
        for column, severity in (("errors", "error"), ("warnings", "warning"),
                                 ("infos", "info")):
            value = row.get(column)
            css = f" tb-count-{severity}" if isinstance(value, (int, float)) and value else ""
            cells.append(f"<td class='tb-number{css}'>{cell(value, 20)}</td>")
        cells.append(f"<td class='tb-number'>{_share(row.get('documented'))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    tokenizers = _tokenizers(df["tokenizer"]) if "tokenizer" in df.columns else "unknown"
    return _table(head, body, len(df), max_rows, f"catalog report by server (tokens: "
                                                  f"{tokenizers})")


def _count(value: Any) -> str:
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return "—"


def by_name_html(df: pd.DataFrame, *, max_rows: int = MAX_ROWS) -> str:
    """One row per tool name, a cell per server: tokens, documented share and findings
    counted by severity; the cheapest and best documented marked."""
    if len(df) == 0:
        return "<p><i>no tools</i></p>"
    servers = [str(c)[len("tokens."):] for c in df.columns if str(c).startswith("tokens.")]
    body = []
    for row in df.head(max_rows).to_dict("records"):
        cheapest = set(row.get("cheapest") or [])
        documented = set(row.get("best_documented") or [])
        cells = [f"<td class='tb-nowrap'>{cell(row.get('tool'), 60)}</td>"]
        for server in servers:
            findings = row.get(f"findings.{server}")
            if not isinstance(findings, list):
                cells.append("<td style='color:#888'>—</td>")
                continue
            marks = []
            if server in cheapest:
                marks.append("<span class='tb-mark'>cheapest</span>")
            if server in documented:
                marks.append("<span class='tb-mark'>best documented</span>")
            counts = [f"{severity_badge(s)}{n}" for s in SEVERITIES
                      if (n := sum(1 for f in findings if isinstance(f, dict)
                                   and f.get("severity") == s))]
            # an error outweighs a mark: the cheapest tool that poisons is no bargain
            css = (" class='tb-has-error'" if _worst(findings) == "error"
                   else " class='tb-best'" if marks else "")
            share = _share(row.get(f"documented.{server}"))
            rules = "; ".join(sorted({str(f.get("rule")) for f in findings
                                      if isinstance(f, dict)}))
            title = f" title='{_html.escape(_html.shorten(rules, 500))}'" if rules else ""
            cells.append(
                f"<td{css}{title}>{_count(row.get(f'tokens.{server}'))} tokens · "
                f"{'no parameters' if share == '—' else share + ' documented'}"
                f"{'<br>' + ' '.join(counts) if counts else ''}"
                f"{'<br>' + ' '.join(marks) if marks else ''}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    head = ["tool", *servers]
    return _table(head, body, len(df), max_rows, "same-named tools side by side")


def report_frame_html(df: pd.DataFrame, kind: str, *, max_rows: int = MAX_ROWS) -> str:
    """The view for a report frame of ``kind`` (``report``, ``report_by_server``,
    ``report_by_name``); display never raises."""
    view = {"report": report_html, "report_by_server": by_server_html,
            "report_by_name": by_name_html}.get(kind, report_html)
    try:
        return view(df, max_rows=max_rows)
    except Exception as exc:
        return f"<pre>report could not be shown ({_html.escape(type(exc).__name__)})</pre>"
