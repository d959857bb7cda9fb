"""Tool specs: the bench's tools as each model API takes them, with names it accepts.

A pegboard name (``geo-distance``, ``files-read.file``) is legal MCP but not always a legal
function name for a provider. A name the provider's rule rejects is sanitized and given a short
stable hash of the original (``files-read_file_83f79e``), so the same catalog always gives the
same names; ``ToolSpecs.names`` maps each provider-facing name back, and a model's reply is
mapped back with ``pegboard_name``. Two tools whose sanitized names would collide are both kept,
told apart by a longer hash.

Only what a provider's API takes is copied (name, description, input schema; everything the
server declared for ``mcp``), never a server's config, and :func:`secret_free_specs` hides a
server's secrets (env, headers) wherever its tools show them, so what a bench hands a provider
never carries one. A schema form that a provider documents it rejects is reported in
``warnings`` (the same checks as the catalog report's portability rules), never silently
rewritten.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from toolbench._bench.report import portability
from toolbench._core.client import ToolSpec
from toolbench._core.html import counted

if TYPE_CHECKING:
    from toolbench._bench.servers.servers import Servers
    from toolbench._core.redact import Redactor
    from toolbench._routing.pegboard import PegBoard

FORMATS = ("openai", "anthropic", "gemini", "mcp")
"""The formats ``bench.tool_specs`` gives."""


@dataclass(frozen=True, slots=True)
class NameRule:
    """A provider's rule for a tool's name, and the documentation it follows."""

    pattern: str
    """The full-match regular expression the provider documents."""
    allowed: str
    """The characters it allows, as a regex character class (what sanitizing keeps)."""
    max_length: int
    first: str | None
    """A character class the first character must match (``None``: any allowed one)."""
    source: str

    def accepts(self, name: str) -> bool:
        return re.fullmatch(self.pattern, name) is not None


NAME_RULES: dict[str, NameRule] = {
    "openai": NameRule(
        r"[a-zA-Z0-9_-]{1,64}", "a-zA-Z0-9_-", 64, None,
        "OpenAI API reference, FunctionDefinition.name (the openai package's docstring too): "
        "\"Must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of "
        "64.\""),
    "anthropic": NameRule(
        r"[a-zA-Z0-9_-]{1,64}", "a-zA-Z0-9_-", 64, None,
        "Anthropic API reference, Messages, tools[].name: \"Must match the regex "
        "^[a-zA-Z0-9_-]{1,64}$\""),
    "gemini": NameRule(
        r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}", "a-zA-Z0-9_.:-", 64, "a-zA-Z_",
        "Gemini API reference, FunctionDeclaration.name (google-genai's too): \"Must start with "
        "a letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, "
        "colons and dashes, with a maximum length of 64.\""),
}
"""Per format; ``mcp`` has none of its own (:data:`_MCP_RULE`: names pass through unchanged,
unless two would be the same)."""
_MCP_RULE = NameRule(r"(?s).+", r"\s\S", 1 << 20, None, "MCP: tools pass through unchanged")

_ENCODE = json.JSONEncoder(ensure_ascii=False, check_circular=True, allow_nan=True).encode
HASH_CHARS = 6
"""Hex digits of the original name's SHA-256 appended to a sanitized name."""


@dataclass(frozen=True)
class ToolSpecs(Sequence[dict[str, Any]]):
    """What ``bench.tool_specs`` returns: the provider's tool dicts, as a list would hold them
    (``client.chat.completions.create(tools=list(specs))``), plus how to map names back.

    Attributes:
        format (str): ``"openai"``, ``"anthropic"``, ``"gemini"`` or ``"mcp"``.
        tools (list[dict]): the tools in that provider's shape.
        names (Mapping[str, str]): provider-facing name → pegboard name (identity where the
            pegboard name is legal for the provider). It is the way back to the real tool,
            so a tool a server named after a secret is offered under its redacted name, and
            only this mapping, which stays on the bench, holds the real one.
        warnings (list[str]): schema forms the provider documents it rejects, one line each,
            naming the tool, the form and the documentation.
    """

    format: str
    tools: list[dict[str, Any]]
    names: Mapping[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def pegboard_name(self, provider_name: str) -> str | None:
        """The pegboard name of a tool as the model named it, or ``None`` if none was offered."""
        return self.names.get(provider_name)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        return self.tools[index]

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.tools)

    def __repr__(self) -> str:
        renamed = sum(1 for a, b in self.names.items() if a != b)
        return (f"<ToolSpecs {self.format}: {counted(len(self.tools), 'tool')}, {renamed:,} "
                f"renamed, {counted(len(self.warnings), 'warning')}>")


def build_specs(tools: Iterable[tuple[str, ToolSpec]], format: str = "openai", *,
                shown: Mapping[str, str] | None = None) -> ToolSpecs:
    """The tools, each ``(pegboard name, ToolSpec)``, in ``format``'s shape with legal names.

    ``shown`` gives, for a pegboard name that must not leave the bench as it is (one holding
    a server's secret), the name to show instead (its redacted form); the provider name is
    made from that, and ``names`` still maps it back to the real pegboard name.

    Raises:
        ValueError: ``format`` is not one of ``FORMATS``.
    """
    if format not in FORMATS:
        raise ValueError(f"format {format!r} is not one of {', '.join(FORMATS)}")
    pairs = list(tools)
    seen = [(shown or {}).get(name, name) for name, _ in pairs]
    names = provider_names(seen, NAME_RULES.get(format, _MCP_RULE))
    shape = _SHAPES[format]
    out = [shape(provider, spec) for provider, (_, spec) in zip(names, pairs, strict=True)]
    warnings = [f"{label}: {problem}" for label, (_, spec) in zip(seen, pairs, strict=True)
                for problem in schema_problems(spec, format)]
    return ToolSpecs(format, out, dict(zip(names, (n for n, _ in pairs), strict=True)), warnings)


def secret_free_specs(servers: Servers, pegboard: PegBoard,
                      tools: Iterable[tuple[str, ToolSpec]], format: str = "openai"
                      ) -> ToolSpecs:
    """:func:`build_specs` of bench tools with each server's secrets (env, headers) hidden in
    everything a spec copies, its name included: a tool named after a secret is offered under
    the redacted name (sanitized and hashed where the provider needs it), which ``names``
    still maps back to the real pegboard name. What a bench sends a provider goes through
    here."""
    return specs_without_secrets(
        tools, lambda name: servers.redactor(pegboard.entry(name).server), format)


def specs_without_secrets(tools: Iterable[tuple[str, ToolSpec]],
                          redactor_of: Callable[[str], Redactor | None],
                          format: str = "openai") -> ToolSpecs:
    """:func:`secret_free_specs` given each pegboard name's server redactor
    (``redactor_of``): for work off the loop (an eval's plan), where the redactors were read
    on it."""
    pairs = []
    shown: dict[str, str] = {}
    for name, spec in tools:
        redact = redactor_of(name)
        if redact is not None:
            spec = _hidden(spec, redact)
            if (clean := redact(name)) != name:
                shown[name] = clean
        pairs.append((name, spec))
    return build_specs(pairs, format, shown=shown)


def _hidden(spec: ToolSpec, redact: Redactor) -> ToolSpec:
    """``spec`` with a server's secrets hidden in everything a spec may copy (a loop over the
    values, so a schema nested past the recursion limit is no exception)."""
    return dataclasses.replace(
        spec, description=copied(spec.description, redact), title=copied(spec.title, redact),
        input_schema=copied(spec.input_schema, redact),
        output_schema=copied(spec.output_schema, redact),
        annotations=copied(spec.annotations, redact), icons=copied(spec.icons, redact),
        meta=copied(spec.meta, redact), execution=copied(spec.execution, redact))


def provider_names(names: list[str], rule: NameRule) -> list[str]:
    """A legal, distinct provider name for each name, in order.

    A legal name is kept as it is (the first of equal ones claims it); a rejected one becomes
    its allowed characters (others → ``_``), cut to fit, plus ``_`` and a short hash of the
    whole name. On a collision the hash grows, then a count is added, until the names differ.
    """
    legal = [rule.accepts(name) for name in names]
    taken = {name for name, ok in zip(names, legal, strict=True) if ok}
    claimed: set[str] = set()
    out: list[str] = []
    for name, ok in zip(names, legal, strict=True):
        if ok and name not in claimed:
            claimed.add(name)
            out.append(name)
            continue
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
        candidates = (_sanitized(name, rule, digest[:width])
                      for width in range(HASH_CHARS, len(digest) + 1))
        candidate = next((c for c in candidates if c not in taken), None)
        count = 2
        while candidate is None or candidate in taken:
            candidate = _sanitized(name, rule, f"{digest[:HASH_CHARS]}_{count}")
            count += 1
        taken.add(candidate)
        claimed.add(candidate)
        out.append(candidate)
    return out


def _sanitized(name: str, rule: NameRule, digest: str) -> str:
    stem = re.sub(f"[^{rule.allowed}]", "_", name)
    if rule.first and not re.match(f"[{rule.first}]", stem):
        stem = "_" + stem
    return stem[: rule.max_length - len(digest) - 1] + "_" + digest


def schema_problems(spec: ToolSpec, format: str) -> list[str]:
    """What ``format``'s provider documents it rejects in ``spec``'s input schema: the catalog
    report's portability rules for that format, each line naming its rule id (whose
    documentation ``toolbench._bench.report.portability.SOURCES`` quotes)."""
    wanted = portability.FORMAT_RULES.get(format, ())
    if not wanted:
        return []
    return [f"{message} ({rule.id})"
            for rule, message in portability.problems(spec.input_schema, wanted)]


def _openai(name: str, spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "description": spec.description,
                                "parameters": _schema(spec)}
    return {"type": "function", "function": function}


def _anthropic(name: str, spec: ToolSpec) -> dict[str, Any]:
    return {"name": name, "description": spec.description, "input_schema": _schema(spec)}


def _gemini(name: str, spec: ToolSpec) -> dict[str, Any]:
    return {"name": name, "description": spec.description, "parameters": _schema(spec)}


def _mcp(name: str, spec: ToolSpec) -> dict[str, Any]:
    """The tool as MCP's ``tools/list`` gives it, under its pegboard name."""
    tool: dict[str, Any] = {"name": name, "description": spec.description,
                            "inputSchema": _schema(spec)}
    for key, value in (("title", spec.title), ("outputSchema", spec.output_schema),
                       ("annotations", spec.annotations), ("icons", spec.icons),
                       ("execution", spec.execution), ("_meta", spec.meta)):
        if value is not None:
            tool[key] = copied(value)
    return tool


def _schema(spec: ToolSpec) -> dict[str, Any]:
    """A copy, so a caller that edits a spec never edits the bench's catalog."""
    schema = spec.input_schema if isinstance(spec.input_schema, dict) else {}
    copy: dict[str, Any] = copied(schema)
    return copy


def copied(value: Any, text: Callable[[str], str] | None = None) -> Any:
    """A copy of JSON-like ``value`` (its dicts and lists new, everything else shared), with
    ``text`` applied to every string in it, keys included, when given (a server's redactor).

    A schema a server sent is JSON, so without ``text`` a JSON round trip copies it, in C; one
    it cannot take (nested past the encoder's recursion limit, or holding a value JSON has no
    form for, as an in-process tool's may), or one whose strings must pass ``text``, is copied
    by a loop, which has no recursion to overflow (``copy.deepcopy`` has, and is slower). A
    container met twice is copied once there.
    """
    if isinstance(value, str):
        return text(value) if text is not None else value
    if not isinstance(value, dict | list):
        return value
    if text is None:
        try:
            return json.loads(_ENCODE(value))
        except (TypeError, ValueError, RecursionError):
            pass
    root: dict[Any, Any] | list[Any] = {} if isinstance(value, dict) else []
    made: dict[int, dict[Any, Any] | list[Any]] = {id(value): root}
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            if isinstance(item, dict | list):
                twin = made.get(id(item))
                if twin is None:
                    twin = made[id(item)] = {} if isinstance(item, dict) else []
                    stack.append((item, twin))
                item = twin
            elif isinstance(item, str) and text is not None:
                item = text(item)
            if isinstance(target, dict):
                target[text(key) if text is not None and isinstance(key, str) else key] = item
            else:
                target.append(item)
    return root


_SHAPES = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini, "mcp": _mcp}
