"""tb.diff of two snapshots and catalog().tb.schema_diff(): rows, matching, and escaped HTML."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pytest

import toolbench as tb
from toolbench._bench.overtime.diff import DIFF_COLUMNS, SCHEMA_DIFF_COLUMNS, word_diff
from toolbench._bench.overtime.snapshots import item_from_spec, snapshot_frame
from toolbench._core.client import ToolSpec
from toolbench.demo import geo, geo_precise, geo_precise_v2


def _snap(server: str, *specs: ToolSpec) -> pd.DataFrame:
    now = datetime.now(UTC)
    return snapshot_frame((server, now, item_from_spec(s)) for s in specs)


def _schema(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)[:1]}


def test_added_removed_and_changed_fields() -> None:
    a = _snap("s", ToolSpec("keep", "same"), ToolSpec("gone", "x"),
              ToolSpec("edit", "the quick brown fox", _schema(q={"type": "string"}), title="E"))
    b = _snap("s", ToolSpec("keep", "same"), ToolSpec("new", "y"),
              ToolSpec("edit", "the slow brown fox", _schema(query={"type": "string"}),
                       title="E2"))
    d = tb.diff(a, b)
    assert list(d.columns) == list(DIFF_COLUMNS)
    got = {(r.change, r.name, r.field) for r in d.itertuples()}
    assert got == {("removed", "gone", None), ("added", "new", None),
                   ("changed", "edit", "description"), ("changed", "edit", "input_schema"),
                   ("changed", "edit", "title")}
    desc = d[d["field"] == "description"].iloc[0]
    assert desc["old"] == "the quick brown fox" and desc["new"] == "the slow brown fox"
    assert desc["detail"] == "the [-quick-] {+slow+} brown fox"
    schema = d[d["field"] == "input_schema"].iloc[0]
    assert schema["detail"] == "parameter removed: q; parameter added: query"
    assert tb.diff(a, a).empty


def test_two_servers_match_by_unprefixed_names() -> None:
    with tb.Bench() as bench:
        bench.connect("geo", geo.create())
        bench.connect("geo_precise", geo_precise.create())
        d = tb.diff(bench.snapshot("geo"), bench.snapshot("geo_precise"))
    assert set(d[d["change"] == "removed"]["name"]) == {"cities", "nearest", "world_map"}
    assert set(d[d["change"] == "added"]["name"]) == {"bearing"}
    changed = d[d["change"] == "changed"]
    assert set(changed["name"]) == {"distance"}  # city is the same tool on both
    assert "description" in set(changed["field"])


def test_whole_benches_match_within_each_server() -> None:
    with tb.Bench() as one, tb.Bench() as two:
        one.connect("geo", geo.create())
        one.connect("geo_precise", geo_precise.create())
        two.connect("geo", geo.create())
        two.connect("geo_precise", geo_precise_v2.create())
        d = tb.diff(one.snapshot(), two.snapshot())
    assert set(d["server"]) == {"geo_precise"}
    assert set(d["field"]) == {"description", "input_schema"}


def test_not_a_snapshot() -> None:
    with pytest.raises(ValueError, match="not a snapshot frame"):
        tb.diff(pd.DataFrame({"x": [1]}), pd.DataFrame({"x": [1]}))


def test_word_diff() -> None:
    assert word_diff("a b c", "a c d") == "a [-b-] c {+d+}"
    assert word_diff("", "new text") == "{+new text+}"


def test_diff_html_is_escaped_and_marked() -> None:
    evil = "<script>alert(1)</script>"
    a = _snap("s", ToolSpec("t", "plain words"), ToolSpec("gone", evil))
    b = _snap("s", ToolSpec("t", f"plain {evil} words"), ToolSpec(evil.replace("<", "x")))
    html = tb.show(tb.diff(a, b))._repr_mimebundle_()["text/html"]
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<ins>" in html and "class='removed'" in html and "class='changed'" in html
    assert "class='added'" in html
    text = tb.show(tb.diff(a, b))._repr_mimebundle_()["text/plain"]
    assert "changed" in text


def _catalog(rows: list[tuple[str, str, dict[str, Any]]]) -> pd.DataFrame:
    return pd.DataFrame([{"name": f"{s}-{t}", "server": s, "tool": t, "input_schema": schema,
                          "parameters": list(schema.get("properties", {})),
                          "required": schema.get("required", [])}
                         for s, t, schema in rows])


def test_schema_diff_one_row_per_parameter() -> None:
    cat = _catalog([
        ("a", "search", {"type": "object", "required": ["q"], "properties": {
            "q": {"type": "string"}, "n": {"type": "integer", "default": 10},
            "mode": {"type": "string", "enum": ["fast", "slow"]}}}),
        ("b", "search", {"type": "object", "required": ["q", "n"], "properties": {
            "q": {"type": "string"}, "n": {"type": "number", "default": 5},
            "mode": {"type": "string", "enum": ["fast"]}, "lang": {"type": "string"}}}),
        ("a", "alone", {"type": "object", "properties": {"x": {}}}),
    ])
    sd = cat.tb.schema_diff()
    assert list(sd.columns) == list(SCHEMA_DIFF_COLUMNS)
    rows = {r.parameter: r for r in sd.itertuples()}
    assert set(rows) == {"q", "n", "mode", "lang"}  # 'alone' is offered by one server only
    assert rows["q"].differs == [] and rows["q"].type == "string" and rows["q"].required is True
    assert rows["n"].differs == ["type", "required", "default"]
    assert rows["n"].type == {"a": "integer", "b": "number"}
    assert rows["n"].default == {"a": 10, "b": 5}
    assert rows["mode"].differs == ["enum"]
    assert rows["lang"].differs == ["present"]
    assert rows["lang"].present_on == ["b"] and rows["lang"].missing_on == ["a"]
    html = sd.tb.show()._repr_mimebundle_()["text/html"]
    assert "class='differs'" in html and "parameters of same-named tools" in html
    with pytest.raises(ValueError, match="needs a catalog frame"):
        pd.DataFrame({"x": [1]}).tb.schema_diff()


def test_schema_diff_of_real_servers_is_escaped() -> None:
    with tb.Bench() as bench:
        bench.connect("geo", geo.create())
        bench.connect("v2", geo_precise_v2.create())
        sd = bench.catalog().tb.schema_diff()
    distance = sd[sd["tool"] == "distance"].set_index("parameter")
    assert distance.loc["unit", "differs"] == ["present"]
    assert distance.loc["units", "present_on"] == ["v2"]
    assert distance.loc["from_city", "differs"] == []
    evil = _catalog([("a", "t", {"properties": {"<img src=x onerror=alert(1)>": {}}}),
                     ("b", "t", {"properties": {}})])
    html = evil.tb.schema_diff().tb.show()._repr_mimebundle_()["text/html"]
    assert "<img" not in html and "&lt;img" in html
