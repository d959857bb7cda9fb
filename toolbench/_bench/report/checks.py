"""One tool's report: its cost in tokens, how well its parameters are documented, and the
rules it breaks (``toolbench._bench.report.rules``).

The checks read a :class:`Declared` tool, which a catalog row and a snapshot item both give,
so a live catalog and one read back from a journal are judged alike. Everything here is
bounded by the walk (``walk.MAX_NODES`` values per schema) and by the text scans (chunked,
capped). A rule never reports more than :data:`MAX_PER_RULE` places per tool: the last
finding counts the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from toolbench._bench.report import poisoning, portability, rules
from toolbench._bench.report.quote import visible
from toolbench._bench.report.rules import Rule, finding
from toolbench._bench.report.tokens import TokenCounter
from toolbench._bench.report.walk import (
    LONG_STRING,
    MAX_NODES,
    Text,
    Walked,
    place,
    to_json,
    walk,
)

MAX_PER_RULE = 5
_MODEL_NAME = re.compile(rules.MODEL_NAME)
_NAME_CHAR = re.compile(r"[a-zA-Z0-9_-]")


class Declared(NamedTuple):
    """One tool as its server declared it: a catalog row or a snapshot item."""

    server: str
    name: str
    """The name the report shows: the pegboard name in a catalog, the tool's own name in a
    snapshot (which has no pegboard)."""
    tool: str
    description: Any = None
    input_schema: Any = None
    title: Any = None
    output_schema: Any = None
    annotations: Any = None


@dataclass(slots=True)
class Checked:
    """What the report says about one tool."""

    tokens: int
    description_chars: int
    parameters: int
    described: int
    """Parameters with a description."""
    tokenizer: str = ""
    findings: list[dict[str, str]] = field(default_factory=list)

    @property
    def documented(self) -> float | None:
        """The share of parameters with a description; None for a tool without any."""
        return self.described / self.parameters if self.parameters else None


def definition(tool: Declared, walked: Walked | None = None) -> str:
    """The tool as a model API receives it: compact JSON of its name, description and input
    schema (``{"name", "description", "input_schema"}``, the shape of Anthropic's Messages
    API; OpenAI's nests the same three fields). What a model is charged for."""
    body: dict[str, Any] = {"name": tool.tool}
    if isinstance(tool.description, str) and tool.description:
        body["description"] = tool.description
    body["input_schema"] = tool.input_schema if tool.input_schema is not None else {}
    depth = (walked.json_depth if walked is not None else 0) + 1
    long = len(body.get("description", "")) > LONG_STRING or (
        walked is not None and any(len(text) > LONG_STRING for _, text, _ in walked.texts))
    return to_json(body, depth, long)


def check(tool: Declared, counter: TokenCounter, twins: Twins | None = None) -> Checked:
    """Count, measure and check one tool; ``twins`` are the other tools of its server with
    the same description (:func:`same_descriptions`)."""
    description = tool.description if isinstance(tool.description, str) else ""
    schema = tool.input_schema
    walked = walk(schema, "inputSchema")
    params, bare = _parameters(schema)
    out = Checked(tokens=counter.count(definition(tool, walked)),
                  description_chars=len(description), parameters=len(params),
                  described=len(params) - len(bare), tokenizer=counter.name)
    found = out.findings
    if not description.strip():
        found.append(finding(rules.NO_DESCRIPTION, "the tool has no description"))
    if bare:
        names = ", ".join(repr(visible(n, 40)) for n in bare[:10])
        more = f" and {len(bare) - 10:,} more" if len(bare) > 10 else ""
        noun = "parameter" if len(bare) == 1 else "parameters"
        found.append(finding(rules.PARAMETER_NO_DESCRIPTION,
                             f"{noun} without a description: {names}{more}"))
    _capped(found, rules.REQUIRED_NOT_IN_PROPERTIES, (
        f"required {', '.join(repr(visible(n, 40)) for n in names[:10])} "
        f"{'is' if len(names) == 1 else 'are'} not in the properties of {place(where)}"
        for where, names in walked.missing_required))
    _capped(found, rules.LONG, _long_descriptions(description, walked.texts))
    if walked.depth > rules.MAX_SCHEMA_DEPTH:
        deep = f"at least {walked.depth:,}" if walked.cut else f"{walked.depth:,}"
        found.append(finding(rules.DEEP_SCHEMA, f"the input schema is nested {deep} levels "
                                                f"deep (at {place(walked.deepest)})"))
    _capped(found, rules.SINGLE_ENUM, (f"{place(where)} has one value" for where in
                                       walked.single_enums))
    if not _MODEL_NAME.fullmatch(tool.tool):
        found.append(finding(rules.NAME_NOT_MODEL_SAFE, _name_problem(tool.tool)))
    if twins is not None and twins.count:
        others = ", ".join(repr(visible(n, 60)) for n in twins.names)
        more = f" and {twins.count - len(twins.names):,} more" if twins.count > 3 else ""
        found.append(finding(rules.DUPLICATE_DESCRIPTION,
                             f"the same description as {others}{more}"))
    others_walked = [walk(tool.output_schema, "outputSchema"), walk(tool.annotations,
                                                                     "annotations")]
    texts: list[Text] = [
        ((None, "name"), tool.tool, False),
        *([((None, "title"), tool.title, False)] if isinstance(tool.title, str) else []),
        ((None, "description"), description, True),
        *walked.texts, *others_walked[0].texts, *others_walked[1].texts]
    found.extend(_poisoning(texts))
    found.extend(finding(rule, message) for rule, message in portability.problems(schema))
    for label, each in (("input schema", walked), ("output schema", others_walked[0]),
                        ("annotations", others_walked[1])):
        if each.cut:
            found.append(finding(rules.NOT_FULLY_CHECKED,
                                 f"the {label} has more than {MAX_NODES:,} values; the first "
                                 f"{MAX_NODES:,} were checked"))
    return out


def _parameters(schema: Any) -> tuple[list[str], list[str]]:
    """The parameters (top-level properties) and those without a description."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping):
        return [], []
    names = [str(k) for k in props]
    bare = [str(k) for k, sub in props.items() if not _has_description(sub, schema)]
    return names, bare


def _has_description(sub: Any, root: Mapping[str, Any]) -> bool:
    """A description on the parameter, or on the definition its local ``$ref`` names."""
    if not isinstance(sub, Mapping):
        return False
    text = sub.get("description")
    if isinstance(text, str) and text.strip():
        return True
    ref = sub.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and ref.count("/") == 2:
        _, section, key = ref.split("/")
        defs = root.get(section)
        target = defs.get(key) if isinstance(defs, Mapping) else None
        text = target.get("description") if isinstance(target, Mapping) else None
        return isinstance(text, str) and bool(text.strip())
    return False


def _long_descriptions(description: str, texts: Iterable[Text]) -> Iterable[str]:
    if len(description) > rules.LONG_DESCRIPTION:
        yield f"the description is {len(description):,} characters"
    for where, text, prose in texts:
        if prose and len(text) > rules.LONG_DESCRIPTION:
            yield f"{place(where)} is {len(text):,} characters"


def _name_problem(name: str) -> str:
    shown = repr(visible(name, 80))
    if not name:
        return "the name is empty"
    if len(name) > 64:
        return f"the name {shown} is {len(name):,} characters (at most 64)"
    bad = sorted({c for c in name[:1000] if not _NAME_CHAR.fullmatch(c)})[:5]
    listed = ", ".join(repr(visible(c, 10)) for c in bad)
    return f"the name {shown} has characters outside [a-zA-Z0-9_-]: {listed}"


def _capped(found: list[dict[str, str]], rule: Rule, messages: Iterable[str]) -> None:
    """At most :data:`MAX_PER_RULE` findings of ``rule``; the last one counts the rest."""
    extra = 0
    for n, message in enumerate(messages):
        if n < MAX_PER_RULE:
            found.append(finding(rule, message))
        else:
            extra += 1
    if extra:
        found.append(finding(rule, f"and {extra:,} more like it"))


def _poisoning(texts: Sequence[Text]) -> list[dict[str, str]]:
    hits = poisoning.scan([t[1] for t in texts], [t[2] for t in texts])
    if not hits:
        return []
    grouped: dict[tuple[str, int], list[str]] = {}
    for hit in hits:
        grouped.setdefault((hit.rule.id, hit.text), []).append(hit.what)
    out: list[dict[str, str]] = []
    for rule in rules.RULES:
        messages = []
        for (rule_id, i), whats in grouped.items():
            if rule_id == rule.id:
                shown = ", ".join(whats[:5]) + (f" and {len(whats) - 5:,} more"
                                                 if len(whats) > 5 else "")
                messages.append(f"{shown} in {_where(texts[i])}")
        _capped(out, rule, messages)
    return out


def _where(text: Text) -> str:
    where = place(text[0])
    return f"the {where}" if where in ("name", "title", "description") else where


@dataclass(frozen=True, slots=True)
class Twins:
    """The other tools of a server with a tool's description: up to three names, and how
    many there are in all."""

    names: list[str]
    count: int


def same_descriptions(tools: Sequence[Declared]) -> list[Twins | None]:
    """For each tool, the other tools of its server with the same (non-empty) description;
    linear, however many share one."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, tool in enumerate(tools):
        text = tool.description.strip() if isinstance(tool.description, str) else ""
        if text:
            groups.setdefault((tool.server, text), []).append(i)
    out: list[Twins | None] = [None] * len(tools)
    for members in groups.values():
        if len(members) > 1:
            for i in members:
                names = [tools[j].tool for j in members[:4] if j != i][:3]
                out[i] = Twins(names, len(members) - 1)
    return out
