"""Tool specs (``toolbench._bench.models.specs``, ``spec_faces``): each provider's shape,
provider-legal names mapped back, collisions kept apart, documented schema rejections warned
of, secrets never carried; in process, and over stdio against the geo demo and a server that
names its tool after a secret."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolbench as tb
from toolbench._bench.models.specs import (
    FORMATS,
    NAME_RULES,
    ToolSpecs,
    build_specs,
    provider_names,
)
from toolbench._bench.report import portability
from toolbench._core.client import ToolSpec

SCHEMA = {"type": "object", "properties": {"city": {"type": "string",
                                                    "description": "A city."}},
          "required": ["city"]}
OPENAI = re.compile(r"[a-zA-Z0-9_-]{1,64}")
GEMINI = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")


def spec(name: str, schema: Any = None, description: str = "Looks a city up.") -> ToolSpec:
    return ToolSpec(name, description, SCHEMA if schema is None else schema)


def pairs(*names: str, schema: Any = None) -> list[tuple[str, ToolSpec]]:
    return [(name, spec(name, schema)) for name in names]


# -- shapes -------------------------------------------------------------------------------------
def test_each_format_has_its_providers_shape() -> None:
    tools = pairs("geo-city")
    assert build_specs(tools).tools == [{"type": "function", "function": {
        "name": "geo-city", "description": "Looks a city up.", "parameters": SCHEMA}}]
    assert build_specs(tools, "anthropic").tools == [
        {"name": "geo-city", "description": "Looks a city up.", "input_schema": SCHEMA}]
    assert build_specs(tools, "gemini").tools == [
        {"name": "geo-city", "description": "Looks a city up.", "parameters": SCHEMA}]
    full = ToolSpec("geo-city", "Looks a city up.", SCHEMA, output_schema={"type": "object"},
                    annotations={"readOnlyHint": True}, title="City", meta={"k": 1})
    assert build_specs([("geo-city", full)], "mcp").tools == [{
        "name": "geo-city", "description": "Looks a city up.", "inputSchema": SCHEMA,
        "title": "City", "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True}, "_meta": {"k": 1}}]
    with pytest.raises(ValueError, match="format 'bedrock' is not one of openai, anthropic"):
        build_specs(tools, "bedrock")


def test_specs_behave_as_the_list_of_tools_and_hold_copies() -> None:
    tools = pairs("a-one", "a-two", "a-three")
    specs = build_specs(tools)
    assert isinstance(specs, ToolSpecs) and len(specs) == 3
    assert specs[0]["function"]["name"] == "a-one" and specs[-1] is specs.tools[-1]
    assert [t["function"]["name"] for t in specs[1:]] == ["a-two", "a-three"]
    assert list(specs) == specs.tools and json.loads(json.dumps(list(specs))) == specs.tools
    specs[0]["function"]["parameters"]["properties"]["city"]["type"] = "integer"
    assert tools[0][1].input_schema["properties"]["city"]["type"] == "string"  # not the catalog's
    assert repr(specs) == "<ToolSpecs openai: 3 tools, 0 renamed, 0 warnings>"


# -- names --------------------------------------------------------------------------------------
def test_a_name_the_provider_rejects_is_sanitized_hashed_and_mapped_back() -> None:
    specs = build_specs(pairs("files-read.file", "geo-city"))
    renamed = specs[0]["function"]["name"]
    assert re.fullmatch(r"files-read_file_[0-9a-f]{6}", renamed)
    assert specs.names == {renamed: "files-read.file", "geo-city": "geo-city"}
    assert specs.pegboard_name(renamed) == "files-read.file"
    assert specs.pegboard_name("files-read.file") is None  # the model never saw that name
    assert specs.pegboard_name("made-up") is None
    again = build_specs(pairs("files-read.file"))  # stable: the same catalog, the same name
    assert again[0]["function"]["name"] == renamed
    gemini = build_specs(pairs("files-read.file", "9-lives"), "gemini")
    assert gemini.pegboard_name("files-read.file") == "files-read.file"  # dots are Gemini-legal
    (other,) = [n for n in gemini.names if n != "files-read.file"]
    assert other.startswith("_9-lives_") and GEMINI.fullmatch(other)


def test_tools_whose_sanitized_names_collide_are_both_kept_and_told_apart() -> None:
    names = ["f-read.file", "f-read:file", "f-read file", "f-read_file", "x" * 70, "x" * 71]
    specs = build_specs(pairs(*names))
    offered = [t["function"]["name"] for t in specs]
    assert len(set(offered)) == len(names) and all(OPENAI.fullmatch(n) for n in offered)
    assert offered[3] == "f-read_file"  # a legal name keeps itself, however others sanitize
    assert [specs.pegboard_name(n) for n in offered] == names
    assert all(len(n) == 64 for n in offered[4:])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=90), min_size=1, max_size=12, unique=True),
       st.sampled_from(["openai", "anthropic", "gemini"]))
def test_any_names_become_legal_distinct_names_that_map_back(names: list[str],
                                                             format: str) -> None:
    rule = NAME_RULES[format]
    provided = provider_names(names, rule)
    assert len(set(provided)) == len(names)
    assert all(rule.accepts(n) for n in provided)
    assert [n for n, p in zip(names, provided, strict=True) if n != p] == [
        n for n in names if not rule.accepts(n)]  # a legal name is never renamed
    specs = build_specs([(n, spec(n)) for n in names], format)
    assert sorted(specs.names.values()) == sorted(names)


# -- warnings: what a provider documents it rejects ---------------------------------------------
def test_warnings_name_the_tool_the_form_and_the_rule_per_format() -> None:
    loose = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
             "additionalProperties": False, "properties": {
                 "when": {"type": ["string", "null"], "description": "A date."},
                 "level": {"enum": [1, 2, 3], "description": "How much."},
                 "where": {"$ref": "#/$defs/Place"}},
             "$defs": {"Place": {"type": "string"}}}
    tools = [("t-loose", spec("t-loose", loose)), ("t-text", spec("t-text", {"type": "string"}))]
    assert build_specs(tools).warnings == []  # OpenAI documents no rejected form (non-strict)
    assert build_specs(tools, "mcp").warnings == []
    assert build_specs(tools, "anthropic").warnings == [
        "t-text: the input schema's type is 'string' (anthropic-input-schema-not-object)"]
    gemini = build_specs(tools, "gemini").warnings
    assert gemini == [
        "t-loose: '$schema' at inputSchema (gemini-unsupported-keyword)",
        "t-loose: 'additionalProperties' at inputSchema (gemini-unsupported-keyword)",
        "t-loose: '$defs' at inputSchema (gemini-unsupported-keyword)",
        "t-loose: '$ref' at inputSchema.properties.where (gemini-unsupported-keyword)",
        "t-loose: inputSchema.properties.when has type ['string', 'null'] (gemini-type-list)",
        "t-loose: inputSchema.properties.level enum holds 1 and 2 more "
        "(gemini-enum-not-strings)"]
    assert build_specs(tools, "gemini")[0]["parameters"] == loose  # warned of, not rewritten


def test_every_portability_rule_names_the_documentation_it_follows() -> None:
    listed = tb.report_rules().set_index("rule")
    for rule in portability.PORTABILITY_RULES:
        assert rule.id in listed.index
        source = portability.SOURCES[rule.id]
        assert ("Anthropic API reference" in source) or ("Gemini API reference" in source)
    assert set(portability.FORMAT_RULES) == set(FORMATS)


def test_a_schema_deeper_than_the_recursion_limit_is_copied_and_checked() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(sys.getrecursionlimit() * 10):
        deep = {"type": "object", "properties": {"p": deep}}
    for format in FORMATS:
        specs = build_specs([("a-deep", spec("a-deep", deep))], format)
        copy = specs[0].get("function", specs[0])
        node = copy.get("parameters", copy.get("input_schema", copy.get("inputSchema")))
        assert node is not deep
        levels = 0
        while "properties" in node:
            node, levels = node["properties"]["p"], levels + 1
        assert levels == sys.getrecursionlimit() * 10
    odd = {"type": "object", "default": {1, 2}}  # an in-process tool's, not JSON
    assert build_specs([("a-odd", spec("a-odd", odd))])[0]["function"]["parameters"] == odd


def test_a_huge_or_deep_schema_is_checked_within_a_bound() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(20_000):
        deep = {"type": "object", "properties": {"p": deep}, "additionalProperties": False}
    wide = {"type": "object", "properties": {f"p{i}": {"const": i} for i in range(200_000)}}
    for schema in (deep, wide):
        found = portability.problems(schema, portability.FORMAT_RULES["gemini"])
        assert len(found) == portability.MAX_PER_RULE + 1
        assert found[-1][1].startswith("and ") and found[-1][1].endswith(" more like it")


# -- the bench's face, over stdio ---------------------------------------------------------------
GEO = [sys.executable, "-m", "toolbench.demo.geo"]


@pytest.mark.slow
def test_bench_tool_specs_of_the_geo_demo_in_every_format() -> None:
    box = tb.ToolBox()

    @box.tool(server="files", name="read.file")
    def read_file(path: str) -> str:
        """Read a file."""
        return path

    with tb.Bench() as bench:
        bench.connect("geo", GEO)
        bench.add(box)
        every = bench.tool_specs()
        assert sorted(every.names.values()) == sorted(bench.pegboard.list_all_tools())
        dotted = next(n for n, p in every.names.items() if p == "files-read.file")
        assert OPENAI.fullmatch(dotted) and dotted != "files-read.file"
        assert bench.call(every.pegboard_name(dotted), path="x.txt").text == "x.txt"
        geo = bench.tool_specs("anthropic", servers="geo")
        assert {t["name"] for t in geo} == {f"geo-{t}" for t in (
            "distance", "city", "cities", "nearest", "world_map")}
        assert all(t["input_schema"]["type"] == "object" for t in geo)
        assert geo.warnings == []
        one = bench.tool_specs("gemini", tools=["distance"])
        assert [t["name"] for t in one] == ["geo-distance"]
        catalog = bench.catalog(server="geo").set_index("name")
        assert one[0]["parameters"] == catalog.loc["geo-distance", "input_schema"]
        mcp = bench.tool_specs("mcp", tools="geo-distance")
        assert mcp[0]["name"] == "geo-distance" and mcp[0]["title"] == catalog.loc[
            "geo-distance", "title"]
        with pytest.raises(ValueError, match="servers: 'nope' is not on the bench"):
            bench.tool_specs(servers="nope")
        with pytest.raises(ValueError, match="format 'claude' is not one of"):
            bench.tool_specs("claude")


@pytest.mark.slow
def test_specs_never_carry_a_servers_secret() -> None:
    secret = "Zq7SecretToolName"
    server = str(Path(__file__).parent / "servers" / "secret_named_server.py")
    with tb.Bench() as bench:
        bench.connect("s", [sys.executable, server], env={"TOOLBENCH_TEST_SECRET": secret})
        (real,) = bench.pegboard.list_all_tools()
        assert secret in real
        for format in FORMATS:
            specs = bench.tool_specs(format)
            sent = json.dumps(list(specs))
            assert secret not in sent and secret not in repr(specs)
            assert secret not in " ".join(specs.warnings)
            (offered,) = specs.names
            assert "[redacted]" in offered or "_redacted_" in offered
            assert specs.pegboard_name(offered) == real  # still reaches the tool
        specs = bench.tool_specs()
        (offered,) = specs.names
        assert OPENAI.fullmatch(offered)
        assert bench.call(specs.pegboard_name(offered), i=7).structured == {"i": 7}


def test_secrets_are_hidden_in_every_string_a_spec_copies_however_deep() -> None:
    from types import SimpleNamespace

    from toolbench._bench.models.specs import secret_free_specs
    from toolbench._core.redact import Redactor

    secret = "Zq7Secret0123"
    deep: dict[str, Any] = {"type": "string", "description": f"key {secret}"}
    for _ in range(3_000):
        deep = {"type": "object", "properties": {f"p-{secret}": deep}}
    tool = ToolSpec(f"get-{secret}", f"Uses {secret}.", deep, title=f"T {secret}",
                    meta={"note": [secret]}, output_schema={"enum": [secret]})
    redactors = {"s": Redactor([secret])}
    servers = SimpleNamespace(redactor=redactors.get)
    pegboard = SimpleNamespace(entry=lambda name: SimpleNamespace(server="s"))
    for format in FORMATS:
        specs = secret_free_specs(servers, pegboard, [(f"s-get-{secret}", tool)],  # type: ignore[arg-type]
                                  format)
        seen, stack = 0, [specs.tools, specs.warnings]
        while stack:
            value = stack.pop()
            if isinstance(value, dict):
                stack.extend(value.keys())
                stack.extend(value.values())
            elif isinstance(value, list):
                stack.extend(value)
            elif isinstance(value, str):
                seen += 1
                assert secret not in value
        assert seen > 6_000  # every level's key and type were looked at
        assert list(specs.names.values()) == [f"s-get-{secret}"]  # the way back is kept


@pytest.mark.slow
def test_third_party_servers_specs_over_stdio() -> None:
    """Real catalogs: Python servers (pydantic schemas) are clean for every provider; the npm
    ``server-everything`` (zod schemas, with ``$schema``) is warned of for Gemini only."""
    from servers import everything

    scripts = Path(sys.executable).parent
    with tb.Bench(connect_timeout=60) as bench:
        bench.connect("time", [str(scripts / "mcp-server-time"), "--local-timezone", "UTC"])
        bench.connect("git", [str(scripts / "mcp-server-git")])
        if everything.node_missing() is None:
            bench.connect("everything", everything.stdio_command())
        for format in FORMATS:
            specs = bench.tool_specs(format)
            assert all(offered == real for offered, real in specs.names.items())  # legal as-is
            assert len(specs) >= 14 and {"time-get_current_time", "git-git_status"} <= set(
                specs.names)
            if format != "gemini":
                assert specs.warnings == [], specs.warnings
        gemini = bench.tool_specs("gemini")
        assert not [w for w in gemini.warnings if not w.startswith("everything-")]
        if everything.node_missing() is None:
            assert "everything-echo: '$schema' at inputSchema (gemini-unsupported-keyword)" in (
                gemini.warnings)
