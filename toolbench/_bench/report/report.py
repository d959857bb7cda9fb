"""``df.tb.report()``: one row per tool of a catalog or a snapshot, with its cost in tokens,
its documentation and its findings; ``by="server"`` and ``by="name"`` sum it up.

A catalog (``bench.catalog()``) and a snapshot (``bench.snapshot()``, ``tb.load_snapshot``)
hold the same declared fields, so they are read into the same :class:`~checks.Declared` tools
and judged alike. A snapshot has no pegboard names: its ``name`` is the tool's own name. A
report frame given to ``report(by=...)`` is summed up as it is, without counting again.

The work runs in the caller's thread (the kernel's, in a notebook), never on the shared loop,
and every step is bounded (see ``walk``, ``poisoning`` and ``tokens``): a hostile catalog
costs time in proportion to its size and holds no lock the loop needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from toolbench._bench.report.checks import Checked, Declared, Twins, check, same_descriptions
from toolbench._bench.report.pace import offer
from toolbench._bench.report.tokens import TokenCounter, counter
from toolbench._core.client import ToolSpec

if TYPE_CHECKING:
    import pandas as pd

REPORT_COLUMNS = ("name", "server", "tool", "tokens", "tokenizer", "description_chars",
                  "parameters", "documented", "findings")
BY = ("tool", "server", "name")
_CATALOG_NEEDS = ("name", "server", "tool", "description", "input_schema")
_SNAPSHOT_NEEDS = ("server", "kind", "name", "description", "input_schema")


def report(df: pd.DataFrame, by: str | None = None, tokenizer: str | None = None
           ) -> pd.DataFrame:
    """The report of a catalog, snapshot or report frame: per tool (``by=None`` or
    ``"tool"``), per server (``"server"``) or per tool name across servers (``"name"``)."""
    if by is not None and by not in BY:
        raise ValueError(f"by={by!r} is not one of {', '.join(map(repr, BY))} (or None: one "
                         f"row per tool)")
    if is_report(df):
        if tokenizer is not None and set(df["tokenizer"]) - {tokenizer}:
            raise ValueError(f"this report was counted with "
                             f"{', '.join(sorted(map(str, set(df['tokenizer']))))}; report "
                             f"the catalog again to count with {tokenizer!r}")
        rows = df
    else:
        rows = tool_report(declared(df), counter(tokenizer))
    if by in (None, "tool"):
        return rows
    from toolbench._bench.report import groups

    return groups.by_server(rows) if by == "server" else groups.by_name(rows)


def is_report(df: pd.DataFrame) -> bool:
    """Whether ``df`` is already a per-tool report."""
    return {"tokens", "tokenizer", "findings", "documented"} <= set(df.columns)


def declared(df: pd.DataFrame) -> list[Declared]:
    """The tools of a catalog or a snapshot (its other kinds skipped); a frame that is
    neither is a ``ValueError`` naming the columns it lacks."""
    columns = set(df.columns)
    snapshot = "kind" in columns and "fingerprint" in columns
    needs = _SNAPSHOT_NEEDS if snapshot else _CATALOG_NEEDS
    missing = [c for c in needs if c not in columns]
    if missing:
        raise ValueError(
            f"report() needs a catalog (bench.catalog()) or a snapshot (bench.snapshot(), "
            f"tb.load_snapshot()); this frame lacks {', '.join(missing)} (its columns: "
            f"{', '.join(map(str, df.columns[:20]))})")
    if snapshot:
        df = df[df["kind"] == "tool"]
    n = len(df)

    def column(name: str) -> list[Any]:
        return df[name].tolist() if name in columns else [None] * n

    servers, names = column("server"), column("name")
    tools = names if snapshot else column("tool")
    return [Declared(str(server), str(name), str(tool), *rest)
            for server, name, tool, *rest in zip(
                servers, names, tools, column("description"), column("input_schema"),
                column("title"), column("output_schema"), column("annotations"), strict=True)]


def tool_report(tools: Sequence[Declared], tokens: TokenCounter) -> pd.DataFrame:
    """One row per tool (:data:`REPORT_COLUMNS`)."""
    import pandas as pd

    rows = []
    for tool, twins in zip(tools, same_descriptions(tools), strict=True):
        offer()  # the shared loop's thread may be waiting for the interpreter
        checked = check(tool, tokens, twins)
        rows.append((tool.name, tool.server, tool.tool, checked.tokens, tokens.name,
                     checked.description_chars, checked.parameters, checked.documented,
                     checked.findings))
    frame = pd.DataFrame(rows, columns=list(REPORT_COLUMNS))
    frame["documented"] = frame["documented"].astype(float)  # None (no parameters) is NaN
    for name in ("tokens", "description_chars", "parameters"):
        frame[name] = frame[name].astype("int64")
    return frame


def check_spec(server: str, name: str, spec: ToolSpec, siblings: Iterable[ToolSpec] = (),
               tokenizer: str | None = None) -> Checked:
    """One tool of a live catalog (what the explorer shows beside its description);
    ``siblings`` are the other tools of its server, for the duplicate-description rule."""
    tool = Declared(server, name, spec.name, spec.description, spec.input_schema, spec.title,
                    spec.output_schema, spec.annotations)
    text = (spec.description or "").strip()
    twins = [s.name for s in siblings if text and (s.description or "").strip() == text]
    return check(tool, counter(tokenizer), Twins(twins[:3], len(twins)) if twins else None)
