"""The fast path of argument checking: closures compiled once per simple schema.

Most tools declare flat objects of typed fields. For those, jsonschema's ``is_valid`` (about
15-20 µs a call here, most of it generic dispatch) is replaced by closures compiled once per
schema, which answer in about a microsecond. The fast path only ever says "valid"; any
"no" goes to jsonschema, which decides and writes the messages, so errors read exactly as
before. A schema that uses any keyword outside this small set has no fast path at all.
Bounded: each keyword here visits an argument value at most once (``properties`` and
``additionalProperties`` see disjoint keys, ``items`` each element once), and the values
visited through ``items``/``additionalProperties`` are counted against MAX_STEPS; past it
the fast path gives up and jsonschema's own budget applies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolbench._core.schema.limits import MAX_DEPTH, MAX_STEPS

_Check = Callable[[Any, list[int]], bool]
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "format",
                          "deprecated", "readOnly", "writeOnly"})
_FAST_TYPES: dict[str, Callable[[Any], bool]] = {
    # Exact types: a subclass (or 1.0 for an integer) is left to jsonschema to judge.
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}


def _is_num(value: object) -> bool:
    return type(value) is int or type(value) is float


def fast(schema: object) -> Callable[[Any], bool] | None:
    """A predicate that is True only when ``schema`` surely accepts the instance, or None
    when the schema uses anything the fast path does not know."""
    check = _fast_node(schema, 0)
    if check is None:
        return None

    def run(instance: Any) -> bool:
        return check(instance, [MAX_STEPS])

    return run


def _fast_node(schema: object, depth: int) -> _Check | None:
    if schema is True:
        return lambda v, budget: True
    if type(schema) is not dict or depth > MAX_DEPTH:
        return None
    checks: list[_Check] = []
    props: dict[str, _Check] = {}
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type":
            names = [value] if isinstance(value, str) else value
            if not isinstance(names, list) or not names or not all(
                    isinstance(n, str) and n in _FAST_TYPES for n in names):
                return None
            tests = tuple(_FAST_TYPES[n] for n in names)
            checks.append(_fast_type(tests))
        elif key == "properties":
            if type(value) is not dict:
                return None
            for name, sub in value.items():
                compiled = _fast_node(sub, depth + 1)
                if compiled is None:
                    return None
                props[name] = compiled
            checks.append(_fast_properties(tuple(props.items())))
        elif key == "required":
            if type(value) is not list or not all(type(n) is str for n in value):
                return None
            checks.append(_fast_required(tuple(value)))
        elif key == "additionalProperties":
            extra = _fast_additional(value, schema, depth)
            if extra is None:
                return None
            checks.append(extra)
        elif key == "items":
            sub_check = _fast_node(value, depth + 1)
            if sub_check is None:
                return None
            checks.append(_fast_items(sub_check))
        elif key == "enum":
            if type(value) is not list or not value or not all(type(e) is str for e in value):
                return None
            checks.append(_fast_enum(frozenset(value)))
        elif key == "const":
            if type(value) is not str:
                return None
            checks.append(_fast_enum(frozenset((value,))))
        elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if not _is_num(value):
                return None  # draft 4's boolean exclusive bounds, among others
            checks.append(_fast_bound(key, value))
        elif key in ("minLength", "maxLength", "minItems", "maxItems"):
            if type(value) is not int or value < 0:
                return None
            checks.append(_fast_length(key, value))
        else:
            return None
    if not checks:
        return lambda v, budget: True
    if len(checks) == 1:
        return checks[0]
    return _fast_all(tuple(checks))


def _fast_all(checks: tuple[_Check, ...]) -> _Check:
    return lambda v, budget: all(c(v, budget) for c in checks)


def _fast_type(tests: tuple[Callable[[Any], bool], ...]) -> _Check:
    if len(tests) == 1:
        one = tests[0]
        return lambda v, budget: one(v)
    return lambda v, budget: any(t(v) for t in tests)


def _fast_properties(items: tuple[tuple[str, _Check], ...]) -> _Check:
    return lambda v, budget: type(v) is not dict or all(
        c(v[k], budget) for k, c in items if k in v)


def _fast_required(names: tuple[str, ...]) -> _Check:
    return lambda v, budget: type(v) is not dict or all(n in v for n in names)


def _fast_items(each: _Check) -> _Check:
    return lambda v, budget: type(v) is not list or (
        _spend(budget, len(v)) and all(each(x, budget) for x in v))


def _fast_enum(allowed: frozenset[str]) -> _Check:
    return lambda v, budget: type(v) is str and v in allowed


def _spend(budget: list[int], count: int) -> bool:
    budget[0] -= count
    return budget[0] >= 0


def _fast_additional(value: object, schema: dict[str, Any], depth: int) -> _Check | None:
    known = schema.get("properties", {})
    if type(known) is not dict:
        return None
    names = frozenset(known)
    if value is True:
        return lambda v, budget: True
    if value is False:
        return lambda v, budget: type(v) is not dict or all(k in names for k in v)
    sub = _fast_node(value, depth + 1)
    if sub is None:
        return None
    return lambda v, budget: type(v) is not dict or (_spend(budget, len(v)) and all(
        sub(x, budget) for k, x in v.items() if k not in names))


def _fast_bound(key: str, limit: float) -> _Check:
    if key == "minimum":
        return lambda v, budget: not _is_num(v) or v >= limit
    if key == "maximum":
        return lambda v, budget: not _is_num(v) or v <= limit
    if key == "exclusiveMinimum":
        return lambda v, budget: not _is_num(v) or v > limit
    return lambda v, budget: not _is_num(v) or v < limit


def _fast_length(key: str, limit: int) -> _Check:
    kind = str if key.endswith("Length") else list
    if key.startswith("min"):
        return lambda v, budget: type(v) is not kind or len(v) >= limit
    return lambda v, budget: type(v) is not kind or len(v) <= limit
