"""Safe, capped HTML for the bench's tables and results; display never raises.

The DataFrames stay plain pandas objects (users do pandas on them). pandas' own HTML repr
escapes and truncates under its default options, but it has no tooltips, and a user who
sets ``display.max_colwidth`` to None gets every byte a server sent in the page. So
``show()`` and the widgets render from plain values here: every string escaped, every cell
and table capped, and ``text/plain`` always present.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._core.client import result_html as result_html
from toolbench._notebook.views.cells import (
    MAX_CELL,
    MAX_ROWS,
    TABLE_STYLE,
    cell,
    column_class,
    plain,
)

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.bench import BaseBench as Bench

_DISPOSITION_NOTE = {
    "did_not_happen": "nothing ran on the server: safe to retry",
    "in_doubt": "it may or may not have run: do not retry blindly",
    "landed": "the tool ran: retrying runs it again",
}
RECORD_VIEW = ("started", "kind", "name", "arguments", "ok", "disposition", "error_type",
               "latency_ms", "text", "error")
CATALOG_VIEW = ("name", "server", "tool", "ui", "title", "description", "parameters",
                "required", "warnings")
SERVER_VIEW = ("name", "transport", "status", "tools", "destination", "error", "warnings")


def html_table(df: pd.DataFrame, *, max_rows: int = MAX_ROWS, max_cell: int = MAX_CELL,
               caption: str | None = None, columns: Sequence[str] | None = None) -> str:
    """An escaped HTML table of at most ``max_rows`` rows, long cells shortened with a tooltip."""
    if columns is not None:
        df = df[[c for c in columns if c in df.columns]]
    total = len(df)
    shown = df.head(max_rows)
    head = "".join(f"<th>{_html.cell(c, 40)}</th>" for c in shown.columns)
    classes = [column_class(c) for c in shown.columns]
    body = []
    for values in shown.itertuples(index=False, name=None):
        cells = "".join(f"<td{k}>{cell(v, max_cell, c)}</td>"
                        for k, v, c in zip(classes, values, shown.columns, strict=True))
        body.append(f"<tr>{cells}</tr>")
    note = f"<p><small>{_html.counted(total, 'row')}</small></p>" if total <= max_rows else (
        f"<p><small>showing {max_rows:,} of {_html.counted(total, 'row')}</small></p>")
    cap = f"<caption>{_html.escape(caption)}</caption>" if caption else ""
    return (f"{TABLE_STYLE}<div class='toolbench-scroll'><table class='toolbench-table'>{cap}"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{note}")


# -- results and errors ---------------------------------------------------------------------
def error_html(error: BaseException) -> str:
    """The error's type, its disposition (did it run?) and detail, escaped."""
    try:
        kind = type(error).__name__
        disposition = str(getattr(error, "disposition", "") or "")
        note = _DISPOSITION_NOTE.get(disposition, "")
        detail = _html.shorten(str(error), 4000)
        parts = [
            f"<div class='toolbench-error'><b style='color:#b00020'>{_html.escape(kind)}</b>",
            f" <code>{_html.escape(disposition)}</code>" if disposition else "",
            f" <small>({_html.escape(note)})</small>" if note else "",
            f"<pre style='white-space:pre-wrap'>{_html.escape(detail)}</pre>",
        ]
        urls = getattr(error, "urls", None)  # -32042: a page the user must open first
        if isinstance(urls, list) and urls:
            from toolbench._notebook.ask.widgets import safe_link  # a link, never opened for them

            parts.append("<div>Open " + ", ".join(safe_link(str(u)) for u in urls[:5])
                         + ", then try again.</div>")
        attached = getattr(error, "result", None)
        if attached is not None and hasattr(attached, "content") and _adds_to(attached, error):
            parts.append(result_html(attached, budget=_html.RESULT_BUDGET // 2))
        parts.append("</div>")
        return "".join(parts)
    except Exception:
        return "<pre>error (could not be shown)</pre>"


def _adds_to(result: Any, error: BaseException) -> bool:
    """Whether a failed call's result shows more than the error's own text already does.

    A ToolFailed's message usually *is* the result's text; showing both printed it twice.
    Images, structured content and other blocks still show.
    """
    try:
        if result.structured is not None:
            return True
        if any(isinstance(b, dict) and b.get("type") != "text" for b in result.content):
            return True
        text = str(result.text).strip()
        return bool(text) and text[:2000] not in str(error)
    except Exception:
        return True


# -- the bench's tables -----------------------------------------------------------------------
HISTORY_CELL = 48
HISTORY_ERROR_CELL = 140
"""One tool's History has few columns, so a cell may hold enough of an error to read its hint
(it wraps; the whole text is in the tooltip)."""


HISTORY_VIEW = ("started", "ok", "disposition", "latency_ms", "answer or error", "arguments")
"""One tool's history (the explorer's History tab): its name, server and kind go without
saying, and a call has an answer or an error, never both, so they share one column, placed
before the arguments: the error is the first thing to read in a narrow pane."""


def newest_first(df: pd.DataFrame) -> pd.DataFrame:
    """Records by when they started, the latest first (calls that started together: the one
    recorded last first). Records are kept in the order calls *ended*."""
    if "started" not in df.columns:
        return df.iloc[::-1]
    return df.iloc[::-1].sort_values("started", ascending=False, kind="stable")


def history_html(df: pd.DataFrame, *, caption: str, max_rows: int = MAX_ROWS) -> str:
    """One tool's records in the :data:`HISTORY_VIEW` columns, newest first by start."""
    if len(df) == 0:
        return "<i>no calls yet</i>"
    import pandas as pd

    view = newest_first(df).head(max_rows * 2)
    outcome = [plain(text) if bool(ok) else f"{plain(kind)}: {plain(error)}"
               for ok, text, kind, error in zip(view["ok"], view["text"], view["error_type"],
                                                view["error"], strict=True)]
    frame = pd.DataFrame({"started": view["started"], "ok": view["ok"],
                          "disposition": view["disposition"], "latency_ms": view["latency_ms"],
                          "answer or error": outcome, "arguments": view["arguments"]})
    return html_table(frame.head(max_rows), max_rows=max_rows, max_cell=HISTORY_ERROR_CELL,
                      caption=caption) + (f"<p><small>{_html.counted(len(df), 'call')} in all"
                                          f"</small></p>" if len(df) > max_rows else "")


def records_html(df: pd.DataFrame, *, max_rows: int = MAX_ROWS,
                 columns: Sequence[str] = RECORD_VIEW,
                 caption: str = "calls (newest first)") -> str:
    """The call history, newest first by start; cells kept short (the full text is in the
    tooltip)."""
    if len(df) == 0:
        return "<i>no calls yet</i>"
    return html_table(newest_first(df), max_rows=max_rows, columns=columns,
                      max_cell=HISTORY_CELL, caption=caption)


def kind_of(df: pd.DataFrame) -> str:
    """Which of the bench's tables this is, told by its columns (the contract)."""
    columns = set(df.columns)
    if {"case", "server", "latency_ms", "ok"} <= columns:
        return "compare"
    if {"call_id", "started", "provenance"} <= columns:
        return "records"
    if {"tokens", "tokenizer", "findings"} <= columns:
        return "report"
    if {"tools", "tokens", "errors", "warnings", "documented"} <= columns:
        return "report_by_server"
    if {"tool", "servers", "cheapest", "best_documented"} <= columns:
        return "report_by_name"
    if {"input_schema", "parameters", "tool"} <= columns:
        return "catalog"
    if {"transport", "status", "stderr_tail"} <= columns:
        return "servers"
    if {"change", "kind", "field", "old", "new"} <= columns:
        return "diff"
    if {"parameter", "differs", "present_on"} <= columns:
        return "schema_diff"
    if {"case", "server", "expected", "called", "passed"} <= columns:
        return "eval"
    return "table"


def frame_html(df: pd.DataFrame, *, max_rows: int = MAX_ROWS) -> str:
    kind = kind_of(df)
    if kind == "compare":
        from toolbench._notebook.views.compare import compare_html

        return compare_html(df, max_rows=max_rows)
    if kind == "records":
        return html_table(df, max_rows=max_rows, columns=RECORD_VIEW, caption="records")
    if kind == "catalog":
        return html_table(df, max_rows=max_rows, columns=CATALOG_VIEW, caption="catalog")
    if kind == "servers":
        return html_table(df, max_rows=max_rows, columns=SERVER_VIEW, caption="servers")
    if kind.startswith("report"):
        from toolbench._notebook.views.report import report_frame_html

        return report_frame_html(df, kind, max_rows=max_rows)
    if kind in ("diff", "schema_diff"):
        from toolbench._notebook.views import diff as diff_view

        return (diff_view.diff_html if kind == "diff" else diff_view.schema_diff_html)(
            df, max_rows=max_rows)
    if kind == "eval":
        return html_table(df, max_rows=max_rows, caption="eval")
    return html_table(df, max_rows=max_rows)


def frame_text(df: pd.DataFrame, *, max_rows: int = 20, width: int = 40) -> str:
    """A capped text rendering: each cell cut to ``width`` so no cell floods a terminal."""
    try:
        head = df.head(max_rows).map(lambda v: _html.shorten(_html.to_text(plain(v)), width))
        text = head.to_string(max_cols=12)
        if len(df) > max_rows:
            text += f"\n[showing {max_rows:,} of {_html.counted(len(df), 'row')}]"
        return text
    except Exception:
        return f"<{type(df).__name__}: {_html.counted(len(df), 'row')}>"


class Shown:
    """A display wrapper from :func:`show`: ``text/plain`` and escaped ``text/html``."""

    def __init__(self, obj: Any, max_rows: int = MAX_ROWS) -> None:
        self.obj = obj
        self.max_rows = max_rows

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self.obj, max_rows=self.max_rows)

    def __repr__(self) -> str:
        return str(bundle(self.obj, max_rows=self.max_rows).get("text/plain", ""))


def show(obj: Any, max_rows: int = MAX_ROWS) -> Shown:
    """Display a bench table (servers, catalog, records, compare), Result or error safely."""
    return Shown(obj, max_rows)


def bundle(obj: Any, *, max_rows: int = MAX_ROWS) -> dict[str, Any]:
    """The mime bundle for ``obj``; always has ``text/plain``, never raises; its HTML is
    kept out of MathJax (a server's ``$…$`` is text)."""
    out = _bundle(obj, max_rows=max_rows)
    if isinstance(out.get("text/html"), str) and _html.NO_MATH not in out["text/html"][:80]:
        out = {**out, "text/html": _html.no_math(out["text/html"])}
    return out


def _bundle(obj: Any, *, max_rows: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        import pandas as pd

        if isinstance(obj, pd.DataFrame):
            out["text/plain"] = frame_text(obj)
            out["text/html"] = frame_html(obj, max_rows=max_rows)
            return out
        from toolbench._core.client import Result

        own = getattr(obj, "_repr_mimebundle_", None)
        if callable(own) and not isinstance(obj, Shown):  # a Bench, a widget: as they show
            found = own()
            if isinstance(found, dict) and "text/plain" in found:
                return found
        if isinstance(obj, Result):
            out["text/plain"] = repr(obj)
            out["text/html"] = result_html(obj)
            return out
        if isinstance(obj, BaseException):
            out["text/plain"] = _html.shorten(f"{type(obj).__name__}: {obj}", 4000)
            out["text/html"] = error_html(obj)
            return out
        out["text/plain"] = _html.shorten(repr(obj), 4000)
        out["text/html"] = f"<pre>{_html.escape(out['text/plain'])}</pre>"
    except Exception as exc:
        out.setdefault("text/plain", f"<{type(obj).__name__} (display failed: "
                                     f"{type(exc).__name__})>")
    return out


def bench_bundle(bench: Bench) -> dict[str, Any]:
    out: dict[str, Any] = {"text/plain": _safe_repr(bench)}
    try:
        servers = bench.servers
        out["text/plain"] += "\n" + frame_text(servers[list(SERVER_VIEW)])
        out["text/html"] = _html.no_math(
            f"<div><b>{_html.escape(_safe_repr(bench))}</b>"
            f"{html_table(servers, columns=SERVER_VIEW, caption='servers')}</div>"
        )
    except Exception:
        pass
    return out


def _safe_repr(obj: Any) -> str:
    try:
        return _html.shorten(repr(obj), 2000)
    except Exception:
        return f"<{type(obj).__name__}>"

