"""``df.tb``: the bench's DataFrames know how to show, pivot, summarise and save themselves.

Registration without importing pandas. ``import toolbench`` must stay light (no pandas), yet
``pd.api.extensions.register_dataframe_accessor`` needs pandas. So :func:`install` (run when
this module is imported, by ``import toolbench``) registers at once if pandas is already
imported, and otherwise puts a one-shot hook on ``sys.meta_path`` that registers right after
pandas finishes importing, whoever imports it (the bench, the user, another library), then
removes itself. Either way ``df.tb`` exists on every DataFrame as soon as pandas does, and a
kernel that never touches pandas never pays for it. :func:`register` is idempotent and can be
called directly.

The frames are told apart by their columns (the contract in DESIGN.md), so a frame that
went through ``pd.concat``, a filter or a file still works. Methods that need a certain kind
of frame say which columns they miss.

Answers. A row's *answer* is what a reader compares: the one ``structured.<field>`` value when
the tool returns a single field (or the ``field`` asked for), else the structured dict, else
the text; a failed call has none. When a (case, server) pair has several rows (a retry was
appended), the last successful one counts.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import json
import math
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from toolbench._notebook.views.cells import MAX_ROWS
from toolbench._notebook.views.display import Shown, kind_of
from toolbench._notebook.views.frames import install as install_frames

if TYPE_CHECKING:
    import pandas as pd

ACCESSOR = "tb"
COMPARE_NEEDS = ("case", "server", "ok")
SUMMARY_NEEDS = ("server", "ok", "latency_ms")

_lock = threading.Lock()
_registered = False


# -- registration ------------------------------------------------------------------------------
def register() -> None:
    """Register ``df.tb`` on pandas' DataFrame (imports pandas); safe to call again."""
    global _registered
    with _lock:
        if _registered:
            return
        import pandas as pd

        existing = getattr(pd.DataFrame, ACCESSOR, None)  # on the class: the accessor class
        if existing is None:
            pd.api.extensions.register_dataframe_accessor(ACCESSOR)(TableAccessor)
        elif existing is not TableAccessor:
            warnings.warn(f"DataFrame.{ACCESSOR} is taken by another library; toolbench's "
                          f"accessor is not registered (use toolbench.show and friends)",
                          stacklevel=2)
        _registered = True
        _remove_hook()
    install_frames()  # in a notebook: the bench's frames outside MathJax, failures in full


class _PandasHook(importlib.abc.MetaPathFinder):
    """Finds nothing itself; makes pandas' own loader call :func:`register` after it ran."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "pandas":
            return None
        spec = None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if spec is None or loader is None or run is None:
            return spec
        loader.exec_module = _then_register(run)  # this import's own loader object only
        return spec


def _then_register(run: Callable[[ModuleType], None]) -> Callable[[ModuleType], None]:
    def exec_module(module: ModuleType) -> None:
        run(module)
        try:
            register()
        except Exception as exc:  # never break the user's `import pandas`
            warnings.warn(f"toolbench could not register df.{ACCESSOR}: "
                          f"{type(exc).__name__}: {exc}", stacklevel=2)

    return exec_module


_hook = _PandasHook()


def _remove_hook() -> None:
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(_hook)


def install() -> None:
    """Have ``df.tb`` as soon as pandas is imported, without importing it here."""
    if _registered:
        return
    if "pandas" in sys.modules:
        register()
    elif _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)


# -- the accessor ------------------------------------------------------------------------------
class TableAccessor:
    """``df.tb``: toolbench's view of a bench DataFrame (compare, records, catalog, servers)."""

    def __init__(self, df: pd.DataFrame) -> None:
        self._df = df

    @property
    def kind(self) -> str:
        """Which bench table this is, told by its columns: compare, records, catalog, servers
        or table."""
        return kind_of(self._df)

    def show(self, max_rows: int = MAX_ROWS) -> Shown:
        """The escaped, capped HTML view: the compare view (disagreement marks, latency bars)
        for a compare frame, the records view for records."""
        return Shown(self._df, max_rows)

    def answers(self, reference: str | None = None, *, field: str | None = None,
                percent: bool = False) -> pd.DataFrame:
        """One row per case, one column per server, each cell that server's answer.

        With ``reference`` (a server), each *other* server's difference from it instead:
        ``answer - reference`` for numbers (``percent=True``: in percent of the reference),
        and True/False (same answer or not) for anything else. A missing answer (a failed
        call) is NaN, or None in a non-numeric frame. ``field`` picks one structured field.
        """
        import pandas as pd

        table = self._answer_table(field)
        numeric = all(_is_number(v) for v in table.values() if v is not _NONE)
        if percent and (reference is None or not numeric):
            raise ValueError("percent=True needs a reference server and numeric answers "
                             "(pick a number with field=...)")
        cases = sorted({case for case, _ in table})
        servers = sorted({server for _, server in table})
        if reference is not None:
            _check_server(reference, servers)
            others = [s for s in servers if s != reference]
            data = {s: [_difference(table.get((c, s), _NONE), table.get((c, reference), _NONE),
                                    numeric, percent) for c in cases] for s in others}
            columns = others
        else:
            data = {s: [_cell(table.get((c, s), _NONE), numeric) for c in cases]
                    for s in servers}
            columns = servers
        # object, not pandas 3's inferred str: a missing text answer stays None, not NaN
        frame = pd.DataFrame(data, index=pd.Index(cases, name="case"), columns=columns,
                             dtype=float if numeric else object)
        frame.columns.name = "server"
        return frame

    def summary(self, reference: str | None = None, *, rtol: float = 0.0,
                field: str | None = None) -> pd.DataFrame:
        """Per server: calls, success rate, median and p90 latency (ms) and, for a compare
        frame, agreement.

        Agreement is the share of the server's cases where its answer is the majority's
        (more than half the servers that answered the case gave it: a failed call is not
        a vote), or, with ``reference``, the reference's (over the cases the reference
        answered). Numbers count as the same
        within ``rtol`` (relative: 0.01 is 1 %); a failed call agrees with nobody.
        Latency covers every call, failed ones too; p90 interpolates linearly.
        """
        import pandas as pd

        df = self._df
        _require(df, SUMMARY_NEEDS, "summary()")
        if not (isinstance(rtol, (int, float)) and math.isfinite(rtol) and rtol >= 0):
            raise ValueError(f"rtol must be a finite number >= 0, not {rtol!r}")
        latency = pd.to_numeric(df["latency_ms"], errors="coerce")
        ok = df["ok"].astype(bool)
        grouped = pd.DataFrame({"server": df["server"].astype(str), "ok": ok,
                                "latency_ms": latency}).groupby("server", sort=True)
        out = pd.DataFrame({
            "calls": grouped.size(),
            "success_rate": grouped["ok"].mean(),
            "median_ms": grouped["latency_ms"].median(),
            "p90_ms": grouped["latency_ms"].quantile(0.9),
        })
        if all(c in df.columns for c in COMPARE_NEEDS):
            table = self._answer_table(field)
            servers = [str(s) for s in out.index]
            if reference is not None:
                _check_server(reference, servers)
                column = f"agrees_with_{reference}"
                rates = _agreement_with(table, reference, rtol)
            else:
                column = "agrees_with_majority"
                rates = _agreement_with_majority(table, rtol)
            out[column] = [rates.get(s, math.nan) for s in servers]
        elif reference is not None:
            raise ValueError("summary(reference=...) needs a compare frame (columns "
                             f"{', '.join(COMPARE_NEEDS)}); this one is {self.kind}")
        out.index.name = "server"
        return out

    def schema_diff(self) -> pd.DataFrame:
        """For a catalog (``bench.catalog()``): the parameters of tools that two or more
        servers offer under the same name, one row per (tool, parameter), with ``differs``
        naming what the servers disagree on (``present``, ``type``, ``required``, ``enum``,
        ``default``). ``.tb.show()`` marks the differences. See
        ``toolbench._bench.overtime.diff``."""
        from toolbench._bench.overtime.diff import schema_diff

        return schema_diff(self._df)

    def report(self, by: str | None = None, *, tokenizer: str | None = None) -> pd.DataFrame:
        """For a catalog or a snapshot: what each tool costs a model and the rules it breaks
        (one row per tool: ``tokens``, ``tokenizer``, ``documented``, ``findings``...);
        ``by="server"`` sums it per server, ``by="name"`` lines up same-named tools across
        servers. ``tokenizer``: ``"cl100k_base"``, ``"estimate"``, or None for the best one
        installed. See ``toolbench._bench.report``; ``tb.report_rules()`` lists the rules."""
        from toolbench._bench.report.report import report

        return report(self._df, by=by, tokenizer=tokenizer)

    def scores(self, by: str = "server") -> pd.DataFrame:
        """For an eval frame (``bench.evaluate``): per server (or ``by="case"``), the pass rate
        with its 95 % Wilson interval, tool-choice precision, recall and F1, argument accuracy,
        errors, tokens and model time. See ``toolbench._bench.models.scores``."""
        from toolbench._bench.models.scores import scores

        return scores(self._df, by=by)

    def confusion(self, server: str | None = None) -> pd.DataFrame:
        """For an eval frame: expected tools (rows) against the tools the model chose
        (columns), counted; ``(none)`` for no tool. ``server`` keeps one server's rows."""
        from toolbench._bench.models.scores import confusion

        return confusion(self._df, server=server)

    def plot_scores(self, by: str = "server", ax: Any = None) -> Any:
        """For an eval frame: a bar per server (or case), its pass rate with the 95 % Wilson
        interval; returns the matplotlib Axes (matplotlib is in the ``lab`` extra)."""
        from toolbench._bench.models.scores import plot_scores

        return plot_scores(self._df, by=by, ax=ax)

    def latency(self, by: str | None = "server") -> pd.DataFrame:
        """For records (``bench.records``, a ``map``): the load per ``by`` (``server``,
        ``tool``, ``name``, ``batch``; None: all): calls, attempts, retries, calls/s, error
        rate by disposition, and p50/p95/p99 latency with the wait for a rate's turn apart.
        See ``toolbench._notebook.views.load``."""
        from toolbench._notebook.views.load import latency

        return latency(self._df, by=by)

    def timeline(self, *, ax: Any = None, title: str | None = None) -> Any:
        """For records: a matplotlib figure of the calls over time, per server and lane,
        each call's wait for a turn apart from its flight, failures marked (needs
        matplotlib, in the ``lab`` extra). See ``toolbench._notebook.views.load``."""
        from toolbench._notebook.views.load import timeline

        return timeline(self._df, ax=ax, title=title)

    def json_ready(self) -> pd.DataFrame:
        """A copy fit for a file: a column holding dicts or lists becomes JSON text (every
        value in it, so it reads back with ``json.loads``), as does a column of mixed types."""
        import pandas as pd

        out = self._df.copy()
        for column in out.columns:
            values = list(out[column])
            if not _needs_json(values):
                continue
            texts = [None if _missing(v) else _dumps(v) for v in values]
            out[column] = pd.Series(texts, index=out.index, dtype=object)  # None stays None
        return out

    def to_parquet(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        """Write a Parquet file (pyarrow; ``pip install 'toolbench[lab]'``), dict and list
        columns as JSON text. ``kwargs`` go to ``DataFrame.to_parquet``."""
        kwargs.setdefault("index", not _plain_index(self._df))
        try:
            self.json_ready().to_parquet(path, **kwargs)
        except ImportError as exc:
            raise ImportError(
                "df.tb.to_parquet needs pyarrow: pip install 'toolbench[lab]' (or pyarrow)"
            ) from exc

    def to_csv(self, path: str | os.PathLike[str], **kwargs: Any) -> None:
        """Write a CSV file, dict and list columns as JSON text (not Python reprs).
        ``kwargs`` go to ``DataFrame.to_csv``; the index is written only if it means
        something (not 0, 1, 2, ...)."""
        kwargs.setdefault("index", not _plain_index(self._df))
        self.json_ready().to_csv(path, **kwargs)

    # -- helpers ------------------------------------------------------------------------------
    def _answer_table(self, field: str | None) -> dict[tuple[int, str], Any]:
        """{(case, server): answer}; the last successful row wins; _NONE for no answer."""
        df = self._df
        _require(df, COMPARE_NEEDS, "answers")
        flat = [str(c) for c in df.columns if str(c).startswith("structured.")]
        if field is not None:
            column: str | None = f"structured.{field}"
            if column not in df.columns:
                fields = ", ".join(c.removeprefix("structured.") for c in flat) or "none"
                raise ValueError(f"no structured field {field!r} in this frame; its fields: "
                                 f"{fields}")
        else:
            column = flat[0] if len(flat) == 1 else None
        table: dict[tuple[int, str], Any] = {}
        for row in df.to_dict("records"):
            key = (int(row["case"]), str(row["server"]))
            if not bool(row["ok"]):
                table.setdefault(key, _NONE)
                continue
            if column is not None:
                value = row.get(column)
            elif isinstance(row.get("structured"), dict):
                value = row["structured"]
            else:
                value = row.get("text")
            table[key] = _NONE if _missing(value) else _scalar(value)
        return table


class _NoAnswer:
    def __repr__(self) -> str:
        return "<no answer>"


_NONE: Any = _NoAnswer()


def _require(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(
            f"{what} needs a compare frame (from bench.compare; a bench.map frame has one "
            f"row per call, not per server) with the columns "
            f"{', '.join(columns)}; this {kind_of(df)} frame lacks {', '.join(missing)}")


def _check_server(reference: str, servers: Sequence[str]) -> None:
    if reference not in servers:
        raise ValueError(f"reference {reference!r} is not a server in this frame; "
                         f"its servers: {', '.join(servers) or 'none'}")


def _missing(value: Any) -> bool:
    if value is None or value is _NONE:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    try:
        import pandas as pd

        return not isinstance(value, (dict, list, tuple, str)) and bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _scalar(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, (dict, list, str)):
        with contextlib.suppress(Exception):
            return value.item()  # a numpy scalar
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: Any, numeric: bool) -> Any:
    if value is _NONE:
        return math.nan if numeric else None
    return value


def _key(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _same(a: Any, b: Any, rtol: float) -> bool:
    if a is _NONE or b is _NONE:
        return False
    if _is_number(a) and _is_number(b):
        return a == b or math.isclose(a, b, rel_tol=rtol, abs_tol=0.0)
    return _key(a) == _key(b)


def _difference(value: Any, reference: Any, numeric: bool, percent: bool) -> Any:
    if value is _NONE or reference is _NONE:
        return math.nan if numeric else None
    if numeric:
        if percent:
            return (value / reference - 1) * 100 if reference else math.nan
        return value - reference
    return _same(value, reference, 0.0)


def _agreement_with(table: dict[tuple[int, str], Any], reference: str,
                    rtol: float) -> dict[str, float]:
    agree: dict[str, list[bool]] = {}
    for (case, server), value in table.items():
        target = table.get((case, reference), _NONE)
        if target is _NONE:
            continue  # nothing to agree with
        agree.setdefault(server, []).append(_same(value, target, rtol))
    return {s: sum(v) / len(v) for s, v in agree.items() if v}


def _agreement_with_majority(table: dict[tuple[int, str], Any],
                             rtol: float) -> dict[str, float]:
    by_case: dict[int, dict[str, Any]] = {}
    for (case, server), value in table.items():
        by_case.setdefault(case, {})[server] = value
    agree: dict[str, list[bool]] = {}
    for answers in by_case.values():
        votes = sum(1 for value in answers.values() if value is not _NONE)  # failed: no vote
        for server, value in answers.items():
            alike = sum(1 for other in answers.values() if _same(value, other, rtol))
            agree.setdefault(server, []).append(alike * 2 > votes)
    return {s: sum(v) / len(v) for s, v in agree.items() if v}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (dict, list, tuple)):
        return "json"
    return type(value).__name__


def _needs_json(values: list[Any]) -> bool:
    kinds = {_kind(_scalar(v)) for v in values if not _missing(v)}
    return "json" in kinds or len(kinds) > 1


def _dumps(value: Any) -> str:
    return json.dumps(_scalar(value), ensure_ascii=False, default=str)


def _plain_index(df: pd.DataFrame) -> bool:
    import pandas as pd

    index = df.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 \
        and index.name is None


# df.tb on every DataFrame once pandas is imported (this does not import pandas): the package's
# front only hands names on, so the registration happens here, when ``import toolbench`` loads us.
install()
