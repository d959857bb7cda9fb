"""Argument names a tool does not declare (toolbench._core.schema.names), issue #37 item 1:
refused with close names, unless the schema admits other names; ``check=False`` sends them
anyway and the record says so."""

from __future__ import annotations

import sys
from typing import Any

import pytest

import toolbench as tb
from toolbench._core.ids import ToolId
from toolbench._core.schema.names import declared
from toolbench._core.schema.validate import validate_arguments

TOOL = ToolId("s", "t")
SCHEMA = {"type": "object", "properties": {"from_city": {"type": "string"},
                                           "to_city": {"type": "string"},
                                           "unit": {"type": "string"}}}


def test_a_misspelt_name_is_refused_with_its_close_names() -> None:
    with pytest.raises(tb.Refused) as caught:
        validate_arguments(TOOL, SCHEMA, {"from_city": "a", "to_city": "b", "units": "mi"})
    text = str(caught.value)
    assert "no parameter 'units'; did you mean 'unit'?" in text
    assert "from_city, to_city, unit" in text and "additionalProperties" in text
    assert caught.value.disposition is tb.Disposition.DID_NOT_HAPPEN


def test_several_unknown_names_are_each_named() -> None:
    with pytest.raises(tb.Refused, match=r"no parameters 'units'.*'to_cty'; did you mean "
                                         r"'to_city'"):
        validate_arguments(TOOL, SCHEMA, {"units": "mi", "to_cty": "x"})


@pytest.mark.parametrize("extra", [True, {"type": "string"}, {}])
def test_additional_properties_true_or_a_schema_admits_any_name(extra: Any) -> None:
    validate_arguments(TOOL, {**SCHEMA, "additionalProperties": extra}, {"units": "mi"})


@pytest.mark.parametrize("schema", [
    {"type": "object"},  # no properties declared: nothing to judge by
    {"$ref": "#/$defs/a", "$defs": {"a": {"type": "object"}}},  # refers elsewhere
    {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": True},
])
def test_a_schema_that_declares_nothing_plainly_is_not_judged(schema: dict[str, Any]) -> None:
    assert declared(schema) is None
    validate_arguments(TOOL, schema, {"anything": 1})


def test_names_from_combined_subschemas_and_patterns_are_admitted() -> None:
    schema = {"type": "object", "properties": {"a": {}},
              "allOf": [{"properties": {"b": {}}}],
              "anyOf": [{"properties": {"c": {}}}, {"properties": {"d": {}}}],
              "patternProperties": {"^x_": {}}}
    validate_arguments(TOOL, schema, {"a": 1, "b": 2, "c": 3, "d": 4, "x_y": 5})
    with pytest.raises(tb.Refused, match="no parameter 'e'"):
        validate_arguments(TOOL, schema, {"e": 1})


def test_additional_properties_false_is_the_schemas_own_refusal() -> None:
    with pytest.raises(tb.Refused, match="'units' was unexpected"):
        validate_arguments(TOOL, {**SCHEMA, "additionalProperties": False}, {"units": "mi"})


def test_a_tool_without_parameters_refuses_any() -> None:
    with pytest.raises(tb.Refused, match=r"no parameter 'x' \(its parameters: none"):
        validate_arguments(TOOL, {"type": "object", "properties": {}}, {"x": 1})


def test_a_toolset_serving_its_own_tools_is_not_changed() -> None:
    validate_arguments(TOOL, SCHEMA, {"units": "mi"}, strict=True)  # the server's own rule


@pytest.mark.slow
def test_the_demo_server_refuses_units_and_check_false_sends_it_recorded() -> None:
    """The issue's own case, on the real demo server over stdio."""
    with tb.Bench() as bench:
        bench.connect("geo", [sys.executable, "-m", "toolbench.demo.geo"])
        with pytest.raises(tb.Refused) as caught:
            bench.call("geo-distance", from_city="London", to_city="Paris", units="mi")
        assert "did you mean 'unit'" in str(caught.value)
        refused = bench.records.iloc[-1]
        assert refused["disposition"] == "did_not_happen"
        assert refused["error_type"] == "Refused"
        sent = bench.call("geo-distance", from_city="London", to_city="Paris", units="mi",
                          check=False)
        assert sent.data == {"result": pytest.approx(343.557, abs=0.01)}  # km: units ignored
        prov = bench.records.iloc[-1]["provenance"]
        assert prov["check"] is False and "no parameter 'units'" in prov["schema_error"]
        miles = bench.call("geo-distance", from_city="London", to_city="Paris", unit="mi")
        assert miles.data["result"] < 300
