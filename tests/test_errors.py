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


# -- issue 37, item 17: a tool named after a secret is not shown by the error --------------
def test_hide_redacts_the_tool_and_detail_and_survives_pickling() -> None:
    from toolbench._core.redact import Redactor

    secret = "Zq7HiddenName"
    error = tb.Refused(f"no such thing as get-{secret}", tool=ToolId("s", f"get-{secret}"))
    assert secret in str(error)  # before: the ToolId shows it
    error.hide(Redactor([secret]))
    for text in (str(error), repr(error), str(pickle.loads(pickle.dumps(error)))):
        assert secret not in text and "[redacted]" in text
    assert error.tool == ToolId("s", f"get-{secret}")  # the real id stays for the code


@pytest.mark.slow
def test_a_secret_named_tools_error_does_not_show_the_secret() -> None:
    import sys
    from pathlib import Path

    secret = "Zq7SecretToolName"
    server = str(Path(__file__).parent / "servers" / "secret_named_server.py")
    with tb.Bench() as bench:
        bench.connect("s", [sys.executable, server], env={"TOOLBENCH_TEST_SECRET": secret})
        (name,) = bench.pegboard.list_all_tools()
        with pytest.raises(tb.Refused) as refused:  # fails the schema: i is an integer
            bench.call(name, i="x")
        with pytest.raises(tb.ToolFailed) as failed:  # the server's own refusal
            bench.call(name, {"i": "x"}, check=False)
        for caught in (refused, failed):
            assert secret not in str(caught.value) and secret not in repr(caught.value)
            assert "[redacted]" in str(caught.value)
