"""The schema form: widget per type, required marks, defaults, empties, errors beside fields."""

from __future__ import annotations

import enum
import time
from typing import Any, Literal

import ipywidgets as widgets
import pytest
from mcp.server.mcpserver import MCPServer

import toolbench as tb
from toolbench._notebook.ask.form import FormError, NumberText, build_form, parse_number


class Color(enum.Enum):
    red = "red"
    green = "green"


def kitchen_schema() -> dict[str, Any]:
    """The input schema the real SDK derives for a function using every kind of parameter."""
    srv = MCPServer("schemas")

    @srv.tool()
    def kitchen(name: str, count: int, ratio: float, flag: bool, mode: Literal["a", "b"],
                color: Color, tags: list[str], meta: dict[str, int], note: str | None = None,
                limit: int = 5, opt_flag: bool = True, scale: float = 1.5,
                level: Literal["low", "high"] = "high", extra: list[int] | None = None) -> str:
        """Every kind of parameter."""
        return "ok"

    with tb.Bench() as bench:
        bench.connect("s", srv)
        schema: dict[str, Any] = bench.pegboard.entry("s-kitchen").spec.input_schema
    return schema


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return kitchen_schema()


def fill_required(form: Any) -> None:
    form["name"].value = "x"
    form["tags"].value = '["a", "b"]'
    form["meta"].value = '{"k": 1}'
    form["count"].value = "3"
    form["ratio"].value = "0.5"


def test_each_type_gets_its_widget(schema: dict[str, Any]) -> None:
    form = build_form(schema)
    expected = {
        "name": widgets.Text, "count": NumberText, "ratio": NumberText,
        "flag": widgets.Checkbox, "mode": widgets.Dropdown, "color": widgets.Dropdown,
        "tags": widgets.Textarea, "meta": widgets.Textarea, "note": widgets.Text,
        "limit": NumberText, "opt_flag": widgets.Checkbox, "scale": NumberText,
        "level": widgets.Dropdown, "extra": widgets.Textarea,
    }
    assert {n: type(form[n]) for n in expected} == expected
    # The enum behind a $ref is resolved: its values are the choices.
    assert [label for label, _ in form["color"].options] == ["—", "red", "green"]
    assert form.fields["note"].nullable and not form.fields["note"].required
    assert form.fields["extra"].nullable


def test_required_marked_and_defaults_filled(schema: dict[str, Any]) -> None:
    form = build_form(schema)
    required = {n for n, f in form.fields.items() if "title='required'" in f.row.children[0].value}
    assert required == {"name", "count", "ratio", "flag", "mode", "color", "tags", "meta"}
    assert form["limit"].value == "5"
    assert form["opt_flag"].value is True
    assert form["scale"].value == "1.5"
    # A number without a default starts empty, never 0 (0 may break a minimum).
    assert form["count"].value == "" and form["ratio"].value == ""
    assert form["level"].label == "high"
    assert form["note"].value == ""
    # A required choice starts on its first real value, not the blank.
    assert form["mode"].label == "a"


def test_empty_optional_fields_are_omitted(schema: dict[str, Any]) -> None:
    form = build_form(schema)
    fill_required(form)
    form["count"].value = form["ratio"].value = ""
    # An empty required number is marked, not sent as a 0 nobody typed.
    with pytest.raises(FormError) as info:
        form.values()
    assert set(info.value.errors) == {"count", "ratio"}
    assert "required" in form.fields["count"].error.value
    form["count"].value = "0"
    form["ratio"].value = " 0.25 "
    args = form.values()
    # What the form shows is sent: the defaults; empty optional fields are left out.
    assert args == {"name": "x", "count": 0, "ratio": 0.25, "flag": False, "mode": "a",
                    "color": "red", "tags": ["a", "b"], "meta": {"k": 1}, "limit": 5,
                    "opt_flag": True, "scale": 1.5, "level": "high"}
    assert form.errors == {}
    # An optional number without a default starts empty and unsent; a boolean has a "send"
    # box (a checkbox cannot be empty), ticked by editing it.
    form2 = build_form({"type": "object", "properties": {"n": {"type": "number"},
                                                         "b": {"type": "boolean"}}})
    assert form2.fields["n"].include is None and form2.fields["b"].include is not None
    assert form2.values() == {}
    form2["n"].value = "2.5"
    assert form2.values() == {"n": 2.5}
    form2["b"].value = True
    form2["b"].value = False
    assert form2.values() == {"n": 2.5, "b": False}
    form2["n"].value = ""  # emptied again: not sent again
    assert form2.values() == {"b": False}


def test_a_number_box_starts_empty_or_with_the_default_and_says_its_range() -> None:
    schema = {"type": "object", "required": ["nights"], "properties": {
        "nights": {"type": "integer", "minimum": 1, "maximum": 30},
        "budget": {"type": "number", "exclusiveMinimum": 0},
        "rate": {"type": "number", "default": 2.0},
    }}
    form = build_form(schema)
    assert form["nights"].value == "" and form["budget"].value == ""
    assert form["rate"].value == "2"
    assert form["nights"].placeholder == "integer, ≥ 1, ≤ 30"
    assert form["budget"].placeholder == "number, > 0 (empty: not sent)"
    # Typed text is read as the schema's kind, and judged by its rules.
    form["nights"].value = "-3"
    with pytest.raises(FormError) as info:
        form.values()
    assert "minimum of 1" in info.value.errors["nights"]
    form["nights"].value = "5"
    assert form.values() == {"nights": 5, "rate": 2.0}
    for bad, why in (("five", "is not an integer"), ("2.5", "no fraction"),
                     ("nan", "not a finite number")):
        form["nights"].value = bad
        with pytest.raises(FormError) as info:
            form.values()
        assert why in info.value.errors["nights"], (bad, info.value.errors)
    form["nights"].value = 7  # a number set from code is stored as its text
    assert form["nights"].value == "7" and form.values()["nights"] == 7


def test_parse_number_names_the_value_and_the_rule() -> None:
    assert parse_number("integer", "12") == 12
    assert parse_number("integer", "3.0") == 3
    assert parse_number("number", "1e3") == 1000.0
    with pytest.raises(ValueError, match="'x' is not a number"):
        parse_number("number", "x")
    with pytest.raises(ValueError, match="'inf' is not a finite number"):
        parse_number("number", "inf")


def test_text_boxes_send_every_key(schema: dict[str, Any]) -> None:
    """A value must reach the kernel before a click on Accept/Call: sent per key, not with the
    blur that the click itself causes (the two then race in ipykernel 7; form.py says why)."""
    form = build_form(schema)
    for name in ("name", "count", "ratio", "tags", "note"):
        assert form[name].continuous_update is True, name


def test_changed_optional_values_are_sent(schema: dict[str, Any]) -> None:
    form = build_form(schema)
    fill_required(form)
    form["note"].value = "hello"
    form["limit"].value = 9  # stored as "9"
    form["opt_flag"].value = False
    form["scale"].value = 2.25
    form["level"].label = "low"
    form["extra"].value = "[1, 2]"
    form["mode"].label = "b"
    form["color"].label = "green"
    form["flag"].value = True
    args = form.values()
    assert {k: args[k] for k in ("note", "limit", "opt_flag", "scale", "level", "extra",
                                 "mode", "color", "flag")} == {
        "note": "hello", "limit": 9, "opt_flag": False, "scale": 2.25, "level": "low",
        "extra": [1, 2], "mode": "b", "color": "green", "flag": True}


def test_send_toggle_can_be_cleared_again(schema: dict[str, Any]) -> None:
    form = build_form(schema)
    fill_required(form)
    form["opt_flag"].value = False
    form.fields["opt_flag"].include.value = False
    form["limit"].value = ""  # an emptied number is not sent
    args = form.values()
    assert "limit" not in args and "opt_flag" not in args and args["scale"] == 1.5


def test_invalid_input_flagged_beside_each_field(schema: dict[str, Any]) -> None:
    form = build_form(schema)
    form["tags"].value = "[not json"
    form["meta"].value = "[1, 2]"
    form["count"].value = "3"
    form["ratio"].value = "many"
    with pytest.raises(FormError) as info:
        form.values()
    assert set(info.value.errors) == {"name", "tags", "meta", "ratio"}
    assert "is not a number" in form.fields["ratio"].error.value
    assert form.errors == info.value.errors
    assert "required" in form.fields["name"].error.value
    assert "not valid JSON" in form.fields["tags"].error.value
    assert "expected a JSON object" in form.fields["meta"].error.value
    assert form.fields["count"].error.value == ""
    assert "nothing was sent" in form.message.value
    # Fixing the fields clears the marks.
    fill_required(form)
    form.values()
    assert all(f.error.value == "" for f in form.fields.values())
    assert form.message.value == ""


def test_schema_rules_checked_per_field() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 10},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "items": {"type": "array", "items": {"type": "integer"}},
        },
        "required": ["n", "code", "items"],
    }
    form = build_form(schema)
    form["n"].value = 0
    form["code"].value = "abc"
    form["items"].value = '[1, "two"]'
    with pytest.raises(FormError) as info:
        form.values()
    errors = info.value.errors
    assert set(errors) == {"n", "code", "items"}
    assert "minimum" in errors["n"] or "less than" in errors["n"]
    assert "does not match" in errors["code"]
    assert errors["items"].startswith("1: ")  # names the item inside the array
    form["n"].value = 3
    form["code"].value = "ABC"
    form["items"].value = "[1, 2]"
    assert form.values() == {"n": 3, "code": "ABC", "items": [1, 2]}


def test_nullable_required_sends_null_when_left_empty() -> None:
    schema = {"type": "object", "required": ["when", "count"],
              "properties": {"when": {"type": ["string", "null"]},
                             "count": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
    form = build_form(schema)
    assert isinstance(form["count"], NumberText)
    assert form.values() == {"when": None, "count": None}


def test_optional_enum_blank_is_omitted_and_const_and_untyped() -> None:
    schema = {"type": "object", "required": ["fixed"], "properties": {
        "pick": {"enum": ["x", "y"]},
        "fixed": {"const": "v1"},
        "anything": {},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    }}
    form = build_form(schema)
    assert form["pick"].label == "—"
    assert isinstance(form["anything"], widgets.Textarea)
    assert isinstance(form["either"], widgets.Textarea)
    assert form.values() == {"fixed": "v1"}
    form["anything"].value = '{"a": [1]}'
    form["either"].value = "7"
    form["pick"].label = "y"
    assert form.values() == {"fixed": "v1", "anything": {"a": [1]}, "pick": "y", "either": 7}


def test_no_arguments_and_odd_schemas() -> None:
    for schema in (None, {}, {"type": "object"}, {"type": "object", "properties": []}, "junk"):
        form = build_form(schema)  # type: ignore[arg-type]
        assert form.fields == {}
        assert form.values() == {}
    # A broken schema still gives a form; the server gets to judge what is sent.
    broken = {"type": "object", "properties": {"a": {"type": "string"}}, "required": "a",
              "minProperties": "many"}
    form = build_form(broken)
    form["a"].value = "v"
    assert form.values() == {"a": "v"}


def test_hostile_names_and_descriptions_are_escaped() -> None:
    evil = "<img src=x onerror=alert(1)>"
    schema = {"type": "object", "properties": {
        evil: {"type": "string", "description": "<script>alert(2)</script>" + "x" * 100_000},
        "choice": {"enum": ["<b>bold</b>", "plain"]},
    }, "required": [evil]}
    form = build_form(schema)
    label = form.fields[evil].row.children[0].value
    assert "<img" not in label and "&lt;img" in label
    assert "<script>" not in label and "&lt;script&gt;" in label
    assert len(label) < 2_000
    # Dropdown labels are rendered as text by ipywidgets; the value stays the real one.
    form["choice"].label = "<b>bold</b>"
    form[evil].value = "v"
    assert form.values() == {evil: "v", "choice": "<b>bold</b>"}
    form[evil].value = ""
    with pytest.raises(FormError):
        form.values()
    assert "<" not in form.fields[evil].error.value.replace("<span", "").replace("</span>", "")


def test_local_refs_resolve_as_json_pointers_and_stop_on_cycles() -> None:
    schema = {
        "type": "object",
        "properties": {
            "slash": {"$ref": "#/$defs/a~1b"},
            "tilde": {"$ref": "#/$defs/c~0d"},
            "spaced": {"$ref": "#/$defs/with%20space"},
            "indexed": {"$ref": "#/$defs/list/1"},
            "loop": {"$ref": "#/$defs/x"},
            "remote": {"$ref": "http://127.0.0.1:9/never.json"},
            "nowhere": {"$ref": "#/$defs/missing/deeper"},
        },
        "$defs": {"a/b": {"type": "integer"}, "c~d": {"type": "boolean"},
                  "with space": {"enum": ["p", "q"]},
                  "list": [{"type": "string"}, {"type": "number"}],
                  "x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}},
    }
    form = build_form(schema)
    kinds = {name: f.kind for name, f in form.fields.items()}
    assert kinds == {"slash": "integer", "tilde": "boolean", "spaced": "enum",
                     "indexed": "number", "loop": "json", "remote": "json", "nowhere": "json"}
    assert form.values() == {}  # all optional and untouched: nothing is sent
    form["slash"].value = 4
    form["indexed"].value = 2.5
    form["loop"].value = '"anything"'
    assert form.values() == {"slash": 4, "indexed": 2.5, "loop": "anything"}


def test_a_schema_with_thousands_of_properties_gets_one_json_box() -> None:
    """Thousands of widget rows would keep the kernel thread (and the page) busy; past
    MAX_FIELDS the form asks for one JSON object and still checks it against the schema."""
    from toolbench._notebook.ask.form import MAX_FIELDS, WHOLE

    schema = {"type": "object", "required": ["p0"],
              "properties": {f"p{i}": {"type": "string", "maxLength": 3} for i in range(5000)}}
    started = time.perf_counter()
    form = build_form(schema)
    assert time.perf_counter() - started < 2.0
    assert form.fields == {} and form.whole is not None
    assert f"5,000 parameters (more than {MAX_FIELDS}" in form.widget.children[0].value
    form.whole.input.value = '{"p0": "abc", "p7": "xy"}'
    assert form.values() == {"p0": "abc", "p7": "xy"}
    # 5,000 properties are also past the validator's size limit (the server judges those);
    # 500 are past MAX_FIELDS but still checked locally.
    schema["properties"] = {f"p{i}": {"type": "string", "maxLength": 3} for i in range(500)}
    form = build_form(schema)
    assert form.fields == {} and form.whole is not None
    form.whole.input.value = '{"p0": "too long"}'
    with pytest.raises(FormError) as bad:
        form.values()
    assert "p0" in bad.value.errors and "nothing was sent" in form.message.value
    form.whole.input.value = "{not json"
    with pytest.raises(FormError) as broken:
        form.values()
    assert WHOLE in broken.value.errors and "not valid JSON" in broken.value.errors[WHOLE]


def test_titled_choices_and_multi_selects_as_mcp_elicitation_sends_them() -> None:
    """MCP's elicitation enums: titled single-select (``oneOf`` consts), legacy
    ``enumNames``, untitled and titled multi-selects (arrays of choices)."""
    schema = {"type": "object", "required": ["cls", "acts"], "properties": {
        "cls": {"type": "string", "oneOf": [{"const": "e", "title": "Economy"},
                                             {"const": "f", "title": "First"}]},
        "old": {"type": "string", "enum": ["x", "y"], "enumNames": ["Ex", "Why"]},
        "acts": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"anyOf": [
            {"const": "hike", "title": "Hiking"}, {"const": "food", "title": "Food tours"},
            {"const": "sea", "title": "<b>Beaches</b>"}]}},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]},
                 "default": ["c", "a"]},
        "mixed": {"type": "array", "items": {"type": "string"}},  # free list: JSON box
    }}
    form = build_form(schema)
    kinds = {name: f.kind for name, f in form.fields.items()}
    assert kinds == {"cls": "enum", "old": "enum", "acts": "multi", "tags": "multi",
                     "mixed": "json"}
    # The titles are shown, the values sent; a required choice starts on its first value.
    assert [label for label, _ in form["cls"].options] == ["—", "Economy", "First"]
    assert form["cls"].label == "Economy"
    assert [label for label, _ in form["old"].options] == ["—", "Ex", "Why"]
    assert isinstance(form["acts"], widgets.SelectMultiple)
    assert [label for label, _ in form["acts"].options] == ["Hiking", "Food tours",
                                                            "<b>Beaches</b>"]
    assert "pick 1–2 (Ctrl/⌘-click for several)" in form.fields["acts"].row.children[0].value
    assert form["tags"].value == (0, 2)  # the schema's default, chosen
    # Too few or too many chosen: the field says how many, and the rule; nothing is sent.
    with pytest.raises(FormError) as info:
        form.values()
    assert set(info.value.errors) == {"acts"}
    assert "0 chosen: choose at least 1" in form.fields["acts"].error.value
    form["acts"].value = (2, 0, 1)  # three of at most two: refused, nothing sent
    with pytest.raises(FormError):
        form.values()
    assert "3 chosen: choose at most 2" in form.fields["acts"].error.value
    form["acts"].value = (2, 0)  # sent in the order listed, not clicked
    form["old"].label = "Why"
    form["cls"].label = "First"
    assert form.values() == {"cls": "f", "old": "y", "acts": ["hike", "sea"],
                             "tags": ["a", "c"]}
    # An optional multi-select with nothing chosen is not sent.
    form["tags"].value = ()
    assert "tags" not in form.values()


def test_every_broken_field_is_marked_at_once() -> None:
    """A field that cannot be read (too many chosen, not a number) does not hide the
    schema's verdict on the others: a person fixes everything in one go."""
    form = build_form({"type": "object", "required": ["n", "acts"], "properties": {
        "n": {"type": "integer", "minimum": 1},
        "x": {"type": "number"},
        "acts": {"type": "array", "maxItems": 1, "items": {"enum": ["a", "b"]}}}})
    form["n"].value = "-3"
    form["x"].value = "many"
    form["acts"].value = (0, 1)
    with pytest.raises(FormError) as info:
        form.values()
    assert info.value.errors == {"n": "-3 is less than the minimum of 1",
                                 "x": "'many' is not a number",
                                 "acts": "2 chosen: choose at most 1"}


def test_both_boxes_of_an_optional_boolean_are_labelled() -> None:
    """Issue 37, item 9: an unlabelled value box sat next to a ticked "send" box."""
    form = build_form({"type": "object", "properties": {"b": {"type": "boolean",
                                                              "default": True},
                                                        "r": {"type": "boolean"}},
                       "required": ["r"]})
    field = form.fields["b"]
    assert field.input.description == "true" and field.include is not None
    assert field.include.description == "send this field"
    assert "left out" in field.include.tooltip and "true" in field.input.tooltip
    assert form.fields["r"].input.description == "true" and form.fields["r"].include is None
