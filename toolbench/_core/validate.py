"""The one place where a tool's input schema is compiled and arguments are checked against it.

A schema comes from a server, so it is untrusted input (DESIGN.md, "The trust boundary"). The
checks here must therefore never make the kernel do I/O, never stall the loop they run on,
and never raise anything but ``Refused`` (arguments) or ``Malformed`` (a result):

* **No I/O.** Validators are built with a ``referencing.Registry`` whose ``retrieve`` refuses
  everything, so only references inside the same document resolve. A schema with a reference
  that does not start with ``#`` (``http:``, ``https:``, ``file:``, a relative path, an
  ``$id``-based URI) is not checked locally at all: the tool stays callable, the server
  judges the arguments, and ``schema_problems`` says why. The walk that finds them is
  conservative: it looks at every object in the document, data (``enum``, ``default``)
  included, because a local pointer may lead anywhere.
* **Our validator class, always.** jsonschema re-picks the validator class from any
  ``$schema`` it meets while descending, which would bring back its stock class (Python's
  ``re``, no budget). So the root's ``$schema`` picks the draft and is dropped from a
  private copy, and a subschema with a ``$schema`` of its own is not checked locally.
* **Linear-time patterns.** ``pattern``, ``patternProperties`` and the pattern part of
  ``additionalProperties`` are matched with google-re2, never Python's backtracking ``re``.
  A pattern re2 cannot compile (lookaround, backreferences) is skipped, with a reason.
  ``unevaluatedProperties`` is skipped when the document uses ``patternProperties``, because
  jsonschema's implementation of it matches those patterns with ``re``. No format checker
  is used (``format: regex`` would compile with ``re`` too); ``format`` is an annotation.
* **Bounded work.** A schema deeper than ``MAX_DEPTH``, with more than ``MAX_NODES`` values
  or more than ``MAX_TEXT`` characters is not checked locally. One check makes at most
  ``MAX_STEPS`` steps into subschemas and runs at most ``MAX_CHECK_SECONDS``, which bounds the
  exponential blow-up that local ``$ref`` chains under ``anyOf`` can cause (a step through
  a ``$ref`` costs tens of microseconds, so the step cap alone would allow seconds).
* **No foreign exceptions.** When the validator itself fails (a ``{"$ref": "#"}`` cycle
  ends in ``RecursionError``, the step budget runs out, a reference cannot be resolved),
  the call is *not checked locally* and goes to the server, which validates anyway; the
  schema is marked so later calls skip it straight away, and ``schema_problems`` reports
  it. Refusing instead would make a tool uncallable because of a limit of toolbench, not
  a fault of the arguments. A Toolset, which is the server and has no one else to judge,
  asks for ``strict=True`` and refuses instead.

Entries are cached per schema object (the cache holds the object, so its id cannot be
reused while the entry lives). The walk and the patterns are done when a schema is first
seen; the validator, and the check of the schema against its metaschema (about 2 ms), when
it is first used; so each tool's schema is compiled once.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from toolbench._core import html as _html
from toolbench._core import preload as _preload
from toolbench._core.errors import Malformed, Refused
from toolbench._core.ids import ToolId

if TYPE_CHECKING:
    import jsonschema.exceptions

MAX_DEPTH = 64
"""Nesting levels of a schema that is still checked locally (pydantic's run to about 20)."""
MAX_NODES = 10_000
"""JSON values (objects, arrays, strings, numbers, ...) in a schema still checked locally."""
MAX_TEXT = 1_000_000
"""Characters, keys and strings together, in a schema still checked locally."""
MAX_STEPS = 100_000
"""Steps (evaluations of a keyword that descends: ``$ref``, ``anyOf``, ``properties``, ...)
one check may make."""
MAX_CHECK_SECONDS = 0.25
SLOW_CHECKS = 3
"""Checks of one schema that may run out of time before it is skipped for good. The step
budget is exact, so running out of steps marks the schema at once; time depends on how busy
the machine is, and one slow check of a harmless schema must not end its local checks."""
"""Time one check may take (the clock is read every 32 steps)."""
MAX_PROBLEMS = 10
_MAX_ERRORS = 100  # errors collected from one failing check
_CACHE_LIMIT = 4096
_SHOWN = 80  # characters of a server's string shown in a reason

_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


class _Budget(threading.local):
    """Steps and time left in the check running on this thread (checks never nest or await)."""

    left: int = 0
    deadline: float = 0.0

    def start(self) -> None:
        self.left = MAX_STEPS
        self.deadline = time.perf_counter() + MAX_CHECK_SECONDS


_budget = _Budget()


class _OverBudget(Exception):
    """Raised from inside jsonschema when a check has used up ``MAX_STEPS`` or its time."""

    def __init__(self, timed: bool) -> None:
        super().__init__(timed)
        self.timed = timed  # steps were left: the clock ran out (a busy machine can do that)


@dataclass(slots=True)
class _Compiled:
    """What is known about one schema: the survey's verdict at once, the validator (and the
    metaschema check that comes with it, ~2 ms) only when first needed."""

    schema: object  # the schema compiled (an equal one may share this entry)
    validator: Any | None  # None: not built yet, or the schema is not checked locally at all
    problems: list[str] = field(default_factory=list)
    usable: bool = True  # False: the survey refused it; never built
    built: bool = False
    skip_unevaluated: bool = False
    invalid: str | None = None  # the schema breaks its own metaschema
    failure: str | None = None  # the validator itself failed once; later calls skip it
    slow: int = 0  # checks that ran out of time (steps left): skipped for good at SLOW_CHECKS
    slow_note: str | None = None  # what schema_problems says meanwhile
    fast: Callable[[Any], bool] | None = None  # the compiled fast path (see _fast), if any

    def note(self, problem: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        elif len(self.problems) == MAX_PROBLEMS:
            self.problems.append("and more problems")


# Two levels: by object identity (the hot path: one dict lookup per call), then by content,
# so a re-list (tools/list_changed) that brings equal schemas as new objects reuses their
# compiled validators instead of rebuilding each (~6 ms) on the shared loop.
_cache: dict[int, tuple[object, _Compiled]] = {}  # the schema is held: its id stays unique
_by_content: dict[str, _Compiled] = {}
_cache_lock = threading.Lock()
_build_lock = threading.Lock()  # one build at a time, so an entry is never built twice
_patterns: dict[str, Any] = {}  # pattern -> compiled re2 regexp, or an error string
_classes: dict[tuple[type, bool], type] = {}


def _quote(text: object) -> str:
    return repr(_html.shorten(str(text), _SHOWN))


# -- patterns -----------------------------------------------------------------------------
def _regex(pattern: str) -> Any:
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
    compiled = _regex(pattern)
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
        budget = _budget
        left = budget.left = budget.left - 1
        if (left & 31) == 0 and (left < 0 or time.perf_counter() > budget.deadline):
            raise _OverBudget(left >= 0)
        return keyword(validator, value, instance, schema)

    return counted


def _validator_class(base: type, skip_unevaluated: bool) -> type:
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


def _refuse_retrieval(uri: str) -> NoReturn:
    """A registry's ``retrieve``: nothing outside the schema itself is ever read."""
    import referencing.exceptions

    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


# -- compiling ----------------------------------------------------------------------------
@dataclass(slots=True)
class _Survey:
    """What one bounded walk over a whole schema document found."""

    refusal: str | None = None  # why the schema is not checked locally at all
    refs: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    pattern_properties: bool = False
    unevaluated: bool = False


def _survey(schema: Mapping[str, Any]) -> _Survey:
    """Walk every value of the document, schema or not (a local ``$ref`` may point
    anywhere), iteratively and within the stated limits."""
    found = _Survey()
    stack: list[tuple[Any, int]] = [(schema, 0)]
    nodes = text = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            found.refusal = f"the schema has more than {MAX_NODES:,} values"
            return found
        if isinstance(value, str):
            text += len(value)
        elif isinstance(value, Mapping):
            if depth >= MAX_DEPTH:
                found.refusal = f"the schema is nested deeper than {MAX_DEPTH} levels"
                return found
            for key in value:
                text += len(key) if isinstance(key, str) else 0
            stack.extend((sub, depth + 1) for sub in list(value.values())[::-1])
            for key in _REF_KEYS:
                ref = value.get(key)
                if isinstance(ref, str) and not ref.startswith("#"):
                    found.refs.append(f"{key} {_quote(ref)}")
            if depth and isinstance(value.get("$schema"), str):
                found.refusal = (f"a subschema declares its own $schema "
                                 f"{_quote(value['$schema'])}")
                return found
            pattern = value.get("pattern")
            if isinstance(pattern, str):
                found.patterns.append(pattern)
            props = value.get("patternProperties")
            if isinstance(props, Mapping):
                found.pattern_properties = True
                found.patterns.extend(p for p in props if isinstance(p, str))
            if "unevaluatedProperties" in value:
                found.unevaluated = True
        elif isinstance(value, list | tuple):
            if depth >= MAX_DEPTH:
                found.refusal = f"the schema is nested deeper than {MAX_DEPTH} levels"
                return found
            stack.extend((sub, depth + 1) for sub in reversed(value))
        if text > MAX_TEXT:
            found.refusal = f"the schema holds more than {MAX_TEXT:,} characters"
            return found
    return found


def _compile(schema: Mapping[str, Any]) -> _Compiled:
    """Survey ``schema`` and compile its patterns (cheap); every failure becomes a reason."""
    entry = _Compiled(schema, None)
    try:
        survey = _survey(schema)
        if survey.refusal is None and survey.refs:
            more = f" and {len(survey.refs) - 1} more" if len(survey.refs) > 1 else ""
            survey.refusal = (f"it refers outside itself ({survey.refs[0]}{more}); only "
                              "'#...' references are followed and nothing is fetched")
        if survey.refusal is not None:
            entry.usable = False
            entry.note(f"not checked locally: {survey.refusal}")
            return entry
        for pattern in dict.fromkeys(survey.patterns):
            why = _regex(pattern)
            if isinstance(why, str):
                entry.note(f"pattern {_quote(pattern)} is not checked locally: re2 cannot "
                           f"compile it ({_html.shorten(why, _SHOWN)})")
        entry.skip_unevaluated = survey.pattern_properties and survey.unevaluated
        if entry.skip_unevaluated:
            entry.note("unevaluatedProperties is not checked locally: the schema also uses "
                       "patternProperties")
    except Exception as exc:  # whatever else a hostile schema finds: the server judges
        entry.usable = False
        entry.note(f"not checked locally: the schema cannot be used ({type(exc).__name__}: "
                   f"{_html.shorten(str(exc), 200)})")
    return entry


def _built(entry: _Compiled) -> Any | None:
    """The entry's validator, built (with the metaschema check) on first use; None when the
    schema is not checked locally."""
    if entry.built or not entry.usable:
        return entry.validator
    schema = entry.schema
    assert isinstance(schema, Mapping)
    with _build_lock:
        if entry.built:
            return entry.validator
        try:
            entry.validator, entry.invalid = _build(schema, entry.skip_unevaluated)
            if entry.invalid is not None:
                entry.note(f"not checked locally: {entry.invalid}")
            elif entry.validator is not None:
                entry.fast = _fast(entry.validator.schema)
        except Exception as exc:
            entry.validator = None
            entry.note(f"not checked locally: the schema cannot be used "
                       f"({type(exc).__name__}: {_html.shorten(str(exc), 200)})")
        entry.built = True
    return entry.validator


def _build(schema: Mapping[str, Any], skip_unevaluated: bool) -> tuple[Any | None, str | None]:
    """(validator, None), or (None, why the schema itself is invalid)."""
    # Imported on first use: with its optional format checkers installed, importing
    # jsonschema can take seconds, which every stdio demo child would pay at start. A Bench
    # imports it on a thread of its own; two threads importing it at once break it.
    _preload.imported()
    import jsonschema
    import jsonschema.exceptions
    import jsonschema.validators
    import referencing

    draft = schema.get("$schema")
    if draft is not None and not isinstance(draft, str):
        return None, f"$schema is not a string but {type(draft).__name__}"
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    supported = (jsonschema.Draft4Validator, jsonschema.Draft6Validator,
                 jsonschema.Draft7Validator, jsonschema.Draft201909Validator,
                 jsonschema.Draft202012Validator)
    if base not in supported:
        return None, f"$schema {_quote(draft)} (draft 3) is not supported"
    # A private, JSON-only copy; $schema goes, since evolve() would otherwise switch back to
    # jsonschema's stock class (with Python's re and no step budget) for the root.
    copy = json.loads(json.dumps(dict(schema)))
    copy.pop("$schema", None)
    try:
        base.check_schema(copy, format_checker=None)  # type: ignore[arg-type]
    except jsonschema.exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return None, (f"the schema itself is invalid at {_html.shorten(where, _SHOWN)}: "
                      f"{_html.shorten(exc.message, 200)}")
    cls = _validator_class(base, skip_unevaluated)
    registry: Any = referencing.Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]
    return cls(copy, registry=registry), None


def _entry(schema: Mapping[str, Any]) -> _Compiled:
    found = _cache.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    try:
        key: str | None = json.dumps(schema, sort_keys=True, default=repr)
    except Exception:  # too deep, odd keys: not shared by content, compiled on its own
        key = None
    entry = _by_content.get(key) if key is not None and len(key) <= MAX_TEXT else None
    if entry is None:
        entry = _compile(schema)
    with _cache_lock:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        if len(_by_content) >= _CACHE_LIMIT:
            _by_content.clear()
        _cache[id(schema)] = (schema, entry)
        if key is not None and len(key) <= MAX_TEXT:
            _by_content[key] = entry
    return entry


# -- the fast path --------------------------------------------------------------------------
# Most tools declare flat objects of typed fields. For those, jsonschema's ``is_valid`` (about
# 15-20 µs a call here, most of it generic dispatch) is replaced by closures compiled once per
# schema, which answer in about a microsecond. The fast path only ever says "valid"; any
# "no" goes to jsonschema, which decides and writes the messages, so errors read exactly as
# before. A schema that uses any keyword outside this small set has no fast path at all.
# Bounded: each keyword here visits an argument value at most once (``properties`` and
# ``additionalProperties`` see disjoint keys, ``items`` each element once), and the values
# visited through ``items``/``additionalProperties`` are counted against MAX_STEPS; past it
# the fast path gives up and jsonschema's own budget applies.
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


def _fast(schema: object) -> Callable[[Any], bool] | None:
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


# -- checking -----------------------------------------------------------------------------
def _errors(entry: _Compiled, instance: dict[str, Any],
            strict: bool) -> list[jsonschema.exceptions.ValidationError] | str:
    """The validation errors (empty when valid), or a str saying why there was no check."""
    validator = _built(entry)
    if validator is None:
        return entry.problems[-1] if entry.problems else "not checked locally"
    if entry.failure is not None and not strict:
        return entry.failure
    fast = entry.fast
    if fast is not None:
        try:
            if fast(instance):  # only ever True when jsonschema would accept too
                return []
        except Exception:  # RecursionError on arguments nested past the limit: ask jsonschema
            pass
    try:
        _budget.start()
        if validator.is_valid(instance):  # the common case; collecting errors costs more
            return []
        _budget.start()
        return list(itertools.islice(validator.iter_errors(instance), _MAX_ERRORS))
    except _OverBudget as exc:
        why = (f"a check needed more than {MAX_STEPS:,} steps or {MAX_CHECK_SECONDS} s (a schema "
               "whose local $refs multiply the work, or very large arguments)")
        if exc.timed and not strict:
            entry.slow += 1
            if entry.slow < SLOW_CHECKS:  # this call only: the next is checked again
                entry.slow_note = (f"not checked locally on {entry.slow} of the calls so far: "
                                   f"{why}")
                return f"not checked locally: {why}"
    except RecursionError:
        why = "a check recursed without end (a $ref cycle, or arguments nested too deep)"
    except Exception as exc:
        why = f"the check failed: {type(exc).__name__}: {_html.shorten(str(exc), 200)}"
    finally:
        _budget.left = 0
    if not strict:
        entry.failure = f"not checked locally: {why}"
        return entry.failure
    return why


def _describe(error: jsonschema.exceptions.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path)
    field = f"field {_html.shorten(where, _SHOWN)!r}" if where else "the arguments"
    try:
        value = json.dumps(error.validator_value, default=str)
    except Exception:
        value = "..."
    rule = f"{error.validator}={_html.shorten(value, _SHOWN)}"
    return f"{field}: {_html.shorten(error.message, 200)} (rule: {rule})"


def _is_checkable(schema: object) -> bool:
    return isinstance(schema, Mapping) and bool(schema)


def schema_problems(schema: object, *, check_metaschema: bool = False) -> list[str]:
    """Why local checking is skipped or limited for ``schema``; empty when fully checked.

    Cached per schema object, and cheap (a bounded walk, about 40 µs for a small schema),
    so a catalog can ask for every tool on each display. Checking the schema against its
    metaschema costs about 2 ms, so it happens with the first check of arguments, or now
    if ``check_metaschema``; a schema found invalid, and a check that failed, are reported
    from then on.
    """
    if schema is None or (isinstance(schema, Mapping) and not schema):
        return []
    if not isinstance(schema, Mapping):
        return [f"not checked locally: the input schema is {type(schema).__name__}, "
                "not an object"]
    entry = _entry(schema)
    if check_metaschema:
        _built(entry)
    late = entry.failure or entry.slow_note
    return entry.problems + ([late] if late else [])


def validate_arguments(tool: ToolId | None, schema: object, arguments: Mapping[str, Any],
                       *, strict: bool = False) -> None:
    """Raise ``Refused`` naming each broken field and its rule (up to three) if
    ``arguments`` fail ``schema``; nothing is sent then.

    A schema that cannot be checked locally lets the arguments through (the server judges),
    unless ``strict`` (a Toolset, which is the server): then it refuses what it cannot check.
    """
    if not _is_checkable(schema):
        return
    assert isinstance(schema, Mapping)
    found = _errors(_entry(schema), dict(arguments), strict)
    if isinstance(found, str):
        if strict:
            raise Refused(f"the arguments could not be checked against the input schema: "
                          f"{found}; nothing ran", tool=tool)
        return
    if found:
        found.sort(key=lambda e: [str(p) for p in e.path])
        shown = "; ".join(_describe(e) for e in found[:3])
        more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
        raise Refused(f"arguments do not match the input schema: {shown}{more}", tool=tool)


def field_errors(schema: object, arguments: Mapping[str, Any]) -> dict[str, str]:
    """One message per top-level field (``"(arguments)"`` for the whole), for a form.

    A required field that is missing is keyed by its own name. Empty when the arguments
    pass, or when the schema is not checked locally.
    """
    if not _is_checkable(schema):
        return {}
    assert isinstance(schema, Mapping)
    instance = dict(arguments)
    found = _errors(_entry(schema), instance, strict=False)
    if isinstance(found, str):
        return {}
    errors: dict[str, str] = {}
    for error in found:
        path = list(error.absolute_path)
        if not path and error.validator == "required":
            wanted = error.validator_value if isinstance(error.validator_value, list) else []
            names = [n for n in wanted if isinstance(n, str) and n not in instance
                     and error.message == f"{n!r} is a required property"]
            if names:
                errors.setdefault(names[0], "required: enter a value")
                continue
        key = str(path[0]) if path else "(arguments)"
        where = "/".join(str(p) for p in path[1:])
        errors.setdefault(key, (f"{where}: " if where else "") + _html.shorten(error.message, 200))
    return errors


def validate_output(tool: ToolId | None, schema: object, structured: object) -> None:
    """Raise ``Malformed`` (the tool ran) naming the field and rule if a result's structured
    content fails the tool's declared output schema; the same bounds as for arguments, and a
    schema that cannot be checked locally lets the result through."""
    if not _is_checkable(schema) or structured is None:
        return
    assert isinstance(schema, Mapping)
    found = _errors(_entry(schema), structured, strict=False)  # type: ignore[arg-type]
    if isinstance(found, list) and found:
        found.sort(key=lambda e: [str(p) for p in e.path])
        shown = "; ".join(_describe(e).replace("the arguments", "the result", 1)
                          for e in found[:3])
        more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
        raise Malformed(f"structured content does not match the output schema: {shown}{more}",
                        tool=tool)


def unchecked(tool: ToolId | None, spec: object, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """What the record of a ``call(..., check=False)`` keeps in its provenance: ``check``
    False, and ``schema_error``: the refusal the local check would have made (None if the
    arguments pass)."""
    try:
        validate_arguments(tool, getattr(spec, "input_schema", None), arguments)
    except Refused as exc:
        return {"check": False, "schema_error": exc.detail}
    return {"check": False, "schema_error": None}
