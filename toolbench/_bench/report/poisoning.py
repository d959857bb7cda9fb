"""The text scans for possible tool poisoning: hidden characters, text aimed at the model,
base64-looking runs and URLs.

A tool's texts (its name, title and description, and every string and key of its schemas) are
joined with NUL between them and scanned once per pattern, so a catalog of 10,000 tools costs
a few regex calls per tool, not per string. Every pattern is linear (no nested quantifiers),
and a text over :data:`CHUNK` characters is scanned a chunk at a time (``finditer`` with
``pos``/``endpos``, overlapping by :data:`OVERLAP`): Python's ``re`` holds the GIL for a whole
call, and a 10 MB description scanned in one call would hold the shared loop's thread off for
a third of a second. Matches are counted up to :data:`MAX_MATCHES` per pattern.

What is flagged, and the near misses that are not:

- **Invisible Unicode.** Tag characters (U+E0000–U+E007F; the hidden ASCII they spell is
  shown), bidi controls (U+202A–U+202E, U+2066–U+2069, the marks), zero-width and other
  invisible format characters, and runs of variation selectors. Not flagged: a zero-width
  joiner or non-joiner between two visible non-ASCII characters (emoji sequences, Persian),
  one variation selector after a visible character (``❤️``, a keycap), and the tag letters
  of a subdivision flag after U+1F3F4 (England's flag).
- **Text aimed at the model.** "ignore/disregard (all) previous instructions", "do not tell
  the user", "without telling the user", ``<IMPORTANT>``/``<system>``-style tags, and the
  paths of secret files (``~/.ssh``, ``id_rsa``). Not flagged: "ignore case", "the previous
  page", "tell the user the forecast".
- **Base64-looking runs.** 48 or more characters of the base64 alphabet with a digit, an
  upper- and a lower-case letter. Not flagged: hex digests, long words, paths.
- **URLs** (in descriptions only): ``scheme://...``, ``data:`` and ``javascript:``.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from toolbench._bench.report.pace import offer
from toolbench._bench.report.quote import visible
from toolbench._bench.report.rules import BASE64, INSTRUCTIONS, INVISIBLE, URL, Rule

CHUNK = 65_536
OVERLAP = 1_024
MAX_MATCHES = 10_000
SEPARATOR = "\x00"

_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_JOINERS = frozenset("\u200c\u200d")
_VARIATION = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_KEYCAP = "\u20e3"
_BLACK_FLAG = "\U0001f3f4"
_CANCEL_TAG = "\U000e007f"
_INSTRUCTIONS = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:(?:all|any|the|your|of)\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|system|other)\s+"
    r"(?:instructions?|prompts?|messages?|directions?|rules?|context|guidelines?)\b"
    r"|\b(?:do\s+not|don'?t|never|must\s+not)\s+(?:tell|inform|notify|alert|"
    r"mention\s+(?:this\s+|it\s+)?to|reveal\s+(?:this\s+|it\s+)?to)\s+(?:the\s+)?user\b"
    r"|\bwithout\s+(?:telling|informing|notifying|alerting|asking)\s+(?:the\s+)?user\b"
    r"|<\s*/?\s*(?:important|system|instructions?|secret|hidden)\s*>"
    r"|~/\.ssh\b|\bid_rsa\b|\.aws/credentials\b",
    re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{48,}={0,2}")
_TRAILING = ".,;:!?)]}>"  # prose around a URL, not part of it
_HAS_DIGIT = re.compile(r"\d")
_HAS_UPPER = re.compile(r"[A-Z]")
_HAS_LOWER = re.compile(r"[a-z]")
_URL = re.compile(
    r"\b(?:(?:https?|ftp|file|wss?)://|data:[\w/+.-]*[;,]|javascript:)[^\s<>\"'`\x00]*",
    re.IGNORECASE)
@dataclass(frozen=True, slots=True)
class Hit:
    """One finding's worth: which rule, in which of the scanned texts, and what was seen."""

    rule: Rule
    text: int
    what: str


def spans(pattern: re.Pattern[str], text: str, limit: int = MAX_MATCHES,
          needles: Sequence[str] = ()) -> list[tuple[int, int]]:
    """Where ``pattern`` matches ``text``, at most ``limit`` spans, a chunk at a time; a match
    that runs over a chunk's end is joined with its continuation. With ``needles`` (lower
    case), a chunk that holds none of them is not searched."""
    if len(text) <= CHUNK:  # at most CHUNK matches: fine to list, then cut
        return [match.span() for match in pattern.finditer(text)][:limit]
    found: list[tuple[int, int]] = []
    pos = 0
    while pos < len(text) and len(found) < limit:
        offer()
        stop = pos + CHUNK
        end = min(len(text), stop + OVERLAP)
        if needles:
            window = text[pos:end].lower()
            if not any(needle in window for needle in needles):
                pos = stop
                continue
        for match in pattern.finditer(text, pos, end):
            start, end = match.span()
            if start >= stop:
                break  # the next chunk finds it whole
            if found and start < found[-1][1]:
                if end > found[-1][1]:
                    found[-1] = (found[-1][0], end)
                continue
            found.append((start, end))
            if len(found) >= limit:
                break
        pos = stop
    return found


def scan(texts: Sequence[str], prose: Sequence[bool]) -> list[Hit]:
    """Every hit in ``texts`` (one tool's); ``prose[i]`` marks a description, the only place
    the URL rule looks. Short texts are joined and scanned together; a text over
    :data:`CHUNK` characters is scanned on its own (never copied into a join)."""
    hits: list[Hit] = []
    short = [i for i, text in enumerate(texts) if len(text) <= CHUNK]
    if short:
        _scan_joined([texts[i] for i in short], short, hits)
    if len(short) < len(texts):
        for i, text in enumerate(texts):
            if len(text) > CHUNK:
                _scan_joined([text], [i], hits)
    for i, text in enumerate(texts):
        if len(text) >= 48 and (len(text) > 4096 or _long_word(text)):
            for start, end in spans(_BASE64, text, 100):
                run = text[start:min(end, start + 4096)]
                if (_HAS_DIGIT.search(run) and _HAS_UPPER.search(run)
                        and _HAS_LOWER.search(run)):
                    hits.append(Hit(BASE64, i, _describe_base64(text[start:end])))
        if prose[i] and ":" in text:
            hits.extend(Hit(URL, i, f"a URL ({visible(text[start:end].rstrip(_TRAILING))})")
                        for start, end in spans(_URL, text, 100))
    return hits


def _scan_joined(texts: list[str], index: list[int], hits: list[Hit]) -> None:
    """The hidden-character and instruction scans over ``texts`` joined by NUL (one text:
    itself); ``index`` maps each back to its place in the tool's texts."""
    joined = SEPARATOR.join(texts)  # a single text is returned as it is, not copied
    low = joined.lower() if len(joined) <= CHUNK else None
    ascii_only = joined.isascii()
    triggered = low is None or any(word in low for word in _TRIGGERS)
    if ascii_only and not triggered:
        return
    starts = []
    at = 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    if not ascii_only:
        hits += [Hit(h.rule, index[h.text], h.what) for h in _invisible(joined, starts)]
    if triggered:
        for start, end in spans(_INSTRUCTIONS, joined, 100, _TRIGGERS):
            i = index[bisect.bisect_right(starts, start) - 1]
            hits.append(Hit(INSTRUCTIONS, i, f'"{visible(joined[start:end])}"'))


def _long_word(text: str) -> bool:
    """Whether a (short) text has 48 characters without a space: a base64 run needs them,
    and most descriptions have none, so the regex is skipped."""
    return any(len(word) >= 48 for word in text.split())


_TRIGGERS = ("ignore", "disregard", "forget", "override", "user", "<", "ssh", "id_rsa",
             "credentials")
"""Words one of the instruction patterns needs: a short text with none of them is skipped
without running the regex."""


def _describe_base64(run: str) -> str:
    shown = f"a base64-looking run of {len(run):,} characters ({visible(run, 24)})"
    head = run[: 400 - 400 % 4].replace("-", "+").replace("_", "/")
    try:
        decoded = base64.b64decode(head, validate=True)
    except (binascii.Error, ValueError):
        return shown
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in decoded)
    if decoded and printable >= 0.9 * len(decoded):
        return f"{shown} that decodes to text: \"{visible(decoded.decode('ascii', 'replace'))}\""
    return shown


def _invisible(joined: str, starts: list[int]) -> list[Hit]:
    """One hit per text with hidden characters, saying what kinds and how many."""
    counts: dict[int, dict[str, int]] = {}
    hidden: dict[int, list[str]] = {}
    for start, _ in spans(_INVISIBLE, joined):
        char = joined[start]
        kind = _kind(joined, start, char)
        if kind is None:
            continue
        i = bisect.bisect_right(starts, start) - 1
        per = counts.setdefault(i, {})
        per[kind] = per.get(kind, 0) + 1
        if kind == "tag" and 0xE0020 <= ord(char) <= 0xE007E:
            spelled = hidden.setdefault(i, [])
            if len(spelled) < 200:
                spelled.append(chr(ord(char) - 0xE0000))
    hits = []
    for i, per in counts.items():
        parts = []
        for kind in ("tag", "bidi", "zero-width", "variation"):
            n = per.get(kind, 0)
            if not n:
                continue
            capped = f"{n:,}+" if n >= MAX_MATCHES else f"{n:,}"
            label = {"tag": "tag character", "bidi": "bidi control",
                     "zero-width": "zero-width or invisible character",
                     "variation": "variation selector"}[kind]
            part = f"{capped} {label}{'' if n == 1 else 's'}"
            if kind == "tag" and hidden.get(i):
                part += f" spelling \"{visible(''.join(hidden[i]))}\""
            parts.append(part)
        hits.append(Hit(INVISIBLE, i, ", ".join(parts)))
    return hits


def _kind(text: str, at: int, char: str) -> str | None:
    """What kind of hidden character ``char`` (at ``at``) is, or None when it is the
    legitimate kind (see the module docstring)."""
    code = ord(char)
    before = text[at - 1] if at else ""
    after = text[at + 1] if at + 1 < len(text) else ""
    if 0xE0000 <= code <= 0xE007F:
        return None if _in_flag(text, at) else "tag"
    if char in _BIDI:
        return "bidi"
    if char in _JOINERS:
        return None if _shown(before) and _shown(after) else "zero-width"
    if _VARIATION.fullmatch(char):
        if _VARIATION.fullmatch(before or "a") or _VARIATION.fullmatch(after or "a"):
            return "variation"
        if _shown(before) or (before and before in "0123456789#*" and after == _KEYCAP):
            return None
        return "variation"
    return "zero-width"


def _shown(char: str) -> bool:
    """A visible non-ASCII character (the neighbour a joiner or a selector may have)."""
    return bool(char) and not char.isascii() and not char.isspace() and (
        _INVISIBLE.fullmatch(char) is None)


def _in_flag(text: str, at: int) -> bool:
    """Whether the tag character at ``at`` belongs to a subdivision flag: U+1F3F4, then
    2–7 tag letters or digits, then U+E007F (cancel tag)."""
    start = at
    while start > 0 and 0xE0020 <= ord(text[start - 1]) <= 0xE007E and at - start < 8:
        start -= 1
    if start == 0 or text[start - 1] != _BLACK_FLAG:
        return False
    end = start
    while end < len(text) and end - start < 8 and (
             0xE0061 <= ord(text[end]) <= 0xE007A or 0xE0030 <= ord(text[end]) <= 0xE0039):
        end += 1
    return 2 <= end - start <= 7 and end < len(text) and text[end] == _CANCEL_TAG and (
        at <= end)
