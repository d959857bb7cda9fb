"""Arguments are checked once, before anything is sent: a JSON object of JSON values.

What is refused is ``Refused`` (``did_not_happen``) with the path and the rule; what passes is
a ``CheckedArguments`` copy (tests/test_fast_path.py counts the walks of a real call).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

import toolbench as tb
from toolbench._core.arguments import check_arguments

TID = tb.ToolId("s", "t")


@pytest.mark.parametrize("bad", [[1, 2], "x", 3, ("a",)])
def test_non_object_arguments_are_refused(bad: object) -> None:
    with pytest.raises(tb.Refused, match="must be an object"):
        check_arguments(TID, bad)


def test_argument_keys_must_be_strings() -> None:
    with pytest.raises(tb.Refused, match="strings"):
        check_arguments(None, {1: 2})
    assert check_arguments(None, None) == {}


UNSENDABLE: list[tuple[dict[str, Any], str]] = [
    ({"x": math.nan}, r"argument 'x': NaN is not a JSON number"),
    ({"x": {"y": [1, math.inf]}}, r"argument 'x/y/1': inf is not a JSON number"),
    ({"x": [-math.inf]}, r"argument 'x/0': -inf is not a JSON number"),
    ({"x": "ok\ud83d"}, r"argument 'x': the string holds a lone surrogate \(U\+D83D\)"),
    ({"x": {"k\udc00": 1}}, r"argument 'x/k\\udc00': the key holds a lone surrogate"),
    ({"x\udc00": 1}, r"argument 'x\\udc00': the key holds a lone surrogate \(U\+DC00\)"),
    ({"x": {1: "a"}}, r"argument 'x/1': an object key must be a string, not int 1"),
    ({"x": object()}, r"argument 'x': object is not JSON"),
    ({"x": [b"raw"]}, r"argument 'x/0': bytes is not JSON"),
    ({"x": {1.5, 2.5}}, r"argument 'x': set is not JSON"),
]


@pytest.mark.parametrize(("arguments", "message"), UNSENDABLE)
def test_unsendable_arguments_are_refused_with_path_and_rule(
    arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(tb.Refused, match=message) as info:
        check_arguments(TID, arguments)
    assert info.value.disposition is tb.Disposition.DID_NOT_HAPPEN
    assert "nothing was sent" in info.value.detail


def test_deep_or_self_containing_arguments_are_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    deep: list[Any] = []
    cur = deep
    for _ in range(300):
        cur.append([])
        cur = cur[0]
    for value in (loop, deep):
        with pytest.raises(tb.Refused, match="nested deeper than 200 levels"):
            check_arguments(TID, {"x": value})
    fine: list[Any] = []
    cur = fine
    for _ in range(150):
        cur.append([])
        cur = cur[0]
    assert check_arguments(TID, {"x": fine}) == {"x": fine}


def test_json_values_of_subclassed_types_pass() -> None:
    import collections
    import enum

    class Mode(enum.StrEnum):
        FAST = "fast"

    args = {"m": Mode.FAST, "o": collections.OrderedDict(a=1), "t": (1, "😀"), "n": None,
            "b": True, "f": 1.5, "s": "é\U0001f600"}
    assert check_arguments(TID, args) == args
