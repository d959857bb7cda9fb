"""Argument names a tool does not declare: a misspelt name is refused, not silently dropped.

JSON Schema lets an object carry names its ``properties`` do not list unless
``additionalProperties`` is ``false``, and most servers built on pydantic ignore such extras:
``units="mi"`` for a parameter named ``unit`` runs the tool with its default and answers
without a word. The client is the only place where that mistake can be caught, so a name the
input schema does not declare is ``Refused`` (nothing is sent), with up to three close names,
unless the schema admits other names (and when its root says ``additionalProperties: false``,
the schema's own check refuses them): ``additionalProperties`` (or
``unevaluatedProperties``) set to ``true`` or to a schema, or a ``patternProperties`` pattern
that matches the name. ``call(..., check=False)`` sends it anyway.

Only what a schema says plainly is judged: the names come from the root's ``properties`` and
those of the subschemas it combines (``allOf``, ``anyOf``, ``oneOf``, ``if``/``then``/``else``,
``dependentSchemas``). A schema that declares no ``properties`` at all, refers elsewhere
(``$ref``), or has a pattern re2 cannot compile, is not judged: the server decides.

The declared names are worked out once per schema (the schema cache keeps them); a call pays
one ``frozenset.issuperset`` over its argument names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from toolbench._core import html as _html
from toolbench._core.ids import did_you_mean
from toolbench._core.schema.keywords import regex

_COMBINED = ("allOf", "anyOf", "oneOf")
_BRANCHES = ("if", "then", "else")
_ELSEWHERE = ("$ref", "$dynamicRef", "$recursiveRef")
_MAX_SUBSCHEMAS = 64  # combined subschemas looked at; past this the schema is not judged
_SHOWN_NAMES = 20  # parameters listed in a refusal


@dataclass(frozen=True, slots=True)
class Declared:
    """The names a schema declares, and the patterns (compiled re2) that admit others."""

    names: frozenset[str]
    patterns: tuple[Any, ...] = ()

    def unknown(self, arguments: Iterable[str]) -> list[str]:
        """The argument names this schema does not admit, in the order given."""
        return [key for key in arguments
                if key not in self.names and not self._matched(key)]

    def _matched(self, key: object) -> bool:
        for pattern in self.patterns:
            try:
                if isinstance(key, str) and pattern.search(key):
                    return True
            except Exception:  # a name re2 cannot take (a lone surrogate): cannot be told
                return True  # locally, so the server judges it
        return False

    def refusal(self, unknown: list[str]) -> str:
        """Why the call is refused: each unknown name, its close names, the rule."""
        shown = sorted(self.names)
        listed = ", ".join(shown[:_SHOWN_NAMES]) or "none"
        if len(shown) > _SHOWN_NAMES:
            listed += f" and {len(shown) - _SHOWN_NAMES} more"
        told = "; ".join(
            f"{_html.shorten(repr(name), 80)}{did_you_mean(str(name), shown)}"
            for name in unknown[:3])
        more = f"; and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        noun = "parameter" if len(unknown) == 1 else "parameters"
        return (f"no {noun} {told}{more} (its parameters: {listed}; the input schema admits no "
                "other names: its additionalProperties is not true or a schema); nothing was "
                "sent (call(..., check=False) sends it anyway)")


def declared(schema: Mapping[str, Any]) -> Declared | None:
    """What ``schema`` declares, or None when it admits any name or cannot be judged."""
    try:
        return _declared(schema)
    except Exception:  # whatever a hostile schema finds: not judged, the server decides
        return None


def _declared(schema: Mapping[str, Any]) -> Declared | None:
    names: set[str] = set()
    patterns: list[Any] = []
    said = False  # some subschema declares ``properties``
    stack: list[Any] = [schema]
    seen = 0
    while stack:
        sub = stack.pop()
        seen += 1
        if seen > _MAX_SUBSCHEMAS:
            return None
        if isinstance(sub, bool):
            continue  # ``true``/``false`` subschemas declare no names
        if not isinstance(sub, Mapping):
            return None
        if any(key in sub for key in _ELSEWHERE):
            return None
        for key in ("additionalProperties", "unevaluatedProperties"):
            if key in sub and sub[key] is not False:
                return None
        if sub is schema and sub.get("additionalProperties") is False:
            return None  # the schema refuses other names itself, naming them
        properties = sub.get("properties")
        if properties is not None:
            if not isinstance(properties, Mapping):
                return None
            said = True
            names.update(k for k in properties if isinstance(k, str))
        found = sub.get("patternProperties")
        if found is not None:
            if not isinstance(found, Mapping):
                return None
            for pattern in found:
                compiled = regex(pattern) if isinstance(pattern, str) else None
                if compiled is None or isinstance(compiled, str):
                    return None  # re2 cannot tell which names it admits: not judged
                patterns.append(compiled)
        for key in _COMBINED:
            branches = sub.get(key)
            if isinstance(branches, list | tuple):
                stack.extend(branches)
            elif branches is not None:
                return None
        stack.extend(sub[key] for key in _BRANCHES if key in sub)
        dependent = sub.get("dependentSchemas")
        if isinstance(dependent, Mapping):
            stack.extend(dependent.values())
        elif dependent is not None:
            return None
    if not said and not patterns:
        return None
    return Declared(frozenset(names), tuple(patterns))
