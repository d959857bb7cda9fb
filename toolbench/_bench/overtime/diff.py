"""What changed: the diff of two catalog snapshots, and the parameters of same-named tools.

``diff(a, b)`` has one row per item added or removed, and one per changed field of an item
that both have (``change``, ``server``, ``kind``, ``name``, ``field``, ``old``, ``new``,
``detail``). ``detail`` says the change in words: a word-level diff of a description
(``[-old words-]{+new words+}``; over ``MAX_DIFF_WORDS`` words, a summary of the lengths
and where the texts first differ, see ``toolbench._bench.overtime.words``), which
parameters a schema gained, lost or changed, or, for ``ui``, whether the view's HTML (its
hash) or the rest of ``_meta.ui`` changed.
Items are matched by kind and name (a tool's own name, unprefixed), within the same server;
when each side holds one server, across servers, so ``diff(bench.snapshot("a"),
bench.snapshot("b"))`` compares two servers. Items whose fingerprints match are skipped
without a look at their fields, so 10,000 tools diff in milliseconds.

``schema_diff(catalog)`` lines up the tools that two or more servers offer under the same
name, one row per parameter: on which servers it exists, and its type, whether it is
required, its enum and its default (one value when every server agrees, else a
``{server: value}`` dict), with ``differs`` naming what does not agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolbench._bench.overtime.snapshots import DECLARED, VIEW
from toolbench._bench.overtime.words import MAX_DIFF_WORDS, word_diff

__all__ = ["ASPECTS", "DIFF_COLUMNS", "MAX_DIFF_WORDS", "SCHEMA_DIFF_COLUMNS", "diff",
           "schema_change", "schema_diff", "word_diff"]

if TYPE_CHECKING:
    import pandas as pd

DIFF_COLUMNS = ("change", "server", "kind", "name", "field", "old", "new", "detail")
SCHEMA_DIFF_COLUMNS = ("tool", "parameter", "differs", "present_on", "missing_on", "type",
                       "required", "enum", "default")
ASPECTS = ("type", "required", "enum", "default")
_MISSING = object()
Pair = tuple[str, dict[str, Any]]


def diff(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """What changed from snapshot ``a`` to snapshot ``b``: one row per change.

    Args:
        a: the earlier (or reference) snapshot: ``bench.snapshot()`` or
            ``tb.load_snapshot(journal, when=...)``.
        b: the later (or other) snapshot.

    Returns:
        A diff frame: ``change`` (``added``, ``removed``, ``changed``), ``server``, ``kind``,
        ``name``, ``field`` (for a change: ``title``, ``description``, ``input_schema``, ...),
        ``old``, ``new`` and ``detail`` (a word diff of a description, or the parameters a
        schema gained, lost or changed). Empty when nothing changed. ``df.tb.show()`` and
        the notebook show it with the changes marked.

    Raises:
        ValueError: either frame is not a snapshot.

    Example:
        >>> tb.diff(tb.load_snapshot("calls.sqlite", when="2026-01-31"),
        ...         bench.snapshot())                                   # doctest: +SKIP
    """
    import pandas as pd

    left, right = _index(a), _index(b)
    across = len({k[0] for k in left}) == 1 and len({k[0] for k in right}) == 1
    if across:  # one server each side: match by kind and name alone
        left = {k[1:]: v for k, v in left.items()}
        right = {k[1:]: v for k, v in right.items()}
    rows: list[tuple[Any, ...]] = []
    cols_a: dict[str, list[Any]] = {}
    cols_b: dict[str, list[Any]] = {}
    for k, (server, kind, name, pos, fp) in left.items():
        other = right.get(k)
        if other is None:
            rows.append(("removed", server, kind, name, None, None, None, None))
        elif fp != other[4]:  # only items whose fingerprints differ are looked into
            cols_a, cols_b = cols_a or _columns(a), cols_b or _columns(b)
            rows.extend(_changes(other[0], _fields(cols_a, pos), _fields(cols_b, other[3])))
    for k, (server, kind, name, _, _) in right.items():
        if k not in left:
            rows.append(("added", server, kind, name, None, None, None, None))
    rows.sort(key=lambda r: (str(r[1]), str(r[2]), str(r[3]), str(r[4])))
    df = pd.DataFrame(rows, columns=list(DIFF_COLUMNS), dtype=object)
    df.attrs["toolbench"] = "diff"
    return df


def _index(df: pd.DataFrame) -> dict[tuple[str, ...], tuple[str, str, str, int, Any]]:
    """(server, kind, name) -> (server, kind, name, row position, fingerprint): four
    columns read whole, the rest only for the items that changed."""
    missing = [c for c in ("server", "kind", "name", "fingerprint") if c not in df.columns]
    if missing:
        raise ValueError(f"not a snapshot frame: it lacks the columns {missing} (make one with "
                         "bench.snapshot() or tb.load_snapshot(journal))")
    out: dict[tuple[str, ...], tuple[str, str, str, int, Any]] = {}
    for pos, (server, kind, name, fp) in enumerate(zip(
            df["server"].tolist(), df["kind"].tolist(), df["name"].tolist(),
            df["fingerprint"].tolist(), strict=True)):
        out[(str(server), str(kind), str(name))] = (str(server), str(kind), str(name), pos, fp)
    return out


def _columns(df: pd.DataFrame) -> dict[str, list[Any]]:
    return {c: df[c].tolist() for c in ("kind", "name", *DECLARED) if c in df.columns}


def _fields(columns: dict[str, list[Any]], pos: int) -> dict[str, Any]:
    return {c: _plain(values[pos]) for c, values in columns.items()}


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (dict, list, str, bool, int)):
        return value
    if isinstance(value, float) and value != value:  # NaN: pandas' missing value
        return None
    return value


def _changes(server: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    rows = []
    for field in DECLARED:
        va, vb = a.get(field), b.get(field)
        if va == vb:
            continue
        if field == "description":
            detail: str | None = word_diff(va or "", vb or "")
        elif field == "input_schema":
            detail = schema_change(va, vb)
        elif field == "ui":
            detail = ui_change(va, vb)
        else:
            detail = None
        rows.append(("changed", server, b.get("kind"), b.get("name"), field, va, vb, detail))
    return rows


def ui_change(old: Any, new: Any) -> str:
    """What changed of a tool's view: its HTML (by hash, or how it could not be fetched)
    and the rest of its ``_meta.ui``."""
    old_ui, new_ui = (v if isinstance(v, dict) else {} for v in (old, new))
    told = []
    was, now = old_ui.get(VIEW), new_ui.get(VIEW)
    if was != now:
        told.append(f"the view's HTML: {_view_said(was)} -> {_view_said(now)}")
    if ({k: v for k, v in old_ui.items() if k != VIEW}
            != {k: v for k, v in new_ui.items() if k != VIEW}):
        told.append("_meta.ui changed")
    return "; ".join(told) or "changed"


def _view_said(state: Any) -> str:
    if not isinstance(state, dict):
        return "not known"
    if isinstance(state.get("sha256"), str):
        return f"sha256 {state['sha256'][:12]}"
    return f"not fetched ({state.get('error')})"


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _required(schema: Any) -> set[str]:
    req = schema.get("required") if isinstance(schema, dict) else None
    return {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()


def schema_change(old: Any, new: Any) -> str:
    """The parameters a schema gained, lost, or changed (type, required, enum, default)."""
    pa, pb = _properties(old), _properties(new)
    ra, rb = _required(old), _required(new)
    told = []
    gone = [p for p in pa if p not in pb]
    came = [p for p in pb if p not in pa]
    if gone:
        told.append("parameter" + "s" * (len(gone) > 1) + " removed: " + ", ".join(gone))
    if came:
        told.append("parameter" + "s" * (len(came) > 1) + " added: " + ", ".join(came))
    for p in pa:
        if p not in pb:
            continue
        what = [aspect for aspect in ASPECTS
                if _aspect(pa[p], p in ra, aspect) != _aspect(pb[p], p in rb, aspect)]
        if what:
            told.append(f"{p}: {', '.join(what)} changed")
    if not told:
        told.append("other parts of the schema changed")
    return "; ".join(told)


def _aspect(prop: Any, required: bool, aspect: str) -> Any:
    if aspect == "required":
        return required
    if not isinstance(prop, dict):
        return None
    if aspect == "type":
        found = prop.get("type")
        if found is None and isinstance(prop.get("anyOf"), list):
            found = [p.get("type") for p in prop["anyOf"] if isinstance(p, dict)]
        return found
    return prop.get(aspect, _MISSING if aspect == "default" else None)


def _shown(value: Any) -> Any:
    return None if value is _MISSING else value


def _hashable(value: Any) -> Any:
    if value is _MISSING:
        return ("<no default>",)
    try:
        hash(value)
        return value
    except TypeError:
        return json.dumps(value, sort_keys=True, default=repr)


def schema_diff(catalog: pd.DataFrame) -> pd.DataFrame:
    """The parameters of tools that two or more servers offer under the same name.

    Args:
        catalog: ``bench.catalog()`` (columns ``server``, ``tool``, ``input_schema``).

    Returns:
        One row per (tool, parameter): ``differs`` (a list: ``present``, ``type``,
        ``required``, ``enum``, ``default``; empty when all servers agree), ``present_on``
        and ``missing_on`` (servers), and ``type``, ``required``, ``enum``, ``default``: one
        value when the servers that have the parameter agree, else ``{server: value}``.
    """
    import pandas as pd

    missing = [c for c in ("server", "tool", "input_schema") if c not in catalog.columns]
    if missing:
        raise ValueError(f"schema_diff() needs a catalog frame (bench.catalog()); this one "
                         f"lacks the columns {missing}")
    by_tool: dict[str, list[tuple[str, Any]]] = {}
    for server, tool, schema in zip(catalog["server"], catalog["tool"], catalog["input_schema"],
                                    strict=True):
        by_tool.setdefault(str(tool), []).append((str(server), schema))
    rows: list[tuple[Any, ...]] = []
    for tool in sorted(by_tool):
        offers = sorted(by_tool[tool], key=lambda pair: pair[0])
        if len({s for s, _ in offers}) < 2:
            continue
        rows.extend(_tool_rows(tool, offers))
    df = pd.DataFrame(rows, columns=list(SCHEMA_DIFF_COLUMNS), dtype=object)
    df.attrs["toolbench"] = "schema_diff"
    return df


def _tool_rows(tool: str, offers: Sequence[tuple[str, Any]]) -> list[tuple[Any, ...]]:
    props = {server: _properties(schema) for server, schema in offers}
    required = {server: _required(schema) for server, schema in offers}
    names: dict[str, None] = {}
    for server, _ in offers:
        for p in props[server]:
            names.setdefault(p, None)
    servers = [s for s, _ in offers]
    rows: list[tuple[Any, ...]] = []
    first = offers[0][1]
    if all(schema == first for _, schema in offers[1:]):  # the common case: all agree
        props0, req0 = props[servers[0]], required[servers[0]]
        for p in names:
            prop = props0[p]
            if isinstance(prop, dict) and "anyOf" not in prop:
                rows.append((tool, p, [], list(servers), [], prop.get("type"), p in req0,
                             prop.get("enum"), prop.get("default")))
            else:
                rows.append((tool, p, [], list(servers), [],
                             *(_shown(_aspect(prop, p in req0, a)) for a in ASPECTS)))
        return rows
    for p in names:
        present = [s for s in servers if p in props[s]]
        absent = [s for s in servers if p not in props[s]]
        differs = ["present"] if absent else []
        cells = []
        for aspect in ASPECTS:
            values = {s: _aspect(props[s][p], p in required[s], aspect) for s in present}
            distinct = {_hashable(v) for v in values.values()}
            if len(distinct) > 1:
                differs.append(aspect)
                cells.append({s: _shown(v) for s, v in values.items()})
            else:
                cells.append(_shown(next(iter(values.values()))))
        rows.append((tool, p, differs, present, absent, *cells))
    return rows
