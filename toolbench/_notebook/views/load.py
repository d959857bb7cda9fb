"""A picture of the load: ``df.tb.latency()`` (a table) and ``df.tb.timeline()`` (a figure).

Why from the records alone: a sweep against a rate-limited server is slow for one of three
reasons (the server is slow, its limit makes calls wait, or refusals cost retries), and each
record already holds what tells them apart: ``latency_ms`` counts from the send, ``queued_ms``
is the wait for a turn under a ``rate``, ``attempts`` counts tries, and a retried attempt's
record names its wait (``provenance["retry_wait_ms"]``). So the table keeps queueing apart
from latency, and the timeline draws each call as its wait and its flight, per server and
lane, with failures marked: a limit or a slow lane is seen, not guessed.

Works on a records frame (``bench.records``, ``bench.map``); matplotlib is imported only by
:func:`timeline` (the ``lab`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

NEEDS = ("server", "started", "ok", "disposition", "latency_ms")
LATENCY_COLUMNS = ("calls", "attempts", "retries", "calls_per_s", "error_rate",
                   "did_not_happen", "in_doubt", "landed_failed", "p50_ms", "p95_ms", "p99_ms",
                   "queued_p50_ms", "queued_p95_ms", "queued_p99_ms")
"""The columns of :func:`latency`: per group, the calls (last attempts), all attempts, the
retries, calls a second over the group's span, the share of calls failed (and by
disposition), latency from the send, and the wait for a turn, each at p50/p95/p99."""
BY = ("server", "tool", "name", "batch")


def _check(df: pd.DataFrame, what: str) -> None:
    missing = [c for c in NEEDS if c not in df.columns]
    if missing:
        raise ValueError(f"df.tb.{what}() reads a records frame (bench.records, bench.map); "
                         f"this one lacks {missing}")


def _retried(df: pd.DataFrame) -> pd.Series:
    """True for a row of an attempt that was tried again (a later row is its call's)."""
    import pandas as pd

    if "provenance" not in df.columns:
        return pd.Series(False, index=df.index)
    return df["provenance"].map(lambda p: isinstance(p, dict) and "retry_wait_ms" in p)


def latency(df: pd.DataFrame, by: str | None = "server") -> pd.DataFrame:
    """One row per ``by`` value (``server``, ``tool``, ``name``, ``batch``; None: one row,
    ``all``), with :data:`LATENCY_COLUMNS`."""
    import pandas as pd

    _check(df, "latency")
    if by is not None and by not in BY:
        raise ValueError(f"invalid by {by!r}: one of {', '.join(map(repr, BY))}, or None")
    df = df.reset_index(drop=True)  # a pd.concat of frames repeats labels: go by position
    retried = _retried(df)
    rows = {}
    column = df[by if by is not None else "server"].astype(object)
    missing = column.isna()
    keys = ["all"] if by is None else list(dict.fromkeys(
        None if gone else key for key, gone in zip(column, missing, strict=True)))
    for key in keys:
        # a call outside any batch (batch None) is a group too, not 0 calls
        group = df if by is None else df[missing] if key is None else df[column == key]
        final = group[~retried.loc[group.index]]
        calls = len(final)
        tries = final["attempts"].astype(int) if "attempts" in final.columns else None
        started = pd.to_datetime(group["started"], utc=True)
        ends = started + pd.to_timedelta(
            group["latency_ms"].astype(float).fillna(0.0)
            + (group["queued_ms"].astype(float).fillna(0.0) if "queued_ms" in group.columns
               else 0.0), unit="ms")
        span = (ends.max() - started.min()).total_seconds() if len(group) else 0.0
        failed = final[~final["ok"].astype(bool)]
        lat = final["latency_ms"].astype(float)
        queued = (final["queued_ms"].astype(float) if "queued_ms" in final.columns
                  else pd.Series(dtype=float))
        rows[key] = {
            "calls": calls, "attempts": len(group),
            "retries": int((tries - 1).sum()) if tries is not None else 0,
            "calls_per_s": calls / span if span > 0 else float("nan"),
            "error_rate": _share(len(failed), calls),
            **{("landed_failed" if d == "landed" else d):
               _share(int((failed["disposition"] == d).sum()), calls)
               for d in ("did_not_happen", "in_doubt", "landed")},
            **{f"p{q}_ms": lat.quantile(q / 100) if lat.notna().any() else float("nan")
               for q in (50, 95, 99)},
            **{f"queued_p{q}_ms": (queued.quantile(q / 100) if queued.notna().any()
                                   else float("nan")) for q in (50, 95, 99)},
        }
    out = pd.DataFrame.from_dict(rows, orient="index", columns=list(LATENCY_COLUMNS))
    out.index.name = by or "all"
    return out


def _share(count: int, calls: int) -> float:
    return count / calls if calls else float("nan")


def lanes(starts: list[float], ends: list[float]) -> list[int]:
    """A lane per call: the lowest whose last call ended before this one started (calls in
    flight together get different lanes; as many lanes as the most at once)."""
    order = sorted(range(len(starts)), key=lambda i: (starts[i], ends[i]))
    free_at: list[float] = []
    found = [0] * len(starts)
    for i in order:
        for lane, until in enumerate(free_at):
            if until <= starts[i]:
                free_at[lane] = ends[i]
                found[i] = lane
                break
        else:
            free_at.append(ends[i])
            found[i] = len(free_at) - 1
    return found


def timeline(df: pd.DataFrame, *, ax: Any = None, title: str | None = None) -> Figure:
    """A figure of the frame's calls over time: one band per server, a row per lane (calls
    in flight together), each call its wait for a turn (light) and its flight (solid);
    a failed call ends in a red cross, a retried attempt in an orange one."""
    import pandas as pd
    from matplotlib.figure import Figure

    _check(df, "timeline")
    fig: Figure
    if ax is None:
        fig = Figure(figsize=(10, 1.0 + 0.35 * max(1, _lane_count(df))))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    if len(df) == 0:
        ax.set_title(title or "no calls")
        return fig
    started = pd.to_datetime(df["started"], utc=True)
    zero = started.min()
    start_s = [(t - zero).total_seconds() for t in started]
    queued = (df["queued_ms"].astype(float).fillna(0.0) / 1000.0 if "queued_ms" in df.columns
              else pd.Series(0.0, index=df.index))
    flight = df["latency_ms"].astype(float).fillna(0.0) / 1000.0
    retried = _retried(df)
    row_base, ticks, labels = 0, [], []
    for server in dict.fromkeys(df["server"]):
        at = [i for i, s in enumerate(df["server"]) if s == server]
        begins = [start_s[i] for i in at]
        ends = [start_s[i] + float(queued.iloc[i]) + float(flight.iloc[i]) for i in at]
        lane_of = lanes(begins, ends)
        for j, i in enumerate(at):
            y = row_base + lane_of[j]
            wait = float(queued.iloc[i])
            if wait > 0:
                ax.broken_barh([(start_s[i], wait)], (y - 0.4, 0.8), color="#c6dbef")
            ax.broken_barh([(start_s[i] + wait, max(float(flight.iloc[i]), 1e-4))],
                           (y - 0.4, 0.8), color="#3182bd")
            if not bool(df["ok"].iloc[i]):
                ax.plot([ends[j]], [y], marker="x", color="#fd8d3c" if retried.iloc[i]
                        else "#d62728", markersize=5)
        count = max(lane_of) + 1
        ticks.append(row_base + (count - 1) / 2)
        labels.append(f"{server} ({count} lane{'s' * (count != 1)})")
        row_base += count + 1
    ax.set_yticks(ticks, labels)
    ax.set_ylim(-1, row_base - 1)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first call")
    ax.set_title(title or f"{len(df)} calls: wait for a turn (light), in flight (dark); "
                          "failed x (retried: orange)")
    fig.tight_layout()
    return fig


def _lane_count(df: pd.DataFrame) -> int:
    """Rows the figure needs (a rough count, for its height): servers times 4, capped."""
    return min(40, 4 * len(set(df["server"])) if "server" in df.columns else 4)
