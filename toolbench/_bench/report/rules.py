"""The rules a catalog report checks: a fixed catalog, each with an id, a severity and a
one-line reason.

The rules *report*; none of them blocks a call or changes what the bench sends. A user who
wants a tool blocked until a person has looked at it uses pins (``Bench(pins=...)``).
Severities, worst first: ``error`` (the definition is broken for a model API, or is a likely
attack), ``warning`` (it costs a model or misleads it), ``info`` (worth a look).
``toolbench report --fail-on error|warning`` exits 1 when a finding reaches the severity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

SEVERITIES = ("error", "warning", "info")
"""Worst first."""
LONG_DESCRIPTION = 1_024
"""Characters past which a description costs more than it tells."""
MAX_SCHEMA_DEPTH = 5
"""Schema levels (the root is 1, a parameter 2) past which models fill a schema poorly."""
MODEL_NAME = r"^[a-zA-Z0-9_-]{1,64}$"
"""What the model APIs accept as a tool's name (OpenAI's and Anthropic's rule)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: its ``id`` (what a finding names), ``severity`` and one-line ``reason``."""

    id: str
    severity: str
    reason: str


NO_DESCRIPTION = Rule("no-description", "warning",
                      "the tool has no description: a model has to guess what it does")
PARAMETER_NO_DESCRIPTION = Rule(
    "parameter-no-description", "warning",
    "a parameter has no description: a model has to guess what to pass")
REQUIRED_NOT_IN_PROPERTIES = Rule(
    "required-not-in-properties", "error",
    "a required parameter is not in properties: a model cannot learn its type or meaning")
LONG = Rule("long-description", "warning",
            f"a description is over {LONG_DESCRIPTION:,} characters: it costs context on every "
            f"request that offers the tool")
DEEP_SCHEMA = Rule("deep-schema", "warning",
                   f"a schema is nested deeper than {MAX_SCHEMA_DEPTH} levels: models fill deep "
                   f"structures poorly")
SINGLE_ENUM = Rule("single-value-enum", "info",
                   "an enum has a single value: a constant that the model must still send")
NAME_NOT_MODEL_SAFE = Rule("name-not-model-safe", "error",
                           f"the tool's name does not match {MODEL_NAME}, which model APIs "
                           f"require")
DUPLICATE_DESCRIPTION = Rule(
    "duplicate-description", "warning",
    "two tools on one server have the same description: a model cannot tell them apart")
INVISIBLE = Rule("poisoning-invisible-unicode", "error",
                 "possible tool poisoning: invisible Unicode (zero-width, bidi controls, tag "
                 "characters) shows text to a model that a person does not see")
INSTRUCTIONS = Rule("poisoning-instructions", "error",
                    "possible tool poisoning: text aimed at the model (\"ignore previous "
                    "instructions\", \"do not tell the user\", an <IMPORTANT> block)")
BASE64 = Rule("poisoning-base64", "warning",
              "possible tool poisoning: a long base64-looking run can carry hidden "
              "instructions or data")
URL = Rule("poisoning-url", "info",
           "possible tool poisoning: a URL in a description can lead a model to fetch it or "
           "send data to it")
NOT_FULLY_CHECKED = Rule("not-fully-checked", "warning",
                         "a schema is larger than the report's bound: the rest of it was not "
                         "checked")

# Portability: what one provider documents it rejects (``portability.py`` checks them and
# ``bench.tool_specs`` warns of them; ``portability.SOURCES`` quotes each one's documentation).
# Gemini's are ``info``: its Schema is a subset most JSON Schema generators overstep (zod's
# ``$schema``, ``additionalProperties``), and many clients convert for it, so they must not fail
# a ``--fail-on warning`` gate that passed before; a non-object input schema breaks MCP's own
# rule too, so Anthropic's is an ``error``.
ANTHROPIC_NOT_OBJECT = Rule(
    "anthropic-input-schema-not-object", "error",
    "the input schema's type is not \"object\", which Anthropic's Messages API requires of "
    "tools[].input_schema")
GEMINI_KEYWORD = Rule(
    "gemini-unsupported-keyword", "info",
    "a schema keyword outside the Gemini API's Schema, a select subset of OpenAPI 3.0 (such as "
    "$ref, oneOf, const, additionalProperties)")
GEMINI_TYPE_LIST = Rule(
    "gemini-type-list", "info",
    "a schema's type is a list (such as [\"string\", \"null\"]); the Gemini API's Schema.type "
    "is one type, with nullable for null")
GEMINI_ENUM = Rule(
    "gemini-enum-not-strings", "info",
    "an enum holds values that are not strings; the Gemini API's Schema.enum is a list of "
    "strings")

RULES: tuple[Rule, ...] = (
    NO_DESCRIPTION, PARAMETER_NO_DESCRIPTION, REQUIRED_NOT_IN_PROPERTIES, LONG, DEEP_SCHEMA,
    SINGLE_ENUM, NAME_NOT_MODEL_SAFE, DUPLICATE_DESCRIPTION, INVISIBLE, INSTRUCTIONS, BASE64,
    URL, NOT_FULLY_CHECKED, ANTHROPIC_NOT_OBJECT, GEMINI_KEYWORD, GEMINI_TYPE_LIST, GEMINI_ENUM,
)
BY_ID = {rule.id: rule for rule in RULES}
RULE_COLUMNS = ("rule", "severity", "reason")


def finding(rule: Rule, message: str) -> dict[str, str]:
    """A finding, as the report's ``findings`` column holds it."""
    return {"rule": rule.id, "severity": rule.severity, "message": message}


def reaches(severity: str, threshold: str) -> bool:
    """Whether ``severity`` is at least as bad as ``threshold`` (``error`` reaches
    ``warning``)."""
    if threshold not in SEVERITIES:
        raise ValueError(f"severity {threshold!r} is not one of {', '.join(SEVERITIES)}")
    return severity in SEVERITIES and SEVERITIES.index(severity) <= SEVERITIES.index(threshold)


def report_rules() -> pd.DataFrame:
    """The rules that ``df.tb.report()`` checks, one row each: ``rule`` (the id a finding
    names), ``severity`` (``error``, ``warning`` or ``info``) and ``reason`` (one line).

    The rules report and never block a call; to block a tool until a person approves it, use
    pins (``Bench(pins=...)``).
    """
    import pandas as pd

    return pd.DataFrame([(r.id, r.severity, r.reason) for r in RULES],
                        columns=list(RULE_COLUMNS))
