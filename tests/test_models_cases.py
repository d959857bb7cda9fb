"""Eval cases (``toolbench/_bench/models/cases.py``): every mistake names the case and the key;
JSON, JSON Lines, YAML, lists and DataFrames give the same checked cases."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import toolbench as tb
from toolbench._bench.models.cases import CaseError, Expect, as_cases, read_cases

CASES = [
    {"id": "lp", "prompt": "How far is London from Paris?",
     "expect": [{"tool": "distance", "arguments": {"from_city": "London", "to_city": "Paris"}}]},
    {"id": "hi", "prompt": "Say hello", "expect": [], "forbid": ["distance"]},
    {"prompt": [{"role": "user", "content": "Bearing, then distance"}],
     "expect": ["bearing", {"tool": "distance", "match": "ignore"}], "order": "strict"},
]


def test_a_list_is_checked_and_filled_in() -> None:
    cases = as_cases(CASES)
    assert [c.id for c in cases] == ["lp", "hi", "2"]  # no id: its position
    assert cases[0].expect == (Expect("distance", {"from_city": "London", "to_city": "Paris"},
                                      "partial"),)
    assert cases[1].expect == () and cases[1].forbid == ("distance",)
    assert cases[2].expect[0] == Expect("bearing", {}, "ignore")
    assert cases[2].order == "strict" and cases[0].order == "any"
    assert cases[2].tools == ["bearing", "distance"]


def test_json_yaml_jsonl_and_a_dataframe_agree(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "c.json").write_text(json.dumps({"cases": CASES}))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(CASES))
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(c) for c in CASES) + "\n\n")
    loaded = [tb.load_cases(tmp_path / name) for name in ("c.json", "c.yaml", "c.jsonl")]
    assert loaded[0] == loaded[1] == loaded[2]
    assert loaded[0][0] == {"id": "lp", "prompt": "How far is London from Paris?",
                            "expect": [{"tool": "distance", "arguments": {
                                "from_city": "London", "to_city": "Paris"}, "match": "partial"}],
                            "forbid": [], "order": "any"}
    frame = pd.DataFrame(loaded[0])
    assert [c.as_dict() for c in as_cases(frame)] == loaded[0]
    assert [c.as_dict() for c in as_cases(str(tmp_path / "c.yaml"))] == loaded[0]


def test_a_digest_changes_with_the_content_not_with_the_spelling() -> None:
    a, = as_cases([{"id": "x", "prompt": "p", "expect": ["distance"]}])
    b, = as_cases([{"id": "x", "prompt": "p", "expect": [{"tool": "distance"}],
                    "forbid": [], "order": "any"}])
    c, = as_cases([{"id": "x", "prompt": "p2", "expect": ["distance"]}])
    assert a.digest() == b.digest() != c.digest()


@pytest.mark.parametrize(("case", "words"), [
    ({"id": "a", "prompt": "p", "expected": []}, ["case 'a'", "unknown key 'expected'",
                                                  "did you mean 'expect'"]),
    ({"id": "b", "expect": []}, ["case 'b'", "key 'prompt' is missing"]),
    ({"id": "c", "prompt": ""}, ["case 'c'", "key 'prompt' is empty"]),
    ({"id": "d", "prompt": "p", "expect": "distance"}, ["case 'd'", "key 'expect' is a list"]),
    ({"id": "e", "prompt": "p", "expect": [{"tool": "distance", "args": {}}]},
     ["case 'e'", "key 'expect[0]'", "unknown key 'args'", "did you mean 'arguments'"]),
    ({"id": "f", "prompt": "p", "expect": [{"tool": "distance", "match": "fuzzy"}]},
     ["case 'f'", "key 'expect[0]'", "'match'", "'fuzzy'"]),
    ({"id": "g", "prompt": "p", "expect": [{"tool": "d", "arguments": [1]}]},
     ["case 'g'", "key 'arguments' is a mapping"]),
    ({"id": "h", "prompt": "p", "order": "sorted"}, ["case 'h'", "key 'order'", "'sorted'"]),
    ({"id": "i", "prompt": "p", "forbid": [3]}, ["case 'i'", "key 'forbid[0]'"]),
    ({"id": "j", "prompt": "p", "expect": ["x"], "forbid": ["x"]},
     ["case 'j'", "key 'forbid' names 'x'"]),
    ({"id": True, "prompt": "p"}, ["case #0", "key 'id'"]),
    ({"id": "k", "prompt": [{"content": "no role"}]}, ["case 'k'", "key 'prompt'"]),
    (["not", "a", "mapping"], ["case #0 is a list"]),
])
def test_a_mistake_names_the_case_and_the_key(case: object, words: list[str]) -> None:
    with pytest.raises(CaseError) as caught:
        as_cases([case])
    for word in words:
        assert word in str(caught.value), (word, str(caught.value))


def test_duplicate_ids_and_no_cases_are_refused() -> None:
    with pytest.raises(CaseError, match=r"case 'x' \(#1\): key 'id': the same id as case #0"):
        as_cases([{"id": "x", "prompt": "p"}, {"id": "x", "prompt": "q"}])
    with pytest.raises(CaseError, match="no cases"):
        as_cases([])
    with pytest.raises(CaseError, match="not one mapping"):
        as_cases({"id": "x", "prompt": "p"})


def test_a_file_error_names_the_file_and_where(tmp_path: Path) -> None:
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('[{"id": "a", "prompt": "p"},\n {"id": }]')
    with pytest.raises(ValueError, match=r"bad\.json.*not valid JSON.*line 2"):
        tb.load_cases(bad_json)
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("- id: a\n  prompt: [unclosed\n")
    with pytest.raises(ValueError, match=r"bad\.yaml.*not valid YAML"):
        tb.load_cases(bad_yaml)
    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_text('{"id": "a", "prompt": "p"}\nnope\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl.*line 2, is not JSON"):
        tb.load_cases(bad_line)
    other = tmp_path / "cases.txt"
    other.write_text("[]")
    with pytest.raises(ValueError, match=r"cases\.txt.*\.json, \.jsonl, \.yaml, \.yml"):
        tb.load_cases(other)
    with pytest.raises(ValueError, match="cannot be read"):
        tb.load_cases(tmp_path / "missing.json")
    unknown_key = tmp_path / "typo.yaml"
    unknown_key.write_text("- id: lp\n  prompt: London to Paris\n  expects: [distance]\n")
    with pytest.raises(CaseError, match=r"typo\.yaml.*case 'lp' \(#0\): unknown key 'expects'"):
        tb.load_cases(unknown_key)
    a_dict = tmp_path / "one.json"
    a_dict.write_text('{"id": "a", "prompt": "p"}')
    with pytest.raises(ValueError, match=r"holds a dict; it should hold a list"):
        tb.load_cases(a_dict)


@pytest.mark.parametrize(("match", "called", "ok"), [
    ("partial", {"from_city": "London", "to_city": "Paris", "unit": "km"}, True),
    ("partial", {"from_city": "London"}, False),
    ("partial", {"from_city": "london", "to_city": "Paris"}, False),
    ("exact", {"from_city": "London", "to_city": "Paris"}, True),
    ("exact", {"from_city": "London", "to_city": "Paris", "unit": "km"}, False),
    ("ignore", {"anything": 1}, True),
    ("partial", None, False),  # arguments that could not be parsed
    ("ignore", None, True),
])
def test_argument_matching(match: str, called: dict[str, object] | None, ok: bool) -> None:
    expect = Expect("distance", {"from_city": "London", "to_city": "Paris"}, match)
    assert expect.accepts(called) is ok


def test_numbers_match_as_json_does_but_a_bool_is_not_a_number() -> None:
    assert Expect("t", {"n": 1}, "exact").accepts({"n": 1.0})
    assert not Expect("t", {"n": 1}, "exact").accepts({"n": True})
    assert Expect("t", {"o": {"a": 1}}, "partial").accepts({"o": {"a": 1, "b": 2}})
    assert not Expect("t", {"o": {"a": 1}}, "exact").accepts({"o": {"a": 1, "b": 2}})
    assert not Expect("t", {"l": [1, 2]}, "partial").accepts({"l": [1, 2, 3]})
    assert not Expect("t", {"l": [1]}, "partial").accepts({"l": 1})


def test_read_cases_returns_case_objects(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(CASES))
    assert [c.id for c in read_cases(path)] == ["lp", "hi", "2"]


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".yaml"])
def test_a_file_nested_past_the_parsers_limit_names_the_file(tmp_path: Path,
                                                             suffix: str) -> None:
    path = tmp_path / f"cases{suffix}"
    path.write_text("[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ValueError, match=r"cases file .*cases\.\w+.* nested too deeply"):
        tb.load_cases(path)
