"""Where the frame's CSP ``<meta>`` lands (DESIGN.md, "MCP Apps", "The frame"): in ``<head>``,
whatever the server's document starts with, as a real HTML parser (html5lib, which follows
the WHATWG tree construction) builds the tree.

Issue 43 item 1: a document starting with ``"\\u00a0<!DOCTYPE html>"`` or
``"\\x1c<!DOCTYPE html>"`` got its ``<meta>`` after the doctype, where HTML had already opened
``<body>`` for the leading character, and a ``<meta>`` in ``<body>`` is no policy at all.
"""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest

from toolbench._bench.apps.policy import FRAME_BASE, HTML_WHITESPACE, build_policy, framed

html5lib = pytest.importorskip("html5lib")

NS = "{http://www.w3.org/1999/xhtml}"
DOCUMENTS = [
    "<!DOCTYPE html><html><head><title>t</title></head><body><p>x</p></body></html>",
    "<!doctype html>\n<html lang='en'><body><script>fetch('http://127.0.0.1:1/')</script>",
    "<html><head></head><body>x</body></html>",
    "<head><meta charset='utf-8'></head>x",
    "<p>no head at all</p>",
]
CSP = build_policy(None, None).csp


def leading_characters() -> list[str]:
    """Every C0 and C1 control, DEL, every Unicode space (category Zs), every character
    Python's ``\\s`` matches, a few other invisible ones (ZWSP, ZWNJ, word joiner, BOM),
    and HTML's own whitespace."""
    found = {chr(c) for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))}
    found |= {chr(c) for c in range(sys.maxunicode + 1)
              if unicodedata.category(chr(c)) == "Zs" or re.match(r"\s", chr(c))}
    found |= {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e"}
    found |= set(HTML_WHITESPACE)
    return sorted(found)


def parsed(document: str) -> object:
    return html5lib.parse(document, treebuilder="etree", namespaceHTMLElements=True)


def policy_in_head(tree: object) -> bool:
    head = tree.find(f"{NS}head")  # type: ignore[attr-defined]
    metas = [m for m in tree.iter(f"{NS}meta")  # type: ignore[attr-defined]
             if m.get("http-equiv") == "Content-Security-Policy"]
    return (len(metas) == 1 and head is not None and metas[0] in list(head)
            and metas[0].get("content") == CSP)


def test_the_character_set_covers_what_the_red_team_used() -> None:
    chars = leading_characters()
    assert "\u00a0" in chars and "\x1c" in chars and "\u3000" in chars and "\x85" in chars
    assert len(chars) > 60


@pytest.mark.parametrize("document", DOCUMENTS)
def test_no_leading_character_moves_the_policy_out_of_head(document: str) -> None:
    misplaced = []
    for char in leading_characters():
        for repeat in (1, 3):
            prefix = char * repeat
            tree = parsed(framed(prefix + document, CSP))
            if not policy_in_head(tree):
                misplaced.append(f"U+{ord(char):04X} x{repeat}")
    assert misplaced == [], misplaced


@pytest.mark.parametrize("char", ["\u00a0", "\x1c", "\u2028", "\x85", "\u3000"])
def test_a_non_html_space_puts_the_policy_at_offset_0(char: str) -> None:
    document = char + DOCUMENTS[0]
    assert framed(document, CSP).startswith(FRAME_BASE + '<meta http-equiv="Content-Security')


def test_html_whitespace_before_the_doctype_keeps_it_first() -> None:
    """Only TAB, LF, FF, CR and SPACE may precede the doctype, and then the host's head
    goes after it, so the document keeps standards mode."""
    document = "\t\n\f\r " + DOCUMENTS[0]
    out = framed(document, CSP)
    assert out.startswith("\t\n\f\r <!DOCTYPE html>" + FRAME_BASE + "<meta ")
    assert policy_in_head(parsed(out))
    bom = framed("\ufeff" + DOCUMENTS[0], CSP)
    assert bom.startswith("<!DOCTYPE html>" + FRAME_BASE)


def test_the_base_precedes_the_policy_and_a_server_base_is_kept_only_when_admitted() -> None:
    """``base-uri 'none'`` binds only what follows the policy, so the host's ``<base>`` goes
    before it; a server's own ``<base>`` replaces it only where the policy admits one."""
    with_base = "<!DOCTYPE html><head><base href='https://cdn.example.com/'></head>x"
    assert FRAME_BASE in framed(with_base, CSP)
    assert FRAME_BASE not in framed(with_base, CSP, server_base=True)
    assert FRAME_BASE in framed(DOCUMENTS[0], CSP, server_base=True)
    head = parsed(framed(DOCUMENTS[0], CSP)).find(f"{NS}head")  # type: ignore[attr-defined]
    tags = [child.tag.removeprefix(NS) for child in head]
    assert tags[:3] == ["base", "meta", "script"], tags
