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

The pieces live apart: the limits in ``toolbench._core.schema.limits``, the validator class
(re2 keywords, the budget, no retrieval) in ``toolbench._core.schema.keywords``, the fast
path in ``toolbench._core.schema.fast``; this module surveys, compiles, caches and checks.

Entries are cached per schema object (the cache holds the object, so its id cannot be
reused while the entry lives). The walk and the patterns are done when a schema is first
seen; the validator, and the check of the schema against its metaschema (about 2 ms), when
it is first used; so each tool's schema is compiled once.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._core.errors import Malformed, Refused
from toolbench._core.ids import ToolId
from toolbench._core.schema import preload as _preload
from toolbench._core.schema.fast import fast as _fast
from toolbench._core.schema.keywords import (
    OverBudget,
    budget,
    refuse_retrieval,
    regex,
    validator_class,
)
from toolbench._core.schema.limits import (
    MAX_CHECK_SECONDS,
    MAX_DEPTH,
    MAX_NODES,
    MAX_STEPS,
    MAX_TEXT,
    SLOW_CHECKS,
)
from toolbench._core.schema.names import Declared, declared

if TYPE_CHECKING:
    import jsonschema.exceptions


MAX_PROBLEMS = 10
_MAX_ERRORS = 100  # errors collected from one failing check
_CACHE_LIMIT = 32_768  # above the 10,000 tools a catalog is bounded by (DESIGN), so a
# catalog of that many tools never clears the cache it is reading from (issue 46)
_SHOWN = 80  # characters of a server's string shown in a reason

_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")



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
    named: bool = False  # ``names`` worked out (once, on the first check of arguments)
    names: Declared | None = None  # the argument names it declares; None: any name goes

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


def _quote(text: object) -> str:
    return repr(_html.shorten(str(text), _SHOWN))


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
            why = regex(pattern)
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
    cls = validator_class(base, skip_unevaluated)
    registry: Any = referencing.Registry(retrieve=refuse_retrieval)  # type: ignore[call-arg]
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
        budget.start(MAX_STEPS, MAX_CHECK_SECONDS)
        if validator.is_valid(instance):  # the common case; collecting errors costs more
            return []
        budget.start(MAX_STEPS, MAX_CHECK_SECONDS)
        return list(itertools.islice(validator.iter_errors(instance), _MAX_ERRORS))
    except OverBudget as exc:
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
        budget.left = 0
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
    ``arguments`` fail ``schema``, or name a parameter it does not declare (with close
    names; ``toolbench._core.schema.names``); nothing is sent then.

    A schema that cannot be checked locally lets the arguments through (the server judges),
    unless ``strict`` (a Toolset, which is the server): then it refuses what it cannot check.
    """
    if not _is_checkable(schema):
        return
    assert isinstance(schema, Mapping)
    entry = _entry(schema)
    if not strict:  # a name the schema does not declare: a typo, refused (schema/names.py)
        if not entry.named:
            entry.names, entry.named = declared(schema), True
        names = entry.names
        if names is not None and not names.names.issuperset(arguments):
            unknown = names.unknown(arguments)
            if unknown:
                raise Refused(names.refusal(unknown), tool=tool)
    found = _errors(entry, dict(arguments), strict)
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
