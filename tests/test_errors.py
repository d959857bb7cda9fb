from __future__ import annotations

import pickle

import pytest

import toolbench as tb
from toolbench import Disposition, ToolId


@pytest.mark.parametrize(("cls", "disposition"), [
    (tb.Unreachable, Disposition.DID_NOT_HAPPEN),
    (tb.Refused, Disposition.DID_NOT_HAPPEN),
    (tb.TimedOut, Disposition.IN_DOUBT),
    (tb.ToolFailed, Disposition.LANDED),
    (tb.Malformed, Disposition.LANDED),
])
def test_error_table(cls: type[tb.ToolError], disposition: Disposition) -> None:
    tid = ToolId("s", "t")
    err = cls("what happened", tool=tid)
    assert isinstance(err, tb.ToolError) and isinstance(err, Exception)
    assert err.disposition is disposition
    assert err.tool == tid and err.detail == "what happened"
    assert str(err) == "s/t: what happened"
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls and again.tool == tid and again.detail == err.detail


def test_disposition_values() -> None:
    assert [d.value for d in Disposition] == ["did_not_happen", "in_doubt", "landed"]
    assert str(Disposition.IN_DOUBT) == "in_doubt"


def test_tool_failed_carries_result() -> None:
    result = tb.Result([{"type": "text", "text": "boom"}], is_error=True)
    err = tb.ToolFailed("boom", result=result)
    assert err.result is result and str(err) == "boom"


def test_name_collision_is_not_a_tool_error() -> None:
    err = tb.NameCollision(["b", "a", "a"])
    assert isinstance(err, ValueError) and not isinstance(err, tb.ToolError)
    assert err.names == ["a", "b"]
    assert "'a', 'b'" in str(err) and "nothing was registered" in str(err)


def test_module_docstring_draws_the_tree() -> None:
    import toolbench._core.errors as errors

    doc = errors.__doc__ or ""
    for name in ["ToolError", "Unreachable", "Refused", "TimedOut", "ToolFailed", "Malformed"]:
        assert name in doc
