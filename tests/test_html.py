"""toolbench._core.html: descriptions as escaped prose (paragraphs, inline code), counts."""

from __future__ import annotations

import pytest

from toolbench._core.html import (
    description_cell,
    description_html,
    inline_code,
    paragraphs,
)

P = "<p style='margin:0 0 0.5em 0'>"


def test_paragraphs_join_hard_wraps_and_drop_docstring_indentation() -> None:
    text = "First line\n    wrapped here.\n\n        Second\n        paragraph.\n\n\n- a\n- b\n"
    assert paragraphs(text) == ["First line wrapped here.", "Second paragraph.", "- a\n- b"]
    assert paragraphs("") == [] and paragraphs("\n \n") == []
    assert paragraphs("one\r\n\r\ntwo") == ["one", "two"]
    assert paragraphs("Steps:\n1. go\n2) stop") == ["Steps:\n1. go\n2) stop"]


@pytest.mark.parametrize(("text", "html"), [
    ("use `x`", "use <code>x</code>"),
    ("``a`b`` and `c`", "<code>a`b</code> and <code>c</code>"),
    ("`` `tick` ``", "<code>`tick`</code>"),
    ("a lone ` stays", "a lone ` stays"),
    ("``unbalanced`", "``unbalanced`"),
    ("`<script>alert(1)</script>`", "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>"),
    ("<b>`x`</b>", "&lt;b&gt;<code>x</code>&lt;/b&gt;"),
    ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
    ("`a\" onmouseover=\"alert(1)`", "<code>a&quot; onmouseover=&quot;alert(1)</code>"),
    ("<code>`</code>`", "&lt;code&gt;<code>&lt;/code&gt;</code>"),
    ("1 < 2 & 3", "1 &lt; 2 &amp; 3"),
])
def test_inline_code_is_escaped_and_anything_else_is_text(text: str, html: str) -> None:
    assert inline_code(text) == html


def test_a_description_in_paragraphs_capped_and_inert() -> None:
    text = ("Ask with ``question``; it\n  returns the reply.\n\n  Needs `sampling`.\n"
            "<script>x</script>")
    assert description_html(text) == (
        f"{P}Ask with <code>question</code>; it returns the reply.</p>"
        f"{P}Needs <code>sampling</code>. &lt;script&gt;x&lt;/script&gt;</p>")
    long = description_html("word " * 10_000, limit=1000)
    assert "(49,999 characters; shortened)" in long and len(long) < 1200
    assert description_html(None) == "" and description_html(" \n\n ") == ""


def test_a_description_cell_is_one_line_with_the_whole_text_in_a_tooltip() -> None:
    text = "Distance between `from_city` and `to_city`.\n\nUses the <haversine> formula " * 3
    cell = description_cell(text, 50)
    assert cell.startswith('<span title="Distance between `from_city` and `to_city`. Uses')
    assert "<code>from_city</code>" in cell and "<haversine>" not in cell
    assert "&lt;haversine&gt;" in cell.split('">', 1)[0]  # escaped in the tooltip too
    assert description_cell("short `x`", 50) == "short <code>x</code>"
