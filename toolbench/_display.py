"""Safe, capped HTML for the bench's tables; display never raises and always has text/plain.

pandas' own HTML escapes but a Styler does not, and neither knows our tooltips or caps, so
tables are rendered here from plain values, every string escaped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolbench import _html

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench import Bench

MAX_ROWS = 50
MAX_CELL = 80


def html_table(df: pd.DataFrame, *, max_rows: int = MAX_ROWS, max_cell: int = MAX_CELL,
               caption: str | None = None) -> str:
    """An escaped HTML table of at most ``max_rows`` rows, long cells shortened with a tooltip."""
    total = len(df)
    shown = df.head(max_rows)
    head = "".join(f"<th>{_html.escape(c)}</th>" for c in shown.columns)
    body = []
    for values in shown.itertuples(index=False, name=None):
        cells = "".join(f"<td>{_html.cell(_plain(v), max_cell)}</td>" for v in values)
        body.append(f"<tr>{cells}</tr>")
    note = ""
    if total > max_rows:
        note = f"<p><small>showing {max_rows} of {total} rows</small></p>"
    cap = f"<caption>{_html.escape(caption)}</caption>" if caption else ""
    return (f"<table class='toolbench-table'>{cap}<thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{note}")


def _plain(value: Any) -> Any:
    if value is None:
        return ""
    try:
        import pandas as pd

        if not isinstance(value, (list, dict)) and pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    return value


def bench_bundle(bench: Bench) -> dict[str, Any]:
    bundle: dict[str, Any] = {"text/plain": repr(bench)}
    try:
        servers = bench.servers[["name", "transport", "status", "tools", "destination", "error"]]
        bundle["text/html"] = (
            f"<div><b>{_html.escape(repr(bench))}</b>"
            f"{html_table(servers, caption='servers')}</div>"
        )
    except Exception:
        pass
    return bundle
