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


# -- capped, fast word diffs (issue 33) -----------------------------------------------------
def _repetitive(words: int, seed: int, alphabet: str = "a b") -> str:
    """A rug pull's text: few distinct words, shuffled, which made difflib quadratic."""
    import random

    rng = random.Random(seed)
    vocabulary = alphabet.split()
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def _timed(fn: Any) -> tuple[float, Any]:
    import time

    start = time.process_time()
    value = fn()
    return time.process_time() - start, value


def test_a_long_repetitive_description_is_summarised_fast() -> None:
    old = _repetitive(6000, 1)
    new = old[:3000] + "c" + old[3001:]  # one word changed: word 1,501, at character 3,001
    seconds, told = _timed(lambda: word_diff(old, new))
    assert seconds < 0.5
    assert told.startswith("not compared word by word")
    assert "6,000 words" in told and "over the 4,000 compared" in told
    assert "first differ at word 1,501 (character 3,001)" in told
    assert len(told) < 600


def test_tb_diff_of_ten_thousand_word_descriptions_is_bounded() -> None:
    old = _repetitive(10_000, 2, "a b c d")
    new = _repetitive(10_000, 3, "a b c d")
    a, b = _snap("s", ToolSpec("t", old)), _snap("s", ToolSpec("t", new))
    seconds, d = _timed(lambda: tb.diff(a, b))
    assert seconds < 1.0
    detail = d[d["field"] == "description"].iloc[0]["detail"]
    assert detail.startswith("not compared word by word") and "10,000 words" in detail
    seconds, html = _timed(lambda: tb.show(d)._repr_mimebundle_()["text/html"])
    assert seconds < 1.0 and "not compared word by word" in html


@pytest.mark.parametrize("alphabet", ["a b", "a b c d e f g h", "the a of to and in is"])
def test_a_diff_under_the_cap_is_fast_and_exact_on_adversarial_text(alphabet: str) -> None:
    from toolbench._bench.overtime.words import word_segments

    old, new = _repetitive(4000, 4, alphabet), _repetitive(4000, 5, alphabet)
    seconds, told = _timed(lambda: word_diff(old, new))
    assert seconds < 0.5
    assert not told.startswith("not compared")
    seconds, segments = _timed(lambda: word_segments(old, new))
    assert seconds < 0.5 and segments is not None
    assert " ".join(t for op, t in segments if op != "insert") == old
    assert " ".join(t for op, t in segments if op != "delete") == new


@pytest.mark.parametrize("words", [3996, 6000])
def test_a_repeated_sentence_changed_in_every_copy_is_fast(words: int) -> None:
    """The worst text found for difflib: 141 s at 6,000 words before the cap."""
    def text(place: str) -> str:
        sentence = f"Returns the weather for a {place}.".split()
        return " ".join(sentence[i % 6] for i in range(words))

    seconds, told = _timed(lambda: word_diff(text("city"), text("town")))
    assert seconds < 0.5
    assert told.startswith("not compared") == (words > 4000)


def test_a_few_edits_in_long_prose_are_found_word_by_word() -> None:
    import random

    from toolbench._bench.overtime.words import word_segments

    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(600)] + ["the", "a", "of", "to"] * 50
    old_words = [rng.choice(vocabulary) for _ in range(3500)]
    new_words = list(old_words)
    new_words[100:103] = ["INSERTED", "words", "here"]
    del new_words[2000:2010]
    new_words[3000] = "CHANGED"
    segments = word_segments(" ".join(old_words), " ".join(new_words))
    assert segments is not None
    changed = sum(len(t.split()) for op, t in segments if op != "equal")
    assert changed < 40  # the edits, not the whole text
    seconds, _ = _timed(lambda: word_segments(" ".join(old_words), " ".join(new_words)))
    assert seconds < 0.5


def test_word_diff_html_is_capped_fast_and_escaped() -> None:
    from toolbench._notebook.views.diff import word_diff_html

    old = "<b>x</b> " + _repetitive(6000, 8)
    new = "<b>y</b> " + _repetitive(6000, 9)
    seconds, html = _timed(lambda: word_diff_html(old, new))
    assert seconds < 0.5
    assert "not compared word by word" in html and "<b>" not in html and "&lt;b&gt;" in html
    old, new = _repetitive(4000, 10), _repetitive(4000, 11)
    seconds, html = _timed(lambda: word_diff_html(old, new))
    assert seconds < 0.5 and "<del>" in html and "<ins>" in html
    assert word_diff_html("a <i> c", "a <i> d") == "a &lt;i&gt; <del>c</del> <ins>d</ins>"
