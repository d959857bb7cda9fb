"""Quoting a server's text in a finding, so that the quote can hide nothing itself.

A finding's message ends up in a notebook, a terminal and a CI log. A server's text may hold
bidi controls that reorder what follows, zero-width or tag characters, terminal escapes or
lone surrogates. :func:`visible` spells each of those out as ``<U+202E>`` and cuts the text
short, so what a person reads is what the message holds.
"""

from __future__ import annotations

import re

QUOTE = 60
"""Characters of a server's text quoted in a finding."""
UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef\ud800-\udfff]")


def visible(text: str, limit: int = QUOTE) -> str:
    """``text`` cut to ``limit`` and with every control, invisible or bidi character shown as
    ``<U+202E>``."""
    cut = text[: limit * 2]
    shown = UNSAFE.sub(lambda m: f"<U+{ord(m.group()):04X}>", cut)
    if len(shown) > limit or len(text) > len(cut):
        return shown[: max(limit - 1, 0)] + "…"
    return shown
