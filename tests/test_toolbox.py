from __future__ import annotations

from typing import Annotated

import anyio
import pytest
from pydantic import Field

import toolbench as tb
from toolbench import ToolId

ran: list[str] = []


@tb.tool(server="ledger")
def add(a: int, b: int = 2) -> int:
    """Add two integers.

    The second one defaults to two.
    """
    ran.append("add")
    return a + b


@tb.tool(server="ledger", name="read", description="Read an entry.")
async def read_entry(key: str, tags: list[str] | None = None) -> dict[str, object]:
    ran.append("read")
    return {"key": key, "tags": tags or []}


@tb.tool(server="other")
def explode(reason: str) -> str:
    raise RuntimeError(reason)


@tb.tool(server="other")
def bad_return() -> object:
    return {"x": object()}


def call(box: tb.ToolBox, server: str, name: str, args: object) -> tb.Result:
    async def main() -> tb.Result:
        return await box.call(ToolId(server, name), args)  # type: ignore[arg-type]

    return anyio.run(main)


def test_schema_from_hints_and_description_from_docstring() -> None:
    box = tb.ToolBox(add, read_entry, explode)
    assert box.servers() == ["ledger", "other"]
    specs = anyio.run(box.list_tools, "ledger")
    by_name = {s.name: s for s in specs}
    assert set(by_name) == {"add", "read"}
    schema = by_name["add"].input_schema
    assert schema["properties"]["a"]["type"] == "integer"
    assert schema["properties"]["b"]["default"] == 2
    assert schema["required"] == ["a"]
    assert by_name["add"].description.startswith("Add two integers.")
    assert "defaults to two" in by_name["add"].description
    assert by_name["read"].description == "Read an entry."
    assert by_name["read"].input_schema["properties"]["tags"]["anyOf"][0]["type"] == "array"


def test_sync_and_async_bodies_run() -> None:
    box = tb.ToolBox(add, read_entry)
    r = call(box, "ledger", "add", {"a": 40})
    assert r.structured == {"result": 42} and r.tool == ToolId("ledger", "add")
    assert r.latency_s is not None and r.latency_s >= 0
    r = call(box, "ledger", "read", {"key": "k", "tags": ["x"]})
    assert r.structured == {"key": "k", "tags": ["x"]}


@pytest.mark.parametrize(("args", "field"), [
    ({"a": "not a number"}, "a"),
    ({}, "a"),
    ({"a": 1, "zzz": 2}, "zzz"),
])
def test_validation_failure_is_refused_and_body_never_runs(args: dict[str, object],
                                                            field: str) -> None:
    box = tb.ToolBox(add)
    ran.clear()
    with pytest.raises(tb.Refused) as info:
        call(box, "ledger", "add", args)
    assert field in str(info.value)
    assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
    assert ran == []


def test_non_object_arguments_refused() -> None:
    with pytest.raises(tb.Refused, match="must be an object"):
        call(tb.ToolBox(add), "ledger", "add", [1, 2])


def test_body_exception_is_tool_failed() -> None:
    with pytest.raises(tb.ToolFailed, match="RuntimeError: kaboom") as info:
        call(tb.ToolBox(explode), "other", "explode", {"reason": "kaboom"})
    assert info.value.disposition is tb.Disposition.LANDED
    assert isinstance(info.value.__cause__, RuntimeError)


def test_non_json_return_is_malformed() -> None:
    with pytest.raises(tb.Malformed, match="not JSON"):
        call(tb.ToolBox(bad_return), "other", "bad_return", {})


def test_unknown_tool_is_refused_listing_known() -> None:
    with pytest.raises(tb.Refused, match=r"known: \['add'\]"):
        call(tb.ToolBox(add), "ledger", "nope", {})


def test_unknown_server_is_unreachable() -> None:
    with pytest.raises(tb.Unreachable, match="no server 'x'"):
        anyio.run(tb.ToolBox(add).list_tools, "x")


def test_duplicate_id_raises() -> None:
    box = tb.ToolBox(add)
    with pytest.raises(ValueError, match="already"):
        box.add(add)

    @tb.tool(server="ledger", name="add")
    def add_again(a: int) -> int:
        return a

    with pytest.raises(ValueError, match="ledger/add"):
        box.add(add_again)
    assert len(box) == 1


def test_box_tool_decorator_and_undecorated_function() -> None:
    box = tb.ToolBox()

    @box.tool(server="s", name="twice")
    def double(x: float) -> float:
        return x * 2

    assert ToolId("s", "twice") in box and double(2) == 4
    with pytest.raises(TypeError, match="decorate it"):
        box.add(lambda: 1)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"server": "bad server"}, "server name"),
    ({"server": "s", "name": "bad/name"}, "tool name"),
])
def test_bad_names_raise_at_decoration(kwargs: dict[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        tb.tool(**kwargs)(lambda x: x)


def test_var_args_are_rejected() -> None:
    def f(*args: int) -> int:
        return 0

    with pytest.raises(TypeError, match=r"\*args"):
        tb.tool(server="s")(f)


def test_destination_is_local() -> None:
    assert tb.ToolBox(add).destination(ToolId("ledger", "add")) is tb.Destination.LOCAL


def test_annotated_constraints_reach_schema_and_validation() -> None:
    @tb.tool(server="units")
    def convert(value: Annotated[float, Field(ge=0, description="a length")]) -> float:
        return value * 2

    box = tb.ToolBox(convert)
    [spec] = anyio.run(box.list_tools, "units")
    assert spec.input_schema["properties"]["value"]["minimum"] == 0
    assert spec.input_schema["properties"]["value"]["description"] == "a length"
    with pytest.raises(tb.Refused, match="greater than or equal to 0"):
        call(box, "units", "convert", {"value": -1})
