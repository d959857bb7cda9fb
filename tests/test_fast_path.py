"""The per-call fast paths decide exactly as the slow paths they stand in for.

* ``_validate._fast``: compiled once per schema, it may only ever say "valid" when
  jsonschema agrees (every "no" goes to jsonschema); checked against jsonschema on generated
  schemas and arguments, and it must actually be used for the common flat schemas.
* ``new_call_id``: 32 hex digits, unique in a process and across processes.
* The synchronous hop (``SharedLoop.run``): values, exceptions and cancellation come back as
  ``Future.result()`` reported them.
* The protocol mode: stdio takes the 2025 handshake, and falls back to 2026 when refused.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolbench as tb
from toolbench._bench.journal.record import new_call_id
from toolbench._core.ids import ToolId
from toolbench._core.schema import validate as _validate
from toolbench._core.schema.names import declared
from toolbench._core.schema.validate import field_errors, validate_arguments
from toolbench._loop import get_loop
from toolbench._transports.mcp.client import McpClient

TID = ToolId("s", "t")
_TYPES = ["string", "integer", "number", "boolean", "null", "object", "array"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False)
    | st.sampled_from(["", "a", "ab", "abc", "x"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=8,
)


def _schemas() -> st.SearchStrategy[Any]:
    leaf = st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(_TYPES) | st.lists(st.sampled_from(_TYPES), min_size=1,
                                                   max_size=3, unique=True),
        "minimum": st.integers(-3, 3), "maximum": st.floats(-3, 3),
        "exclusiveMinimum": st.integers(-3, 3), "exclusiveMaximum": st.integers(-3, 3),
        "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
        "minItems": st.integers(0, 2), "maxItems": st.integers(0, 2),
        "enum": st.lists(st.sampled_from(["a", "ab", "x"]), min_size=1, max_size=3),
        "const": st.sampled_from(["a", "x"]), "title": st.just("T"), "format": st.just("uri"),
    })
    return st.recursive(leaf, lambda inner: st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["object", "array"]),
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
        "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True),
        "additionalProperties": st.booleans() | inner,
        "items": inner,
    }) | st.just(True), max_leaves=6)


@settings(max_examples=400, deadline=None)
@given(schema=_schemas(), instance=json_values)
def test_the_fast_path_never_accepts_what_jsonschema_refuses(schema: Any,
                                                             instance: Any) -> None:
    if schema is True:
        schema = {}
    fast = _validate._fast(schema)
    valid = jsonschema.Draft202012Validator(schema).is_valid(instance)
    if fast is not None and fast(instance):
        assert valid, (schema, instance)


@settings(max_examples=200, deadline=None)
@given(schema=_schemas(), instance=json_values)
def test_validate_arguments_decides_as_jsonschema_does(schema: Any, instance: Any) -> None:
    if schema is True or not isinstance(instance, dict):
        return
    schema = {**schema, "type": "object"}
    valid = jsonschema.Draft202012Validator(schema).is_valid(instance)
    # Beyond jsonschema, a name the schema does not declare is refused (issue 37, item 1).
    names = declared(schema)
    undeclared = bool(names.unknown(instance)) if names is not None else False
    try:
        validate_arguments(TID, schema, instance)
        refused = False
    except tb.Refused:
        refused = True
    assert refused == (not valid or undeclared), (schema, instance)


def test_flat_schemas_take_the_fast_path_and_errors_read_as_before() -> None:
    schema = {"type": "object", "title": "addArguments", "required": ["a", "b"],
              "properties": {"a": {"type": "integer", "title": "A"},
                             "b": {"type": "integer", "minimum": 0},
                             "unit": {"enum": ["km", "mi"], "default": "km"},
                             "tags": {"type": "array", "items": {"type": "string"}}},
              "additionalProperties": False}
    validate_arguments(TID, schema, {"a": 1, "b": 2, "tags": ["x"]})
    entry = _validate._entry(schema)
    assert entry.fast is not None and entry.fast({"a": 1, "b": 2, "unit": "km"})
    assert not entry.fast({"a": 1, "b": -1})
    with pytest.raises(tb.Refused, match=r"field 'b': -1 is less than the minimum of 0"):
        validate_arguments(TID, schema, {"a": 1, "b": -1})
    with pytest.raises(tb.Refused, match=r"'extra' was unexpected"):
        validate_arguments(TID, schema, {"a": 1, "b": 1, "extra": 1})
    assert field_errors(schema, {"a": "x", "b": 1}) == {"a": "'x' is not of type 'integer'"}
    # 1.0 is an integer to jsonschema: the fast path says "not sure", jsonschema accepts it
    validate_arguments(TID, schema, {"a": 1.0, "b": 2})


def test_schemas_outside_the_fast_subset_have_no_fast_path() -> None:
    for schema, good in (({"type": "object", "properties": {"a": {"pattern": "^x"}}}, "x"),
                         ({"type": "object", "anyOf": [{"required": ["a"]}]}, "x"),
                         ({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}},
                           "$defs": {"a": {"type": "string"}}}, "x"),
                         ({"type": "object", "properties": {"a": {"enum": [1, True]}}}, 1)):
        validate_arguments(TID, schema, {"a": good})
        assert _validate._entry(schema).fast is None


def test_the_fast_path_is_bounded_by_the_step_budget() -> None:
    """Many values through ``items`` stop the fast path at MAX_STEPS; jsonschema's own
    budget then decides (here: not checked locally, and said so)."""
    schema = {"type": "object", "properties": {"xs": {"type": "array",
                                                      "items": {"type": "integer"}}}}
    fast = _validate._fast(schema)
    assert fast is not None
    assert fast({"xs": list(range(_validate.MAX_STEPS))})
    assert not fast({"xs": list(range(_validate.MAX_STEPS + 1))})


@pytest.mark.slow
def test_call_ids_are_32_hex_digits_and_unique_across_processes() -> None:
    ids = [new_call_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        children = pool.map(_ids, [100, 100])
    assert len({*ids, *children[0], *children[1]}) == len(ids) + 200


def _ids(n: int) -> list[str]:
    return [new_call_id() for _ in range(n)]


def test_the_sync_hop_returns_values_and_raises_as_before() -> None:
    loop = get_loop()

    async def value(x: int) -> int:
        await anyio.sleep(0)
        return x + 1

    async def fails() -> None:
        raise ValueError("from the loop")

    async def cancelled() -> None:
        raise anyio.get_cancelled_exc_class()

    assert loop.run(value, 1) == 2
    with pytest.raises(ValueError, match="from the loop") as info:
        loop.run(fails)
    assert any(frame.name == "fails" for frame in info.traceback)
    with pytest.raises(concurrent.futures.CancelledError):
        loop.run(cancelled)
    assert loop.run(value, 41) == 42


# -- the protocol mode ----------------------------------------------------------------------
SERVERS = Path(__file__).parent / "servers"


@pytest.mark.slow
def test_stdio_prefers_the_2025_handshake_and_auto_is_an_override() -> None:
    server = [sys.executable, str(SERVERS / "echo_server.py")]
    with tb.Bench() as bench:
        bench.connect("fast", server)
        bench.connect("auto", McpClient(server, name="auto", protocol_mode="auto"))
        protocol = dict(zip(bench.servers["name"], bench.servers["protocol"], strict=True))
        assert protocol == {"fast": "2025-11-25", "auto": "2026-07-28"}
        for name in ("fast", "auto"):
            assert bench.call(f"{name}-add", a=2, b=3).structured == {"result": 5}


@pytest.mark.slow
def test_a_server_that_refuses_the_2025_handshake_gets_the_2026_one() -> None:
    with tb.Bench() as bench:
        bench.connect("m", [sys.executable, str(SERVERS / "modern_only_server.py")])
        assert bench.servers.iloc[0]["protocol"] == "2026-07-28"
        assert bench.call("m-echo", text="hi").text == "hi"
        row = bench.connections.row("m")
        assert row is not None and row.connection is not None
        log = row.connection.client.stderr_tail()  # type: ignore[attr-defined]
        assert log.splitlines()[:2] == ["method initialize", "method server/discover"]


def test_protocol_mode_is_checked() -> None:
    with pytest.raises(ValueError, match=r"invalid protocol_mode 'modern'.*'fast', 'auto'"):
        McpClient(["x"], protocol_mode="modern")


def _count_walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the argument walks ``check_arguments`` starts (its top-level ``_plain``)."""
    from toolbench._core import arguments as _arguments

    walks: list[int] = []
    real = _arguments._plain

    def counting(value: Any, depth: int) -> bool:
        if depth == 0:
            walks.append(1)
        return real(value, depth)

    monkeypatch.setattr(_arguments, "_plain", counting)
    return walks


def test_checked_arguments_are_walked_once_and_rechecked_once_changed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from toolbench._core.arguments import CheckedArguments, check_arguments

    walks = _count_walks(monkeypatch)
    original = {"a": 1, "rows": [{"x": "y"}]}
    first = check_arguments(TID, original)
    second = check_arguments(TID, first)
    assert isinstance(second, CheckedArguments) and second == original
    assert second is not first  # each layer still gets its own copy
    assert len(walks) == 1
    for change in (lambda d: d.__setitem__("bad", float("nan")),
                   lambda d: d.update(bad=float("inf")),
                   lambda d: d.setdefault("bad", float("nan"))):
        copy = check_arguments(TID, original)
        change(copy)
        with pytest.raises(tb.Refused, match="bad"):
            check_arguments(TID, copy)
    import pickle

    assert type(pickle.loads(pickle.dumps(first))) is dict  # travels as what it is


@pytest.mark.slow
def test_a_bench_call_walks_its_arguments_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bench, the router and McpClient each check; only the first walks."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("walks")

    @server.tool()
    def echo(rows: list[dict[str, Any]]) -> str:
        return str(len(rows))

    rows = [{"k": i, "s": "text"} for i in range(50)]
    with tb.Bench(timeout=20) as bench:
        bench.connect("w", server)
        walks = _count_walks(monkeypatch)
        assert bench.call("w-echo", rows=rows).text == "50"
        assert len(walks) == 1
        with pytest.raises(tb.Refused, match="NaN"):
            bench.call("w-echo", rows=[{"k": float("nan")}])


@pytest.mark.parametrize("code", [-32020, -32021, -32022])
def test_an_http_server_that_speaks_only_2026_is_reached_in_the_default_mode(code: int) -> None:
    """A 2026-only server answers the 2025 ``initialize`` with HTTP 400 and -32020 (or -32021,
    -32022): the default mode takes that as a refused handshake and connects in the 2026 one,
    so the first call works and ``servers`` shows what was negotiated."""
    from servers.modern_only_http_server import serve_in_thread

    with serve_in_thread(code) as (url, seen), tb.Bench() as bench:
        bench.connect("m", url)
        assert bench.servers.iloc[0]["protocol"] == "2026-07-28"
        assert bench.servers.iloc[0]["status"] == "connected"
        assert bench.call("m-echo", text="hi").text == "hi"
        assert seen[:2] == ["initialize", "server/discover"]
