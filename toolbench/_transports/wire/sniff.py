"""Reading a dropped message's id from its first and last bytes, without parsing it.

A message over ``max_message_bytes`` is never assembled, but the request it answers must still
fail at once (as ``Malformed``), so its id is read from the few kilobytes kept of its start
(``{"jsonrpc": "2.0", "id": 5, "result": ...``, as the Python SDK writes it) or of its end
(``..., "jsonrpc": "2.0", "id": 5}``, as TypeScript servers do). Shared by the stdio reader and
legacy SSE's event stream.
"""

from __future__ import annotations

import json
import re
from typing import Any

_STR = rb'"(?:[^"\\]|\\.)*"'
_SCALAR = rb"(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|" + _STR + rb"|true|false|null)"
_HEAD_SCALAR = re.compile(rb"\s*(" + _STR + rb")\s*:\s*(" + _SCALAR + rb")\s*,")
_HEAD_BIG = re.compile(rb"\s*(" + _STR + rb")\s*:\s*[\[{]")
_TAIL = re.compile(rb"((?:,\s*" + _STR + rb"\s*:\s*" + _SCALAR + rb"\s*)+)\}\s*$")
_PAIR = re.compile(rb"(" + _STR + rb")\s*:\s*(" + _SCALAR + rb")")


def _pairs(found: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in found:
        try:
            out[json.loads(key)] = json.loads(value)
        except ValueError:
            continue
    return out


def sniff_head(head: bytes) -> tuple[dict[str, Any], str | None]:
    """Top-level scalar members before the first object/array member, and that member's key."""
    start = head.lstrip()
    if not start.startswith(b"{"):
        return {}, None
    pos = len(head) - len(start) + 1
    found: list[tuple[bytes, bytes]] = []
    while True:
        match = _HEAD_SCALAR.match(head, pos)
        if match is None:
            break
        found.append((match.group(1), match.group(2)))
        pos = match.end()
    big = _HEAD_BIG.match(head, pos)
    big_key: str | None = None
    if big is not None:
        try:
            big_key = json.loads(big.group(1))
        except ValueError:
            big_key = None
    return _pairs(found), big_key


def sniff_tail(tail: bytes) -> dict[str, Any]:
    """Top-level scalar members after the last object/array member (``...},"id":5}``)."""
    match = _TAIL.search(tail)
    if match is None:
        return {}
    return _pairs(_PAIR.findall(match.group(1)))
