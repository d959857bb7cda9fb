"""Secrets stay out of what we show (``toolbench/_core/redact.py``): the redactor, URLs, and
the one-line description of an error, exception groups included."""

from __future__ import annotations

import pytest

from toolbench._core.redact import MIN_SECRET_LEN, Redactor, describe, display_url, leaves

SECRET = "tok-Zq7SecretValue"


def test_every_secret_is_replaced_the_longest_first() -> None:
    redact = Redactor(["abcd", "abcdefgh", SECRET])
    assert redact(f"a={SECRET} b=abcdefgh c=abcd") == "a=[redacted] b=[redacted] c=[redacted]"
    assert redact.active


def test_short_values_and_non_strings_are_not_secrets() -> None:
    short = "x" * (MIN_SECRET_LEN - 1)
    redact = Redactor([short, 12345])  # type: ignore[list-item]
    assert not redact.active
    assert redact(f"{short} 12345") == f"{short} 12345"


def test_a_secret_added_later_is_hidden_from_then_on() -> None:
    redact = Redactor(())
    assert redact(SECRET) == SECRET
    redact.add([SECRET])
    assert redact(f"Bearer {SECRET}") == "Bearer [redacted]"
    redact.add([SECRET])  # again: nothing changes
    assert redact(SECRET.upper()) == "[redacted]"  # whatever its case (a host is lowercased)


def test_a_cause_that_would_show_a_secret_is_not_chained() -> None:
    redact = Redactor([SECRET])
    plain = ValueError("nothing to hide")
    assert redact.cause(plain) is plain
    inner = RuntimeError(f"server said {SECRET}")
    group = BaseExceptionGroup("task group", [ValueError("fine"), inner])
    assert redact.cause(group) is None  # found inside the group
    outer = ValueError("fine")
    outer.__cause__ = inner
    assert redact.cause(outer) is None  # found down the chain
    assert Redactor(()).cause(group) is group  # nothing to hide: chained as it is


def test_a_url_is_shown_without_userinfo_or_query_values() -> None:
    shown = display_url(f"https://user:{SECRET}@example.com:8443/mcp?token={SECRET}&x=1#frag")
    assert shown == "https://example.com:8443/mcp?token=...&x=..."
    assert display_url("http://[::1") == "<unparseable url>"


def test_leaves_peel_nested_groups() -> None:
    a, b, c = ValueError("a"), KeyError("b"), OSError("c")
    nested = BaseExceptionGroup("outer", [a, ExceptionGroup("inner", [b, c])])
    assert leaves(nested) == [a, b, c]
    assert leaves(a) == [a]


@pytest.mark.parametrize("limit", [30, 400])
def test_describe_names_up_to_three_leaves_redacted_and_capped(limit: int) -> None:
    group = ExceptionGroup("g", [ValueError(f"bad {SECRET}\nnext line"), KeyError("k"),
                                 OSError(), RuntimeError("fourth")])
    text = describe(group, Redactor([SECRET]), limit)
    assert SECRET not in text and len(text) <= limit
    if limit == 400:
        assert text == "ValueError: bad [redacted] next line; KeyError: 'k'; OSError"
