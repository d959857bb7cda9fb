"""Our jsonschema validator class: re2 patterns, a step and time budget, nothing fetched.

jsonschema's own keywords are kept, except:

* ``pattern``, ``patternProperties`` and the pattern part of ``additionalProperties`` are
  matched with google-re2 (linear time), never Python's backtracking ``re``; a pattern re2
  cannot compile is given the benefit of the doubt (``regex`` says why);
* every keyword that descends into subschemas counts one step against the running check's
  ``budget`` (steps and a deadline, per thread), and raises ``OverBudget`` past it;
* ``unevaluatedProperties`` can be skipped (jsonschema matches ``patternProperties`` with
  ``re`` inside it).

``refuse_retrieval`` is the registry's ``retrieve``: nothing outside a schema is ever read.
``toolbench._core.schema.validate`` builds, caches and runs the validators.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

_CACHE_LIMIT = 4096  # patterns kept compiled


class Budget(threading.local):
    """Steps and time left in the check running on this thread (checks never nest or await)."""

    left: int = 0
    deadline: float = 0.0

    def start(self, steps: int, seconds: float) -> None:
        self.left = steps
        self.deadline = time.perf_counter() + seconds


budget = Budget()


class OverBudget(Exception):
    """Raised from inside jsonschema when a check has used up ``MAX_STEPS`` or its time."""

    def __init__(self, timed: bool) -> None:
        super().__init__(timed)
        self.timed = timed  # steps were left: the clock ran out (a busy machine can do that)



_patterns: dict[str, Any] = {}  # pattern -> compiled re2 regexp, or an error string
_classes: dict[tuple[type, bool], type] = {}


# -- patterns -----------------------------------------------------------------------------
def regex(pattern: str) -> Any:
    """The compiled re2 regexp for ``pattern``, or a str saying why re2 cannot compile it."""
    found = _patterns.get(pattern)
    if found is not None:
        return found
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.log_errors = False  # otherwise absl writes every refused pattern to stderr
    options.never_capture = True  # only "does it match" is asked: no group spans to build
    try:
        compiled: Any = re2.compile(pattern, options)
    except re2.error as exc:
        text = exc.args[0] if exc.args else exc
        compiled = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    except Exception as exc:  # a surrogate in the pattern, for one
        compiled = f"{type(exc).__name__}: {exc}"
    if len(_patterns) >= _CACHE_LIMIT:
        _patterns.clear()
    _patterns[pattern] = compiled
    return compiled


def _search(pattern: object, text: str) -> bool | None:
    """Does ``pattern`` match somewhere in ``text``? None when that cannot be told locally."""
    if not isinstance(pattern, str):
        return None
    compiled = regex(pattern)
    if isinstance(compiled, str):
        return None
    try:
        # Searching the UTF-8 bytes is what re2's str path does too, minus mapping the
        # match's byte offsets back to characters (a third of the cost).
        return compiled.search(text.encode("utf-8")) is not None
    except Exception:  # a lone surrogate has no UTF-8: it cannot be matched
        return None


def _kw_pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and _search(pattern, instance) is False:
        from jsonschema.exceptions import ValidationError

        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _kw_pattern_properties(validator: Any, patterns: Any, instance: Any,
                           schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _kw_additional_properties(validator: Any, extra: Any, instance: Any,
                              schema: Any) -> Iterator[Any]:
    """jsonschema's ``additionalProperties``, with patterns matched by re2; a key that a
    pattern re2 cannot compile might match is given the benefit of the doubt."""
    if not validator.is_type(instance, "object"):
        return
    from jsonschema.exceptions import ValidationError

    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}) or ())
    extras = [key for key in instance if key not in properties]
    if extras and patterns:
        extras = [key for key in extras
                  if not any(_search(p, key) is not False for p in patterns)]
    extras.sort(key=str)
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        shown = ", ".join(repr(key) for key in extras)
        verb = "was" if len(extras) == 1 else "were"
        if patterns:
            yield ValidationError(
                f"{shown} {'does' if len(extras) == 1 else 'do'} not match any of the regexes: "
                + ", ".join(repr(p) for p in sorted(patterns)))
        else:
            yield ValidationError(f"Additional properties are not allowed ({shown} {verb} "
                                  "unexpected)")


def _kw_skipped(validator: Any, value: Any, instance: Any, schema: Any) -> None:
    return None


_APPLICATORS = frozenset({
    "$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if",
    "items", "prefixItems", "additionalItems", "contains", "properties", "patternProperties",
    "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "dependentSchemas",
    "dependencies", "propertyNames", "extends",
})
"""The keywords that descend into subschemas; only these count as steps. Work can multiply
only through them, and the work of the other keywords between two steps is bounded by the
size of one subschema, so counting them too would only slow every check down."""


def _counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        state = budget
        left = state.left = state.left - 1
        if (left & 31) == 0 and (left < 0 or time.perf_counter() > state.deadline):
            raise OverBudget(left >= 0)
        return keyword(validator, value, instance, schema)

    return counted


def validator_class(base: type, skip_unevaluated: bool) -> type:
    """``base`` with re2 patterns, the step budget and perhaps no unevaluatedProperties."""
    key = (base, skip_unevaluated)
    found = _classes.get(key)
    if found is not None:
        return found
    import jsonschema.validators

    keywords: dict[str, Any] = dict(base.VALIDATORS)  # type: ignore[attr-defined]
    keywords["pattern"] = _kw_pattern
    keywords["patternProperties"] = _kw_pattern_properties
    keywords["additionalProperties"] = _kw_additional_properties
    if skip_unevaluated and "unevaluatedProperties" in keywords:
        keywords["unevaluatedProperties"] = _kw_skipped
    cls: type = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        base, validators={name: _counted(fn) if name in _APPLICATORS else fn
                          for name, fn in keywords.items()})
    _classes[key] = cls
    return cls


def refuse_retrieval(uri: str) -> NoReturn:
    """A registry's ``retrieve``: nothing outside the schema itself is ever read."""
    import referencing.exceptions

    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]
