"""How the bench's own DataFrames render in a notebook: pandas' table, kept out of MathJax,
and a failed server's whole error one click away.

The frames stay plain pandas objects, shown by pandas' own HTML. Two things go wrong there
on real servers (issue 37): JupyterLab typesets ``$…$`` in an output as TeX, so a catalog's
``$ref``/``$defs`` became math; and pandas cuts every cell at ``display.max_colwidth`` (50),
so ``bench.servers`` showed "server 'time' failed to start (stdio mcp-serve…" and no way to
the rest. :func:`install` registers an IPython ``text/html`` printer for DataFrames that
changes only the bench's frames (told by their columns, or ``attrs["toolbench"]``): their
table is wrapped in an element MathJax skips, and a servers frame gets a ``<details>`` per
failed server with its full error and stderr, escaped. Any other frame renders exactly as
before (through whatever printer was registered first). Display never raises.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from toolbench._bench.journal.record import RESULT_META
from toolbench._core import html as _html
from toolbench._notebook.views.cells import plain
from toolbench._notebook.views.display import kind_of

if TYPE_CHECKING:
    import pandas as pd

NO_MATH = _html.NO_MATH
MAX_DETAIL = 20_000
"""Characters of one server's error or stderr shown in its <details>."""
_installed: list[object] = []


def is_bench_frame(df: pd.DataFrame) -> bool:
    return bool(df.attrs.get("toolbench")) or kind_of(df) != "table"


def failures_html(df: pd.DataFrame) -> str:
    """A ``<details>`` per row of a servers frame that has an error: the whole text."""
    parts = []
    for row in df.head(200).to_dict("records"):
        error, stderr = (str(plain(row.get(k))) for k in ("error", "stderr_tail"))
        if not error.strip():
            continue
        name = _html.escape(_html.shorten(str(row.get("name", "")), 80))
        body = ("<pre style='white-space:pre-wrap'>"
                f"{_html.escape(_html.shorten(error, MAX_DETAIL))}</pre>")
        if stderr.strip():
            body += ("<div><small>its stderr (last lines)</small></div><pre style='white-space:"
                     f"pre-wrap'>{_html.escape(_html.shorten(stderr, MAX_DETAIL))}</pre>")
        parts.append(f"<details class='toolbench-failure'><summary>why <b>{name}</b> "
                     f"failed (the whole error)</summary>{body}</details>")
    return "".join(parts)


def provenance_text(value: Any) -> Any:
    """A record's provenance as shown in a table: who opened the call first (``opened by``
    and the opening call's id, for a call a view made), then the rest, so pandas' cut at
    ``display.max_colwidth`` (50) keeps the part a reader looks for. The frame's value stays
    the dict; a result's kept ``_meta`` is only named (it is for views, not for reading)."""
    if not isinstance(value, dict):
        return value
    app = value.get("app")
    opened_by = app.get("opened_by") if isinstance(app, dict) else None
    parts = [f"opened by {opened_by}"] if opened_by else []
    for key, item in value.items():
        if key == "app" and isinstance(app, dict):
            parts.append(f"app {app.get('uri')}")
        elif key == RESULT_META:
            parts.append("result _meta kept")
        else:
            parts.append(f"{key} {item}")
    return " · ".join(parts)


def _shown(df: pd.DataFrame) -> pd.DataFrame:
    if "provenance" not in df.columns:
        return df
    shown = df.copy(deep=False)
    shown["provenance"] = [provenance_text(p) for p in df["provenance"]]
    return shown


def frame_repr_html(df: pd.DataFrame) -> str | None:
    """pandas' HTML for a bench frame, outside MathJax, with its failures in full."""
    try:
        table: str | None = _shown(df)._repr_html_()  # type: ignore[operator]
        if table is None:
            return None
        extra = failures_html(df) if "stderr_tail" in df.columns and "error" in df.columns \
            else ""
        return _html.no_math(table + extra)
    except Exception:
        return None


def install() -> bool:
    """Register the printer on the running IPython shell, if any (once); True if it is."""
    if _installed:
        return True
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        import pandas as pd

        shell = ipython.get_ipython()
        formatter = shell.display_formatter.formatters["text/html"] if shell else None
        if formatter is None:
            return False
        previous = formatter.lookup_by_type(pd.DataFrame) if _has_printer(formatter) else None

        def printer(df: Any) -> str | None:
            if isinstance(df, pd.DataFrame) and is_bench_frame(df):
                shown = frame_repr_html(df)
                if shown is not None:
                    return shown
            if previous is not None:
                return previous(df)  # type: ignore[no-any-return]
            return df._repr_html_()  # type: ignore[no-any-return]

        formatter.for_type(pd.DataFrame, printer)
        _installed.append(printer)
        return True
    except Exception:
        return False


def _has_printer(formatter: Any) -> bool:
    import pandas as pd

    try:
        formatter.lookup_by_type(pd.DataFrame)
        return True
    except KeyError:
        return False
