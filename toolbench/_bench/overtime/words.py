"""Word diffs of what a server wrote, bounded in size and in time.

A description is the server's text, and a changed one is what a rug pull looks like, so the
diff that shows it must not be a way to stall the bench. ``difflib.SequenceMatcher`` is
quadratic or worse on repetitive text (6,000 words of "a b a b ..." took 13.8 s), so:

- **A cap.** At most ``MAX_DIFF_WORDS`` words of each side are compared. Past that,
  :func:`word_summary` says the lengths and where the texts first differ (found by comparing
  slices, in C), with the first words from there.
- **A bounded algorithm** under the cap: the common head and tail are trimmed; then the words
  that occur once on each side anchor the rest (patience diff: their longest increasing run,
  found in n log n), and each gap between anchors is diffed the same way. A gap with no such
  word is diffed exactly (a table of its longest common subsequence) when it is small, and
  otherwise shown as replaced whole. All of it counts against ``WORK_BUDGET`` steps; a text
  that exhausts it has its remaining gaps shown as replaced, so the result stays a true diff
  (applying it gives the new text) at a bounded cost.

Both ``tb.diff``'s ``detail`` (:func:`word_diff`) and its HTML (``word_diff_html``) are built
from :func:`word_segments`, so they agree and neither ever parses the other's markers.
"""

from __future__ import annotations

import bisect

MAX_DIFF_WORDS = 4000
"""The most words of a field compared word by word; a longer field is summarised."""
SMALL_GAP = 40_000
"""A gap without anchors is diffed exactly when its two sides' word counts multiply to this
or less (a table of that many cells, about 0.1 s at most over all gaps); a larger one is
shown as replaced."""
WORK_BUDGET = 2_000_000
"""Steps (words visited, table cells) one diff may take before the rest is shown replaced."""
EXCERPT_CHARS = 60
"""How much of each text a summary quotes from where they first differ."""

Segment = tuple[str, str]
"""(``equal`` | ``delete`` | ``insert``, the words, joined by single spaces)."""


def word_segments(old: str, new: str, limit: int = MAX_DIFF_WORDS) -> list[Segment] | None:
    """``old`` turned into ``new`` word by word, or None when either has over ``limit`` words.

    Joining the ``equal`` and ``delete`` segments with single spaces gives ``old``'s words;
    the ``equal`` and ``insert`` ones give ``new``'s.
    """
    a, b = str(old).split(), str(new).split()
    if len(a) > limit or len(b) > limit:
        return None
    ids: dict[str, int] = {}
    ia = [ids.setdefault(w, len(ids)) for w in a]
    ib = [ids.setdefault(w, len(ids)) for w in b]
    out: list[Segment] = []
    i = j = 0
    for bi, bj, size in [*_matches(ia, ib), (len(a), len(b), 0)]:
        if bi > i:
            out.append(("delete", " ".join(a[i:bi])))
        if bj > j:
            out.append(("insert", " ".join(b[j:bj])))
        if size:
            out.append(("equal", " ".join(a[bi:bi + size])))
        i, j = bi + size, bj + size
    return out


def word_diff(old: str, new: str, limit: int = MAX_DIFF_WORDS) -> str:
    """``old`` turned into ``new`` word by word: ``[-removed-]`` and ``{+added+}``; past
    ``limit`` words, :func:`word_summary`."""
    segments = word_segments(old, new, limit)
    if segments is None:
        return word_summary(old, new, limit)
    marks = {"equal": "{}", "delete": "[-{}-]", "insert": "{{+{}+}}"}
    return " ".join(marks[op].format(text) for op, text in segments)


def word_summary(old: str, new: str, limit: int = MAX_DIFF_WORDS) -> str:
    """What a diff over ``limit`` words says instead: the lengths, and where the texts first
    differ (the word and the character, counted from 1), with a few words of each from there.
    """
    old, new = str(old), str(new)
    at = first_difference(old, new)
    start = at  # back to the start of the word it falls in (a few characters at most)
    while start > max(0, at - EXCERPT_CHARS) and not old[start - 1].isspace():
        start -= 1
    before = old[:at].split()
    word = len(before) + (0 if at and not old[at - 1].isspace() else 1)
    told = (f"not compared word by word: the old text has {len(old.split()):,} words "
            f"({len(old):,} characters), the new {len(new.split()):,} words ({len(new):,} "
            f"characters), over the {limit:,} compared")
    if at == len(old) == len(new):
        return told + "; they are the same"
    return (f"{told}; they first differ at word {word:,} (character {at + 1:,}): "
            f"{_excerpt(old, start)} -> {_excerpt(new, start)}")


def first_difference(a: str, b: str) -> int:
    """The index of the first character where ``a`` and ``b`` differ (the shorter one's
    length when one begins the other): a binary search over slice comparisons, done in C."""
    low, high = 0, min(len(a), len(b))
    while low < high:  # invariant: a[:low] == b[:low]
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _excerpt(text: str, start: int) -> str:
    part = text[start:start + EXCERPT_CHARS]
    return repr(part + ("..." if len(text) > start + EXCERPT_CHARS else ""))


# -- the algorithm ----------------------------------------------------------------------------
def _matches(a: list[int], b: list[int]) -> list[tuple[int, int, int]]:
    """Matching blocks ``(i, j, size)`` of ``a`` and ``b``, in order, adjacent ones merged."""
    blocks: list[tuple[int, int, int]] = []
    budget = [WORK_BUDGET]
    regions = [(0, len(a), 0, len(b))]
    while regions:
        alo, ahi, blo, bhi = regions.pop()
        head = _common_head(a, b, alo, ahi, blo, bhi)
        if head:
            blocks.append((alo, blo, head))
            alo, blo = alo + head, blo + head
        tail = _common_tail(a, b, alo, ahi, blo, bhi)
        if tail:
            blocks.append((ahi - tail, bhi - tail, tail))
            ahi, bhi = ahi - tail, bhi - tail
        budget[0] -= head + tail + 1
        if alo == ahi or blo == bhi or budget[0] <= 0:
            continue
        anchors = _anchors(a, b, alo, ahi, blo, bhi, budget)
        if anchors:
            i, j = alo, blo
            for ai, bj in anchors:
                blocks.append((ai, bj, 1))
                regions.append((i, ai, j, bj))
                i, j = ai + 1, bj + 1
            regions.append((i, ahi, j, bhi))
        elif (ahi - alo) * (bhi - blo) <= min(SMALL_GAP, budget[0]):
            budget[0] -= (ahi - alo) * (bhi - blo)
            blocks.extend(_exact(a, b, alo, ahi, blo, bhi))
    blocks.sort()
    merged: list[tuple[int, int, int]] = []
    for i, j, size in blocks:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
        else:
            merged.append((i, j, size))
    return merged


def _common_head(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int) -> int:
    n = 0
    while alo + n < ahi and blo + n < bhi and a[alo + n] == b[blo + n]:
        n += 1
    return n


def _common_tail(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int) -> int:
    n = 0
    while ahi - n > alo and bhi - n > blo and a[ahi - n - 1] == b[bhi - n - 1]:
        n += 1
    return n


def _anchors(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int,
             budget: list[int]) -> list[tuple[int, int]]:
    """The words that occur once on each side, as (i, j) pairs, the longest run of them that
    is in the same order on both sides (patience sorting: n log n)."""
    budget[0] -= (ahi - alo) + (bhi - blo)
    once_a: dict[int, int] = {}
    for i in range(alo, ahi):
        once_a[a[i]] = -1 if a[i] in once_a else i
    once_b: dict[int, int] = {}
    for j in range(blo, bhi):
        word = b[j]
        if word in once_a and once_a[word] >= 0:
            once_b[word] = -1 if word in once_b else j
    pairs = sorted((once_a[w], j) for w, j in once_b.items() if j >= 0)
    if not pairs:
        return []
    tops: list[int] = []  # the smallest j ending an increasing run of each length
    ends: list[int] = []  # the pair index at each top
    back = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        at = bisect.bisect_left(tops, j)
        if at == len(tops):
            tops.append(j)
            ends.append(k)
        else:
            tops[at] = j
            ends[at] = k
        back[k] = ends[at - 1] if at else -1
    run = []
    k = ends[-1]
    while k >= 0:
        run.append(pairs[k])
        k = back[k]
    return run[::-1]


def _exact(a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int,
           ) -> list[tuple[int, int, int]]:
    """A longest common subsequence of a small gap, as matching blocks of size 1."""
    n, m = ahi - alo, bhi - blo
    rows = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        word, row, below = a[alo + i], rows[i], rows[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if word == b[blo + j] else max(below[j], row[j + 1])
    found = []
    i = j = 0
    while i < n and j < m:
        if a[alo + i] == b[blo + j]:
            found.append((alo + i, blo + j, 1))
            i, j = i + 1, j + 1
        elif rows[i + 1][j] >= rows[i][j + 1]:
            i += 1
        else:
            j += 1
    return found
