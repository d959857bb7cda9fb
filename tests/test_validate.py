"""The validation module against hostile schemas: no I/O, no stall, no foreign exception.

Every hostile schema is served by a real in-process low-level MCP server and called through
a real Bench; a real HTTP server on 127.0.0.1 counts every request, so "nothing is fetched"
is observed, not assumed.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.server import Server
from test_arguments import UNSENDABLE

import toolbench as tb
from toolbench._core.schema import preload as _preload
from toolbench._core.schema import validate as _validate
from toolbench._core.schema.validate import field_errors, schema_problems, validate_arguments
from toolbench._notebook.ask.form import FormError, build_form

TID = tb.ToolId("s", "t")


@pytest.fixture(autouse=True, scope="module")
def warm_validation() -> None:
    """Import jsonschema (seconds, with its format extras) before any timed step; the bench
    does the same in the background when it starts."""
    assert schema_problems({"type": "object", "properties": {"a": {"pattern": "^a"}}},
                           check_metaschema=True) == []


# -- fixtures: servers that count ------------------------------------------------------------
class Counter:
    def __init__(self) -> None:
        self.requests: list[str] = []
        self.url = ""


@pytest.fixture
def http_counter() -> Iterator[Counter]:
    """A real HTTP server that would hand out a schema, and counts every request for one."""
    counter = Counter()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            counter.requests.append(self.path)
            body = json.dumps({"type": "string"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    counter.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield counter
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def silent_port() -> Iterator[tuple[int, list[socket.socket]]]:
    """A port that accepts connections and never answers; the accepted sockets are kept."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        listener.close()


def hostile_server(schemas: dict[str, dict[str, Any]]) -> tuple[Server[Any], list[Any]]:
    """A low-level server whose tools declare exactly ``schemas`` and echo their arguments."""
    calls: list[Any] = []

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=name, input_schema=schema) for name, schema in schemas.items()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        calls.append((params.name, dict(params.arguments or {})))
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(params.arguments, sort_keys=True))])

    return Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool), calls


def remote_schemas(base: str, fifo: Path, missing: Path) -> dict[str, dict[str, Any]]:
    return {
        "root_ref": {"type": "object", "$ref": f"{base}/root.json"},
        "field_ref": {"type": "object", "properties": {"a": {"$ref": f"{base}/a.json"}}},
        "dynamic": {"type": "object", "properties": {"a": {"$dynamicRef": f"{base}/d.json"}}},
        "relative": {"type": "object", "properties": {"a": {"$ref": "a.json"}}},
        "id_relative": {"$id": f"{base}/base.json", "type": "object",
                        "properties": {"a": {"$ref": "other.json"}}},
        "fifo": {"type": "object", "properties": {"a": {"$ref": fifo.as_uri()}}},
        "missing": {"type": "object", "properties": {"a": {"$ref": missing.as_uri()}}},
    }


# -- no I/O ----------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("egress", [None, ["example.org"]])
def test_remote_and_file_refs_are_never_fetched_and_the_tool_stays_callable(
    http_counter: Counter, tmp_path: Path, egress: list[str] | None
) -> None:
    fifo = tmp_path / "schema.fifo"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes: never
    schemas = remote_schemas(http_counter.url, fifo, tmp_path / "nowhere.json")
    server, calls = hostile_server(schemas)
    with tb.Bench(egress=egress, timeout=20) as bench:
        bench.connect("h", server)
        for name in schemas:
            result = bench.call(f"h-{name}", {"a": 5})
            assert json.loads(result.text) == {"a": 5}  # sent: the server judges
            spec = bench.pegboard.entry(f"h-{name}").spec
            assert spec is not None
            problems = schema_problems(spec.input_schema)
            assert len(problems) == 1 and "not checked locally" in problems[0], problems
            assert "refers outside itself" in problems[0]
        assert [c[0] for c in calls] == list(schemas)
        catalog = bench.catalog()
        assert sorted(catalog["name"]) == sorted(f"h-{n}" for n in schemas)
        for name in schemas:  # the form the explorer would build fetches nothing either
            form = build_form(schemas[name])
            if "a" in form.fields:
                form["a"].value = "5"
            form.values()
            assert "No such file" not in problems[0] and "Errno" not in problems[0]
    assert http_counter.requests == []


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_ref_to_a_port_that_never_answers_does_not_hold_the_call(
    silent_port: tuple[int, list[socket.socket]]
) -> None:
    port, accepted = silent_port
    schema = {"type": "object", "properties": {"a": {"$ref": f"http://127.0.0.1:{port}/x"}},
              "required": ["a"]}
    server, calls = hostile_server({"hang": schema})
    with tb.Bench(timeout=5) as bench:
        bench.connect("h", server)
        started = time.monotonic()
        result = bench.call("h-hang", a=1)
        assert time.monotonic() - started < 5
        assert json.loads(result.text) == {"a": 1}
        form = build_form(schema)
        form["a"].value = "1"
        assert form.values() == {"a": 1}
    time.sleep(0.3)  # a connection attempt would have been accepted by now
    assert accepted == [] and len(calls) == 1


def test_the_registry_refuses_retrieval_below_the_survey(http_counter: Counter) -> None:
    """The survey is conservative (it flags a remote ref even inside enum data); the registry
    is the safety net below it: a validator built anyway, whose local pointer leads to that
    remote ref, fetches nothing and reports the check as not done instead of raising."""
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/e/enum/0"}},
              "$defs": {"e": {"enum": [{"$ref": f"{http_counter.url}/in-data"}]}}}
    assert any("refers outside itself" in p for p in schema_problems(schema))
    validator, invalid = _validate._build(schema, skip_unevaluated=False)
    assert invalid is None and validator is not None
    forced = _validate._Compiled(schema, validator, built=True)
    strict = _validate._errors(forced, {"a": 1}, strict=True)
    assert isinstance(strict, str) and "Unresolvable" in strict
    assert forced.failure is None  # strict (a Toolset) refuses the one request, no more
    lenient = _validate._errors(forced, {"a": 1}, strict=False)
    assert isinstance(lenient, str) and lenient == forced.failure
    assert lenient.startswith("not checked locally: the check failed: ")
    assert http_counter.requests == []


# -- no stall --------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_catastrophic_pattern_is_linear_and_the_loop_stays_responsive() -> None:
    evil = {"type": "object", "properties": {"s": {"type": "string", "pattern": "(a+)+$"}},
            "required": ["s"]}
    server, calls = hostile_server({"evil": evil})
    fine, _ = hostile_server({"fine": {"type": "object"}})
    with tb.Bench(timeout=20) as bench:
        bench.connect("h", server)
        bench.connect("g", fine)
        assert schema_problems(evil, check_metaschema=True) == []  # built now, not timed
        started = time.monotonic()
        with pytest.raises(tb.Refused) as info:
            bench.call("h-evil", s="a" * 28 + "b")
        assert time.monotonic() - started < 1.0
        assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
        assert "field 's'" in info.value.detail and "rule: pattern" in info.value.detail
        assert bench.call("h-evil", s="aaa").text == '{"s": "aaa"}'

        stop = threading.Event()
        hammered: list[int] = []

        def hammer() -> None:
            while not stop.is_set():
                with pytest.raises(tb.Refused):
                    bench.call("h-evil", s="a" * 40 + "b")
                hammered.append(1)

        thread = threading.Thread(target=hammer, daemon=True)
        thread.start()
        try:
            latencies = []
            for i in range(20):
                t0 = time.monotonic()
                assert bench.call("g-fine", i=i).text == json.dumps({"i": i})
                latencies.append(time.monotonic() - t0)
        finally:
            stop.set()
            thread.join(10)
        assert hammered, "the hostile calls ran alongside"
        assert max(latencies) < 1.0, latencies
    assert calls == [("evil", {"s": "aaa"})]


@pytest.mark.timeout(60)
def test_root_schema_declaration_does_not_bring_back_backtracking() -> None:
    """A root ``$schema`` (zod writes draft-07) and a ``$ref`` to the root would switch a
    plain jsonschema validator back to its stock class, with ``re``."""
    for draft in ("http://json-schema.org/draft-07/schema#",
                  "https://json-schema.org/draft/2020-12/schema",
                  "http://json-schema.org/draft-04/schema#"):
        schema = {"$schema": draft, "type": "object",
                  "properties": {"s": {"type": "string", "pattern": "(a+)+$"},
                                 "t": {"$ref": "#/properties/s"},
                                 "again": {"$ref": "#"}}}
        assert schema_problems(schema) == []
        _preload.start().result(timeout=120)  # jsonschema's first import is not timed
        started = time.monotonic()
        with pytest.raises(tb.Refused, match="field 'again/t'"):
            validate_arguments(TID, schema, {"again": {"t": "a" * 30 + "b"}})
        assert time.monotonic() - started < 1.0


def test_patterns_in_property_names_use_re2() -> None:
    schema = {"type": "object",
              "patternProperties": {"^(a+)+$": {"type": "integer"}},
              "additionalProperties": False,
              "propertyNames": {"pattern": "^(x+x+)+y$|^a"}}
    _preload.start().result(timeout=120)  # jsonschema's first import is not timed
    started = time.monotonic()
    assert field_errors(schema, {"aaa": 1}) == {}
    assert field_errors(schema, {"aaa": "x"}) == {"aaa": "'x' is not of type 'integer'"}
    errors = field_errors(schema, {"a" * 30 + "!": 1})
    assert list(errors) == ["(arguments)"]
    assert "does not match any of the regexes" in errors["(arguments)"]
    assert time.monotonic() - started < 1.0


def test_exponential_local_refs_are_stopped_by_the_budget() -> None:
    defs: dict[str, Any] = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"},
                                                {"$ref": f"#/$defs/d{i + 1}"}]}
                            for i in range(30)}
    defs["d30"] = {"type": "string"}
    schema = {"type": "object", "$defs": defs, "properties": {"a": {"$ref": "#/$defs/d0"}}}
    assert schema_problems(schema) == []
    # 2**30 paths: not checked, and it says so. Steps are exact and mark the schema at once;
    # running out of time (which a busy machine can cause) marks it on the SLOW_CHECKS-th call.
    _preload.start().result(timeout=120)  # jsonschema's first import is not timed
    for _ in range(_validate.SLOW_CHECKS):
        started = time.monotonic()
        validate_arguments(TID, schema, {"a": 1})
        assert time.monotonic() - started < 3 * _validate.MAX_CHECK_SECONDS + 1.0
        assert "not checked locally" in " ".join(schema_problems(schema))
    problems = schema_problems(schema)
    assert len(problems) == 1 and f"{_validate.MAX_STEPS:,} steps" in problems[0]
    assert _validate._entry(schema).failure is not None  # skipped straight away from now on
    started = time.monotonic()
    validate_arguments(TID, schema, {"a": 1})
    assert time.monotonic() - started < 1.0  # a hang bound: a check would run its budget
    with pytest.raises(tb.Refused, match="could not be checked against the input schema"):
        validate_arguments(TID, schema, {"a": 1}, strict=True)


# -- recursion and other failures of the validator itself ----------------------------------
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_recursive_ref_goes_to_the_server_and_says_why() -> None:
    cycle = {"type": "object", "$ref": "#/$defs/x",
             "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"$ref": "#/$defs/x"}}}
    itself = {"type": "object", "$ref": "#"}
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}},
                                             "n": {"type": "integer"}}}
    server, calls = hostile_server({"cycle": cycle, "itself": itself, "tree": tree})
    with tb.Bench(timeout=20) as bench:
        bench.connect("h", server)
        for name in ("cycle", "itself"):
            assert json.loads(bench.call(f"h-{name}", a=1).text) == {"a": 1}
            spec = bench.pegboard.entry(f"h-{name}").spec
            assert spec is not None
            # The cycle ends the check either way: Python's recursion limit, or (on a busy
            # machine, where ~1,000 nested frames take longer) the check's time budget.
            why = " ".join(schema_problems(spec.input_schema))
            assert "recursed without end" in why or f"{_validate.MAX_CHECK_SECONDS} s" in why
        # a recursive schema that is fine stays checked, to any depth the arguments have
        with pytest.raises(tb.Refused, match="field 'kids/0/kids/0/n'"):
            bench.call("h-tree", kids=[{"kids": [{"n": "x"}]}])
        fine = bench.call("h-tree", kids=[{"kids": [{"n": 1}]}])
        assert json.loads(fine.text) == {"kids": [{"kids": [{"n": 1}]}]}
        catalog = bench.catalog()
        assert len(catalog) == 3
        form = build_form(cycle)  # the form's own resolver stops on the cycle too
        assert form.values() == {}
    assert [c[0] for c in calls] == ["cycle", "itself", "tree"]


def test_validator_failures_never_raise_foreign_exceptions() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}},
              "patternProperties": {"^k": {"type": "string", "minLength": 2}}}
    odd = {"s": "\ud800", "k\udc00": "x"}  # re2 cannot encode a lone surrogate
    validate_arguments(TID, schema, odd)  # not matched locally, not raised
    assert field_errors(schema, odd) == {}
    weird = [None, 7, "x", [1], {"type": 5}, {"$schema": {"x": 1}}, {"$schema": "nope"},
             {"properties": {"a": {"type": "integer", "minimum": "x"}}},
             {"type": "object", "required": "a"}, {"$schema": "http://json-schema.org/schema#"}]
    for schema_ in weird:
        validate_arguments(TID, schema_, {"a": 1})
        assert isinstance(schema_problems(schema_), list)
        assert isinstance(field_errors(schema_, {"a": 1}), dict)


# -- patterns re2 cannot compile, limits, texts ---------------------------------------------
def test_schema_problems_texts() -> None:
    deep: dict[str, Any] = {"type": "object"}
    cur = deep
    for _ in range(_validate.MAX_DEPTH + 1):
        cur["properties"] = {"x": {"type": "object"}}
        cur = cur["properties"]["x"]
    wide = {"type": "object",
            "properties": {f"p{i}": {"type": "string"} for i in range(_validate.MAX_NODES)}}
    long = {"type": "object", "description": "x" * (_validate.MAX_TEXT + 1)}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"type": "object", "$ref": "http://example.org/s.json"},
         "not checked locally: it refers outside itself ($ref 'http://example.org/s.json'); "
         "only '#...' references are followed and nothing is fetched"),
        ({"type": "object", "properties": {"a": {"$ref": "file:///etc/passwd"},
                                           "b": {"$ref": "b.json"}}},
         "not checked locally: it refers outside itself ($ref 'file:///etc/passwd' and 1 "
         "more); only '#...' references are followed and nothing is fetched"),
        ({"type": "object", "properties": {"p": {"type": "string", "pattern": "^(?=.*\\d)"}}},
         "pattern '^(?=.*\\\\d)' is not checked locally: re2 cannot compile it (invalid perl "
         "operator: (?=)"),
        ({"type": "object", "patternProperties": {"(a)\\1": {}}},
         "pattern '(a)\\\\1' is not checked locally: re2 cannot compile it (invalid escape "
         "sequence: \\1)"),
        ({"type": "object", "patternProperties": {"^x": {}}, "unevaluatedProperties": False},
         "unevaluatedProperties is not checked locally: the schema also uses "
         "patternProperties"),
        (deep, f"not checked locally: the schema is nested deeper than {_validate.MAX_DEPTH} "
               "levels"),
        (wide, f"not checked locally: the schema has more than {_validate.MAX_NODES:,} values"),
        (long, f"not checked locally: the schema holds more than {_validate.MAX_TEXT:,} "
               "characters"),
        ({"type": "object", "properties": {"a": {"type": "integer", "minimum": "x"}}},
         "not checked locally: the schema itself is invalid at properties/a/minimum: 'x' is "
         "not of type 'number'"),
        ({"type": "object", "properties": {"a": {"$schema": "http://json-schema.org/schema#"}}},
         "not checked locally: a subschema declares its own $schema "
         "'http://json-schema.org/schema#'"),
        ({"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"},
         "not checked locally: $schema 'http://json-schema.org/draft-03/schema#' (draft 3) "
         "is not supported"),
    ]
    for schema, text in cases:
        assert schema_problems(schema, check_metaschema=True) == [text]
        assert schema_problems(schema) is not schema_problems(schema)  # a copy each time
    assert schema_problems({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}},
                            "$defs": {"a": {"type": "string", "pattern": "^[a-z]+$"}}}) == []
    assert schema_problems(None) == [] and schema_problems({}) == []


def test_the_metaschema_check_waits_for_the_first_check_of_arguments() -> None:
    """A catalog asks about every tool: the bounded walk answers at once, the ~2 ms check
    against the metaschema waits until the tool is first used (or is asked for)."""
    # Unique content: equal schemas share one cache entry, and another test may have
    # checked this shape already.
    broken = {"type": "object", "description": uuid.uuid4().hex,
              "properties": {"a": {"type": "integer", "minimum": "x"}}}
    assert schema_problems(broken) == []
    assert _validate._cache[id(broken)][1].validator is None  # nothing built yet
    validate_arguments(TID, broken, {"a": 1})  # the server judges
    assert schema_problems(broken) == [
        "not checked locally: the schema itself is invalid at properties/a/minimum: 'x' is "
        "not of type 'number'"]
    typical = {"type": "object", "properties": {f"p{i}": {"type": "string", "maxLength": 9}
                                                for i in range(20)}}
    for _ in range(20):  # the bounded walk only: no validator and no metaschema check yet
        copy = json.loads(json.dumps(typical))
        assert schema_problems(copy) == []
        assert not _validate._cache[id(copy)][1].built


def test_a_pattern_re2_cannot_compile_skips_only_that_keyword(
    capfd: pytest.CaptureFixture[str],
) -> None:
    schema = {"type": "object",
              "properties": {"pw": {"type": "string", "pattern": "^(?=.*[0-9]).{4,}$",
                                    "maxLength": 8}}}
    assert len(schema_problems(schema)) == 1
    validate_arguments(TID, schema, {"pw": "nodigits"})  # the lookahead is the server's job
    with pytest.raises(tb.Refused, match=r"field 'pw'.*rule: maxLength=8"):
        validate_arguments(TID, schema, {"pw": "far too long"})
    assert capfd.readouterr().err == ""  # re2's absl log stays quiet


def test_a_schema_is_compiled_once_and_the_cache_holds_it() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer", "maximum": 77}}}
    validate_arguments(TID, schema, {"a": 1})
    held, entry = _validate._cache[id(schema)]
    assert held is schema and entry.schema is schema
    validator = entry.validator
    assert validator is not None
    validate_arguments(TID, schema, {"a": 2})
    assert schema_problems(schema) == []
    assert _validate._cache[id(schema)][1] is entry
    # An equal schema in a new object (what a re-list after tools/list_changed brings)
    # reuses the compiled validator instead of rebuilding it on the shared loop.
    twin = json.loads(json.dumps(schema))
    with pytest.raises(tb.Refused, match="field 'a'"):
        validate_arguments(TID, twin, {"a": "x"})
    held, shared = _validate._cache[id(twin)]
    assert held is twin and shared is entry and shared.validator is validator
    different = {"type": "object", "properties": {"a": {"type": "integer", "maximum": 78}}}
    validate_arguments(TID, different, {"a": 78})
    assert _validate._cache[id(different)][1] is not entry


def test_field_errors_key_fields_and_the_whole() -> None:
    schema = {"type": "object", "required": ["a", "b"], "additionalProperties": False,
              "properties": {"a": {"type": "integer", "minimum": 3}, "b": {},
                             "l": {"type": "array", "items": {"type": "string"}}}}
    assert field_errors(schema, {"a": 1, "l": ["x", 2], "z": 0}) == {
        "a": "1 is less than the minimum of 3",
        "l": "1: 2 is not of type 'string'",
        "b": "required: enter a value",
        "(arguments)": "Additional properties are not allowed ('z' was unexpected)",
    }
    assert field_errors(schema, {"a": 3, "b": 0}) == {}


# -- check_arguments (tests/test_arguments.py), through a real bench ------------------------
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_unsendable_arguments_through_a_bench_are_did_not_happen_and_never_sent() -> None:
    server, calls = hostile_server({"echo": {"type": "object"}})
    cases = [arguments for arguments, _ in UNSENDABLE if all(k.isascii() for k in arguments)]
    with tb.Bench(timeout=20) as bench:
        bench.connect("h", server)
        for arguments in cases:
            with pytest.raises(tb.Refused, match="nothing was sent") as info:
                bench.call("h-echo", arguments)
            assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
        records = bench.records
        assert len(records) == len(cases) == len(UNSENDABLE) - 1
        assert set(records["disposition"]) == {"did_not_happen"}
        assert set(records["error_type"]) == {"Refused"}
        assert bench.call("h-echo", x=1.5).text == '{"x": 1.5}'
    assert calls == [("echo", {"x": 1.5})]


# -- forms -----------------------------------------------------------------------------------
def test_form_of_a_hostile_schema_makes_no_request_and_checks_locally_what_it_can(
    http_counter: Counter, tmp_path: Path
) -> None:
    hostile = {"type": "object", "required": ["s"],
               "properties": {"s": {"type": "string", "pattern": "(a+)+$"},
                              "r": {"$ref": f"{http_counter.url}/r.json"},
                              "p": {"$ref": "#/$defs/a~1b"}},
               "$defs": {"a/b": {"type": "integer", "maximum": 3}}}
    form = build_form(hostile)
    assert form.fields["p"].kind == "integer"  # an escaped local pointer resolves
    form["s"].value = "a" * 30 + "b"
    started = time.monotonic()
    values = form.values()  # the remote ref turns the local check off: the server judges
    assert time.monotonic() - started < 1.0
    assert values == {"s": "a" * 30 + "b"}
    local_only = {k: v for k, v in hostile.items()}
    local_only["properties"] = {k: v for k, v in hostile["properties"].items() if k != "r"}
    form = build_form(local_only)
    form["s"].value = "a" * 30 + "b"
    with pytest.raises(FormError) as info:
        form.values()
    assert list(info.value.errors) == ["s"]
    assert http_counter.requests == []


def test_output_checking_uses_the_same_bounds() -> None:
    out = {"type": "object", "required": ["s"],
           "properties": {"s": {"type": "string", "pattern": "(a+)+$"}}}
    _preload.start().result(timeout=120)  # jsonschema's first import is not timed
    started = time.monotonic()
    with pytest.raises(tb.Malformed, match=r"field 's'.*rule: pattern") as info:
        _validate.validate_output(TID, out, {"s": "a" * 40 + "b"})
    assert time.monotonic() - started < 1.0
    assert info.value.disposition is tb.Disposition.LANDED
    with pytest.raises(tb.Malformed, match=r"the result: 's' is a required property"):
        _validate.validate_output(TID, out, {})
    _validate.validate_output(TID, out, {"s": "aaa"})
    _validate.validate_output(TID, {"type": "object", "$ref": "http://127.0.0.1:9/o"}, {"s": 1})
    _validate.validate_output(TID, None, {"s": 1})


def test_one_check_that_runs_out_of_time_does_not_end_local_checks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A harmless schema whose check was slow once (a busy machine) is checked again."""
    schema = {"type": "object", "required": ["n"],
              "properties": {"n": {"type": "integer"},
                             "xs": {"type": "array", "items": {
                                 "type": "object", "properties": {"v": {"type": "integer"}}}}}}
    validate_arguments(TID, schema, {"n": 1})  # built
    _validate._entry(schema).fast = None  # through jsonschema, where the budget is counted
    many = {"n": 1, "xs": [{"v": i} for i in range(100)]}  # 100 steps; clock read every 32
    monkeypatch.setattr(_validate, "MAX_CHECK_SECONDS", -1.0)  # so it has always run out
    for i in range(_validate.SLOW_CHECKS - 1):
        validate_arguments(TID, schema, {**many, "n": "x"})  # unchecked, this call only
        assert f"on {i + 1} of the calls" in " ".join(schema_problems(schema))
    monkeypatch.setattr(_validate, "MAX_CHECK_SECONDS", 0.25)
    with pytest.raises(tb.Refused, match="field 'n'"):
        validate_arguments(TID, schema, {**many, "n": "x"})  # still checked locally
