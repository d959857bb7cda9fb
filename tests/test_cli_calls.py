"""``toolbench call`` and ``compare``, in process (tests/test_cli.py runs the command)."""

from __future__ import annotations

import pytest

from toolbench._cli.calls import check_parameters
from toolbench._cli.command import UsageError
from toolbench._core.client import ToolSpec


def test_an_unknown_argument_passes_where_the_schema_admits_any_key() -> None:
    closed = ToolSpec("t", input_schema={"type": "object", "properties": {"a": {}}})
    with pytest.raises(UsageError, match=r"no parameter 'b' \(its parameters: a\)"):
        check_parameters("s-t", {"a": 1, "b": 2}, [closed])
    check_parameters("s-t", {"a": 1}, [closed])
    for schema in ({"additionalProperties": True}, {"additionalProperties": {"type": "string"}},
                   {"patternProperties": {"^x": {}}}):
        spec = ToolSpec("t", input_schema={"type": "object", "properties": {"a": {}}, **schema})
        check_parameters("s-t", {"b": 2}, [spec])
    none = ToolSpec("t", input_schema={"type": "object"})
    with pytest.raises(UsageError, match=r"its parameters: none"):
        check_parameters("s-t", {"b": 2}, [none])
    # compare: a key that one of the compared tools knows is not refused
    other = ToolSpec("t", input_schema={"type": "object", "properties": {"b": {}}})
    check_parameters("t", {"a": 1, "b": 2}, [closed, other])
