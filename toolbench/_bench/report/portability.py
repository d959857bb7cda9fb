"""Portability: the schema forms one model provider documents it rejects.

MCP lets a tool declare any JSON Schema; a provider's tool format takes less. Each rule here
follows one provider's own documentation (quoted in :data:`SOURCES`), and nothing else: a
form a provider merely handles poorly is not a portability finding. The same checks feed the
catalog report (``df.tb.report()``, rule ids in ``rules.RULES``) and ``bench.tool_specs``'s
``warnings`` for the matching format, so the two never disagree.

OpenAI's Chat Completions takes ``parameters`` "described as a JSON Schema object" (the
``openai`` package's ``FunctionDefinition``): without ``strict`` it documents no schema form
it rejects, so no rule here is OpenAI's. Tool *names* are not checked here: ``tool_specs``
renames what a provider's name rule rejects (and maps it back), and the report's
``name-not-model-safe`` covers the rule OpenAI and Anthropic share.

The walk is iterative and bounded (:data:`MAX_NODES` schema nodes), since a catalog is
untrusted input; each rule names at most :data:`MAX_PER_RULE` places, the last counting the
rest.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from toolbench._bench.report import rules
from toolbench._bench.report.quote import visible
from toolbench._bench.report.rules import Rule
from toolbench._bench.report.walk import Place, place

MAX_NODES = 100_000
"""Schema nodes visited per tool; past it the rest is not checked (the report's
``not-fully-checked`` already says so of a schema that large)."""
MAX_PER_RULE = 5

SOURCES: dict[str, str] = {
    rules.ANTHROPIC_NOT_OBJECT.id:
        "Anthropic API reference, Messages, tools[].input_schema: \"JSON schema for this "
        "tool's input\" with type: \"object\" required (the anthropic package's "
        "ToolParam.input_schema: type is Literal[\"object\"])",
    rules.GEMINI_KEYWORD.id:
        "Gemini API reference, FunctionDeclaration.parameters and Schema: \"Represents a select "
        "subset of an OpenAPI 3.0 schema object\"; its fields are type, format, title, "
        "description, nullable, enum, maxItems, minItems, properties, required, minProperties, "
        "maxProperties, minLength, maxLength, pattern, example, anyOf, propertyOrdering, "
        "default, items, minimum and maximum",
    rules.GEMINI_TYPE_LIST.id:
        "Gemini API reference, Schema.type: one Type (STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, "
        "OBJECT); Schema.nullable: \"Indicates if the value may be null\"",
    rules.GEMINI_ENUM.id:
        "Gemini API reference, Schema.enum: string[], \"Possible values of the element of "
        "primitive type with enum format\"",
}
"""Rule id → the provider documentation it follows, quoted."""

FORMAT_RULES: dict[str, tuple[Rule, ...]] = {
    "openai": (),
    "anthropic": (rules.ANTHROPIC_NOT_OBJECT,),
    "gemini": (rules.GEMINI_KEYWORD, rules.GEMINI_TYPE_LIST, rules.GEMINI_ENUM),
    "mcp": (),
}
"""Which rules each ``tool_specs`` format warns of."""
PORTABILITY_RULES: tuple[Rule, ...] = tuple(r for rs in FORMAT_RULES.values() for r in rs)

GEMINI_FIELDS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
    "maximum"})
"""The Gemini API's ``Schema`` fields (v1beta)."""


def problems(schema: Any, wanted: tuple[Rule, ...] = PORTABILITY_RULES,
             root: str = "inputSchema") -> list[tuple[Rule, str]]:
    """``(rule, message)`` for each of ``wanted`` that ``schema`` breaks, in rule order."""
    found: dict[str, list[str]] = {rule.id: [] for rule in wanted}
    extra: dict[str, int] = dict.fromkeys(found, 0)

    def add(rule: Rule, message: Callable[[], str]) -> None:
        """Keep the message (spelled out only if it is kept), or count it past the cap."""
        if rule.id not in found:
            return
        if len(found[rule.id]) < MAX_PER_RULE:
            found[rule.id].append(message())
        else:
            extra[rule.id] += 1

    if rules.ANTHROPIC_NOT_OBJECT.id in found:
        kind = schema.get("type") if isinstance(schema, Mapping) else None
        if kind != "object":
            shown = ("the input schema is not a JSON object" if not isinstance(schema, Mapping)
                     else f"the input schema's type is {_shown(kind)}")
            add(rules.ANTHROPIC_NOT_OBJECT, lambda: shown)
    if any(r.id.startswith("gemini-") for r in wanted):
        for where, node in _gemini_nodes(schema, root):
            _gemini(node, where, add)
    out: list[tuple[Rule, str]] = []
    for rule in wanted:
        out.extend((rule, message) for message in found[rule.id])
        if extra[rule.id]:
            out.append((rule, f"and {extra[rule.id]:,} more like it"))
    return out


def _gemini(node: Mapping[Any, Any], where: Place,
            add: Callable[[Rule, Callable[[], str]], None]) -> None:
    for key in node:
        if key not in GEMINI_FIELDS:
            add(rules.GEMINI_KEYWORD, functools.partial(_at, key, where))
    kind = node.get("type")
    if isinstance(kind, list):
        add(rules.GEMINI_TYPE_LIST, lambda: f"{place(where)} has type {_shown(kind)}")
    values = node.get("enum")
    if isinstance(values, list):
        odd = [v for v in values[:1000] if not isinstance(v, str)]
        if odd:
            more = f" and {len(odd) - 1:,} more" if len(odd) > 1 else ""
            add(rules.GEMINI_ENUM, lambda: f"{place(where)} enum holds {_shown(odd[0])}{more}")


def _gemini_nodes(schema: Any, root: str) -> Iterator[tuple[Place, Mapping[Any, Any]]]:
    """Each schema Gemini would read, through the fields it has (``properties``, ``items``,
    ``anyOf``); what hangs under an unsupported keyword is reported once, at the keyword."""
    stack: list[tuple[Place, Any]] = [((None, root), schema)]
    visited = 0
    while stack and visited < MAX_NODES:
        where, node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        visited += 1
        yield where, node
        children: list[tuple[Place, Any]] = []
        props = node.get("properties")
        if isinstance(props, Mapping):
            here: Place = (where, "properties")
            children.extend(((here, str(k)), v) for k, v in props.items())
        items = node.get("items")
        if isinstance(items, Mapping):
            children.append(((where, "items"), items))
        any_of = node.get("anyOf")
        if isinstance(any_of, list):
            listed: Place = (where, "anyOf")
            children.extend(((listed, f"[{i}]"), v) for i, v in enumerate(any_of))
        stack.extend(reversed(children))


def _at(key: Any, where: Place) -> str:
    return f"{_shown(key)} at {place(where)}"


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return repr(visible(text, 60)) if isinstance(value, str) else visible(text, 60)
