"""PinWarnings, built off the loop: what a changed listing's warning says."""

from __future__ import annotations

import re

from toolbench._bench.overtime.warnings_off_loop import listing_warning

OLD = ("Shortest distance between two cities over the surface of the WGS-84 ellipsoid. Uses "
       "Vincenty's iterative method: the Earth is slightly flattened at the poles, and this "
       "accounts for it. Accurate to millimetres; compare with `geo`'s spherical answer.")
NEW = ("Shortest distance between two cities over the WGS-84 ellipsoid, as GPS measures it. "
       "Version 2 renamed the unit parameter to units and added a precision argument that "
       "rounds the answer to the given number of decimal places; compare with `geo`'s answer.")


def tool(description: str) -> dict[str, object]:
    return {"kind": "tool", "name": "distance", "fingerprint": str(hash(description)),
            "description": description,
            "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}}}


def test_a_long_diff_line_is_cut_after_a_word() -> None:
    """Issue 37, item 16: notebook 07's PinWarning ended "{+Versio" (cut mid-word)."""
    message = str(listing_warning("geo_precise", [(tool(OLD), tool(NEW))], [], []))
    line = next(li for li in message.splitlines() if li.startswith("  distance.description"))
    assert line.endswith("…") and len(line) <= 330, line
    last = re.sub(r"[-+\[\]{}]", "", line[:-1].split()[-1])
    words = set(re.sub(r"[-+\[\]{}]", "", OLD + " " + NEW).split())
    assert last in words, f"cut inside a word: {last!r} in {line!r}"
