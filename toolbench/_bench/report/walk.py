"""A bounded, iterative walk over what a server declared for one tool.

A catalog is untrusted input. A schema nested 10,000 deep overflows anything recursive
(``json.dumps`` raises ``RecursionError`` past about a thousand levels; a recursive walk would
too), and a schema of millions of values would hold the kernel. So the walk here is a loop
with an explicit stack and a budget of :data:`MAX_NODES` values per schema; past it the walk
stops and says so (``Walked.cut``), and the report turns that into a finding.

The walk knows where it is in JSON Schema terms, so that depth counts *schema* levels (the
root is 1, a parameter 2, the items of an array parameter 3), not JSON containers:
``properties`` is a map of schemas, ``items`` is a schema, ``enum`` and ``default`` are data.
Every string it passes (values and keys that are not keywords) is kept with its place, for the
text scans. Places are kept as links to the parent (a pair), never as copied paths, so a deep
schema costs a constant per value, and only the few places that end up in a finding are
spelled out (:func:`place`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolbench._bench.report.pace import offer
from toolbench._bench.report.quote import visible

MAX_NODES = 100_000
"""JSON values of one schema that are walked; the rest is not checked (and a finding says so)."""
MAX_PLACE = 120
"""Characters of a spelled-out place (``properties.path.description``); a deeper one is cut in
the middle."""
PLAIN_DEPTH = 200
"""Containers nested at most this deep are serialised by ``json.dumps`` (C, fast); deeper
ones by the loop in :func:`to_json`, which has no recursion to overflow."""

# What a key of a schema object holds.
SCHEMA, MAP, SCHEMAS, DATA = 0, 1, 2, 3
_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                   "dependentSchemas"})
_ONE = frozenset({"items", "additionalProperties", "additionalItems", "unevaluatedItems",
                  "unevaluatedProperties", "not", "if", "then", "else", "contains",
                  "propertyNames", "contentSchema"})
_MANY = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
KEYWORDS = _MAPS | _ONE | _MANY | frozenset({
    "type", "description", "title", "default", "enum", "const", "examples", "required",
    "format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties",
    "maxProperties", "multipleOf", "$ref", "$schema", "$id", "$comment", "$anchor",
    "$dynamicRef", "$dynamicAnchor", "readOnly", "writeOnly", "deprecated", "nullable",
    "contentEncoding", "contentMediaType", "dependentRequired", "minContains", "maxContains",
})
"""Keys whose own text is not scanned (their values are)."""
_COMPOSED = frozenset({"allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "if"})

Place = tuple[Any, str] | None
"""Where a value is: ``(parent place, key)``; ``None`` is the root."""


Text = tuple[Place, str, bool]
"""One string the server declared: where, the text, and whether it is a ``description`` (the
URL rule reads only those). A plain tuple: a catalog of 10,000 tools makes hundreds of
thousands of them."""


@dataclass(slots=True)
class Walked:
    """What one bounded walk over a schema found."""

    texts: list[Text] = field(default_factory=list)
    depth: int = 0
    """The deepest schema level (the root is 1); 0 for a schema that is not an object."""
    deepest: Place = None
    json_depth: int = 0
    """The deepest container nesting, schema or data (for :func:`to_json`)."""
    single_enums: list[Place] = field(default_factory=list)
    missing_required: list[tuple[Place, list[str]]] = field(default_factory=list)
    """Object schemas whose ``required`` names a parameter that ``properties`` lacks."""
    nodes: int = 0
    cut: bool = False


_CONTAINERS = (dict, list, tuple)


def walk(schema: Any, root: str, max_nodes: int = MAX_NODES) -> Walked:
    """Walk ``schema`` (labelled ``root`` in places) within ``max_nodes`` values.

    A value is counted when its container is reached; strings are kept as they are met,
    scalars are passed over, containers go on the stack.
    """
    found = Walked()
    texts = found.texts
    top: Place = (None, root)
    if not isinstance(schema, _CONTAINERS):
        if isinstance(schema, str):
            texts.append((top, schema, False))
        return found
    stack: list[tuple[Any, int, int, int, Place]] = [(schema, SCHEMA, 1, 1, top)]
    nodes = 1
    json_depth = 0
    steps = 0
    while stack:
        value, kind, depth, nest, here = stack.pop()
        steps += 1
        if not steps & 0x3FF:
            offer()  # a deep or wide schema: let the shared loop in now and then
        if nest > json_depth:
            json_depth = nest
        nodes += len(value)
        if nodes > max_nodes:
            found.cut = True
            break
        if isinstance(value, dict):
            if kind == SCHEMA:
                if depth > found.depth:
                    found.depth, found.deepest = depth, here
                if "enum" in value or "required" in value:
                    _schema_facts(value, here, found)
            for key, sub in value.items():
                name = key if isinstance(key, str) else str(key)
                where = (here, name)
                if kind != SCHEMA:
                    if kind == MAP or name not in KEYWORDS:
                        texts.append((where, name, False))  # a property's name, a data key
                    if isinstance(sub, str):
                        texts.append((where, sub, False))
                    elif isinstance(sub, _CONTAINERS):
                        if kind == MAP:
                            stack.append((sub, SCHEMA, depth + 1, nest + 1, where))
                        else:
                            stack.append((sub, DATA, depth, nest + 1, where))
                    continue
                if isinstance(sub, str):
                    if name not in KEYWORDS:
                        texts.append((where, name, False))
                    texts.append((where, sub, name == "description"))
                elif not isinstance(sub, _CONTAINERS):
                    if name not in KEYWORDS:
                        texts.append((where, name, False))
                elif name in _MAPS and isinstance(sub, dict):
                    stack.append((sub, MAP, depth, nest + 1, where))
                elif name in _ONE and isinstance(sub, dict):
                    stack.append((sub, SCHEMA, depth + 1, nest + 1, where))
                elif name in _MANY or (name == "items" and not isinstance(sub, dict)):
                    stack.append((sub, SCHEMAS, depth, nest + 1, where))
                else:
                    if name not in KEYWORDS:
                        texts.append((where, name, False))
                    stack.append((sub, DATA, depth, nest + 1, where))
        else:
            schemas = kind == SCHEMAS
            for i in range(len(value) - 1, -1, -1):
                sub = value[i]
                if isinstance(sub, str):
                    texts.append(((here, f"[{i}]"), sub, False))
                elif isinstance(sub, _CONTAINERS):
                    if schemas and isinstance(sub, dict):
                        stack.append((sub, SCHEMA, depth + 1, nest + 1, (here, f"[{i}]")))
                    else:
                        stack.append((sub, DATA, depth, nest + 1, (here, f"[{i}]")))
    found.nodes = nodes
    found.json_depth = json_depth
    return found


def _schema_facts(schema: dict[Any, Any], here: Place, found: Walked) -> None:
    """The checks that read one schema object as a whole."""
    enum = schema.get("enum")
    if isinstance(enum, list) and len(enum) == 1:
        found.single_enums.append((here, "enum"))
    required = schema.get("required")
    if isinstance(required, list) and required and not any(k in schema for k in _COMPOSED):
        properties = schema.get("properties")
        known = properties if isinstance(properties, dict) else {}
        missing = [r for r in required if isinstance(r, str) and r not in known]
        if missing:
            found.missing_required.append((here, missing))


def place(where: Place) -> str:
    """A place spelled out, ``inputSchema.properties.path.description``, cut in the middle
    when deep; bounded work however deep the place is."""
    parts: list[str] = []
    node = where
    while node is not None:
        node, key = node
        parts.append(visible(key, 40))  # a server's key: shown, never hiding anything
    parts.reverse()
    text = ".".join(parts).replace(".[", "[")
    if len(text) <= MAX_PLACE:
        return text
    half = MAX_PLACE // 2 - 1
    return f"{text[:half]}…{text[-half:]}"


def first_key(where: Place) -> str | None:
    """The key nearest the root (the section: ``inputSchema``, ``description``)."""
    key = None
    node = where
    while node is not None:
        node, key = node
    return key


# -- serialising ----------------------------------------------------------------------------
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def to_json(value: Any, depth: int, long_strings: bool = False) -> str:
    """Compact JSON of ``value`` (whose containers nest ``depth`` deep, from :func:`walk`).

    Shallow values go to ``json.dumps``; deep ones, and values with strings over
    :data:`LONG_STRING` characters, through a loop with its own stack that encodes a long
    string a piece at a time. So a schema nested 10,000 deep costs time in proportion to its
    size and nothing else, and a 10 MB description never holds the interpreter for the 50 ms
    that one ``json.dumps`` of it takes.
    """
    if depth <= PLAIN_DEPTH and not long_strings:
        try:
            return _ENCODE(value)
        except (TypeError, ValueError, RecursionError):
            pass  # a key JSON cannot hold, a circular value: the loop below copes
    return _to_json_loop(value)


_STR = json.encoder.encode_basestring  # type: ignore[attr-defined]
LONG_STRING = 65_536


def _string(text: str) -> str:
    """A JSON string, encoded :data:`LONG_STRING` characters at a time when long (escaping
    is per character, so the pieces join into the same text)."""
    if len(text) <= LONG_STRING:
        return str(_STR(text))
    parts = ['"']
    for start in range(0, len(text), LONG_STRING):
        offer()
        parts.append(_STR(text[start:start + LONG_STRING])[1:-1])
    parts.append('"')
    return "".join(parts)


def _to_json_loop(value: Any) -> str:
    out: list[str] = []
    stack: list[Any] = [value]
    seen: set[int] = set()
    steps = 0
    while stack:
        item = stack.pop()
        steps += 1
        if not steps & 0x3FF:
            offer()
        if isinstance(item, _Raw):
            out.append(item.text)
        elif isinstance(item, str):
            out.append(_string(item))
        elif isinstance(item, dict):
            if id(item) in seen:  # a value that contains itself: JSON cannot say it
                out.append('"…"')
                continue
            seen.add(id(item))
            out.append("{")
            pending: list[Any] = [_Raw("}")]
            for i, (key, sub) in enumerate(reversed(list(item.items()))):
                pending.append(sub)
                comma = "," if i < len(item) - 1 else ""
                name = key if isinstance(key, str) else str(key)
                pending.append(_Raw(f"{comma}{_string(name)}:"))
            stack.extend(pending)
        elif isinstance(item, (list, tuple)):
            if id(item) in seen:
                out.append('"…"')
                continue
            seen.add(id(item))
            out.append("[")
            pending = [_Raw("]")]
            for i, sub in enumerate(reversed(item)):
                pending.append(sub)
                if i < len(item) - 1:
                    pending.append(_Raw(","))
            stack.extend(pending)
        else:
            try:
                out.append(_ENCODE(item))
            except (TypeError, ValueError):
                out.append(_string(str(item)))
    return "".join(out)


class _Raw:
    """Text already written as JSON (a bracket, a comma, a key)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text
