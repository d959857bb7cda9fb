"""Scores of an eval frame: pass rates with their uncertainty, tool choice, arguments, cost.

``df.tb.scores()``, ``df.tb.confusion()`` and ``df.tb.plot_scores()`` read the frame that
``bench.evaluate`` returns (one row per case x server x repeat; DESIGN.md names its columns),
so a frame that went through a filter, ``pd.concat`` or a Parquet file still scores.

Why a Wilson interval: 18 passes out of 20 is not "90 %", it is "somewhere from 70 to 97 %".
Two servers whose intervals overlap have not been told apart, and an eval of a few dozen
cases rarely tells them apart by a few points. The Wilson score interval keeps its coverage
near 95 % for small samples and for rates near 0 or 1, where the textbook ``p +- 1.96 SE``
gives intervals that run past 0 or 1, or are empty at 0/n.

Tool choice is counted per call, as a multiset: a row that expected ``[distance]`` and saw
``[distance, distance]`` has one true positive and one false positive. Argument accuracy is
over the rows whose expected tools were all called, so it measures the arguments, not the
choice twice.

pandas is imported by the caller's frame; matplotlib only by ``plot_scores``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

Z95 = 1.959963984540054
"""The standard normal quantile for a two-sided 95 % interval."""
NONE = "(none)"
"""The confusion table's name for "no tool": expected nothing, or called nothing."""
EVAL_NEEDS = ("case", "server", "expected", "called", "passed")
BY = ("server", "case")
SCORE_COLUMNS = ("rows", "passed", "pass_rate", "pass_low", "pass_high", "precision",
                 "recall", "f1", "args_accuracy", "errors", "tokens_in", "tokens_out",
                 "model_ms")


def wilson(passed: int, total: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` out of ``total`` (NaN, NaN for no rows)."""
    if total <= 0:
        return math.nan, math.nan
    p = passed / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def require_eval(df: pd.DataFrame, what: str) -> None:
    """A clear error when ``df`` is not an eval frame, naming what it lacks."""
    missing = [c for c in EVAL_NEEDS if c not in df.columns]
    if missing:
        raise ValueError(f"{what} needs an eval frame (from bench.evaluate) with the columns "
                         f"{', '.join(EVAL_NEEDS)}; this frame lacks {', '.join(missing)}")


def tool_counts(expected: Iterable[str], called: Iterable[str]) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) of one row's tool choice."""
    want, got = Counter(expected), Counter(called)
    hit = sum((want & got).values())
    return hit, sum(got.values()) - hit, sum(want.values()) - hit


def scores(df: pd.DataFrame, by: str = "server") -> pd.DataFrame:
    """One row per server (or case): pass rate and its 95 % Wilson interval, tool-choice
    precision, recall and F1, argument accuracy, errors, mean tokens and model time.

    Columns: ``rows``, ``passed``, ``pass_rate``, ``pass_low``, ``pass_high``,
    ``precision``, ``recall``, ``f1`` (NaN where nothing was expected or called),
    ``args_accuracy`` (over rows whose expected tools were all called; NaN for none),
    ``errors`` (rows whose model failed), ``tokens_in``, ``tokens_out`` and ``model_ms``
    (means per row).
    """
    import pandas as pd

    require_eval(df, "scores()")
    if by not in BY:
        raise ValueError(f"scores(by=...) is 'server' or 'case', not {by!r}")
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in df.to_dict("records"):
        groups.setdefault(str(row[by]), []).append({str(k): v for k, v in row.items()})
    out = {key: _score(rows) for key, rows in groups.items()}
    table = pd.DataFrame.from_dict(out, orient="index", columns=list(SCORE_COLUMNS))
    if by == "server":
        table = table.sort_index()
    table.index.name = by
    return table


def _passed(value: object) -> bool:
    """A row's ``passed``: a missing one (NaN or None, from a frame concatenated with rows
    that lack it) is not a pass, though ``bool(nan)`` is True."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return bool(value)


def _score(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    total = len(rows)
    passed = sum(1 for r in rows if _passed(r["passed"]))
    low, high = wilson(passed, total)
    hit = false_pos = false_neg = 0
    args: list[bool] = []
    for r in rows:
        expected, called = _names(r["expected"]), _names(r["called"])
        tp, fp, fn = tool_counts(expected, called)
        hit, false_pos, false_neg = hit + tp, false_pos + fp, false_neg + fn
        if expected and _true(r.get("tool_ok")) and r.get("args_ok") is not None:
            args.append(_true(r.get("args_ok")))
    precision = hit / (hit + false_pos) if hit + false_pos else math.nan
    recall = hit / (hit + false_neg) if hit + false_neg else math.nan
    f1 = (2 * precision * recall / (precision + recall)
          if precision == precision and recall == recall and precision + recall else math.nan)
    return {
        "rows": total, "passed": passed, "pass_rate": passed / total if total else math.nan,
        "pass_low": low, "pass_high": high, "precision": precision, "recall": recall,
        "f1": f1, "args_accuracy": sum(args) / len(args) if args else math.nan,
        "errors": sum(1 for r in rows if _present(r.get("error"))),
        "tokens_in": _mean(r.get("tokens_in") for r in rows),
        "tokens_out": _mean(r.get("tokens_out") for r in rows),
        "model_ms": _mean(r.get("model_ms") for r in rows),
    }


def confusion(df: pd.DataFrame, server: str | None = None) -> pd.DataFrame:
    """Expected tools (rows) against chosen tools (columns), counted over every row (of one
    ``server``, if given).

    A tool both expected and called counts on the diagonal; the expected tools that were not
    called are paired, in order, with the called ones that were not expected; what is left
    pairs with ``(none)``. A row that expected nothing and called nothing is
    ``(none)``/``(none)``.
    """
    import pandas as pd

    require_eval(df, "confusion()")
    if server is not None:
        servers = sorted(map(str, set(df["server"])))
        if server not in servers:
            raise ValueError(f"server {server!r} is not in this eval frame; its servers: "
                             f"{', '.join(servers) or 'none'}")
        df = df[df["server"].astype(str) == server]
    counts: Counter[tuple[str, str]] = Counter()
    for expected, called in zip(df["expected"], df["called"], strict=True):
        for pair in pairs(_names(expected), _names(called)):
            counts[pair] += 1
    labels_e = sorted({e for e, _ in counts}, key=_label_order)
    labels_c = sorted({c for _, c in counts}, key=_label_order)
    table = pd.DataFrame([[counts.get((e, c), 0) for c in labels_c] for e in labels_e],
                         index=pd.Index(labels_e, name="expected"),
                         columns=pd.Index(labels_c, name="chosen"), dtype=int)
    return table


def pairs(expected: Sequence[str], called: Sequence[str]) -> list[tuple[str, str]]:
    """One row's (expected, chosen) pairs (see :func:`confusion`)."""
    want, got = Counter(expected), Counter(called)
    both = want & got
    out = [(tool, tool) for tool in both.elements()]
    missed = list((want - both).elements())
    extra = list((got - both).elements())
    for index in range(max(len(missed), len(extra))):
        out.append((missed[index] if index < len(missed) else NONE,
                    extra[index] if index < len(extra) else NONE))
    if not expected and not called:
        out.append((NONE, NONE))
    return out


def plot_scores(df: pd.DataFrame, by: str = "server", ax: Any = None) -> Any:
    """A bar per server (or case): its pass rate, with the 95 % Wilson interval as an error
    bar. Returns the matplotlib Axes (matplotlib is in the ``lab`` extra)."""
    table = scores(df, by=by)
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plot_scores needs matplotlib: pip install 'toolbench[lab]' "
                          "(or matplotlib)") from exc
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * max(1, len(table))))
    rates = table["pass_rate"].fillna(0.0)
    below = (rates - table["pass_low"].fillna(0.0)).clip(lower=0)
    above = (table["pass_high"].fillna(0.0) - rates).clip(lower=0)
    labels = [str(i) for i in table.index]
    ax.barh(labels, rates, xerr=[below, above], capsize=4, color="#4c72b0")
    ax.set_xlim(0, 1)
    ax.set_xlabel("pass rate (95 % Wilson interval)")
    ax.set_ylabel(by)
    ax.invert_yaxis()
    for y, (rate, row) in enumerate(zip(rates, table.itertuples(), strict=True)):
        ax.text(0.01, y, f"{rate:.0%} of {row.rows}", va="center", color="white")
    return ax


def _label_order(label: str) -> tuple[int, str]:
    return (1 if label == NONE else 0, label)


def _names(value: Any) -> list[str]:
    """A list column's value as tool names: a list, or JSON text (a frame read from CSV)."""
    if isinstance(value, str):
        import json

        try:
            value = json.loads(value)
        except ValueError:
            return [value]
    if value is None or isinstance(value, float):
        return []
    return [str(v) for v in value]


def _true(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) \
        and bool(value)


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) \
        and value != ""


def _mean(values: Iterable[Any]) -> float:
    found = [float(v) for v in values
             if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(found) / len(found) if found else math.nan
