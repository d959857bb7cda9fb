"""The pegboard's names: the rules a separator, a namespace and a prefixed name follow, the
entries a server's listing gives (and the tools it skips), and close names for a typo.

Everything here is pure. ``toolbench._routing.pegboard_board`` keeps the entries in its
snapshot, and ``toolbench._routing.pegboard`` checks a value once, at its public door, and
passes it on checked.
"""

from __future__ import annotations

import enum
import heapq
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from toolbench._core.client import ToolSpec
from toolbench._core.ids import SERVER_RULE, TOOL_RULE, ToolId, is_server_name, is_tool_name

_log = logging.getLogger("toolbench.pegboard")

SEPARATOR_RULE = (
    "a separator is 1 or more characters of the MCP tool-name alphabet [A-Za-z0-9_.-], "
    "because the prefixed name is sent onward as a tool name (\"-\", \"__\", \".\" work; "
    "\"::\" does not)"
)
NAMESPACE_RULE = f"a namespace is {SERVER_RULE} (the server-name rule), or None/'' for none"
SKIP_INVALID = f"the name breaks the MCP tool-name rule, {TOOL_RULE}"
SKIP_REPEATED = "the server lists the name more than once, so which one runs is unknown"
SKIP_TOO_LONG = f"the prefixed name would break the MCP tool-name rule, {TOOL_RULE}"
_SUGGESTION_POOL = 200
_SHOWN_SKIPPED = 10
_SHOWN_NAME_CHARS = 80


class _Default(enum.Enum):
    SERVER = "the server name"


USE_SERVER_NAME = _Default.SERVER
"""The default namespace of ``add_service``: the server's own name."""

Namespace = str | Literal[_Default.SERVER] | None
"""A tools' name prefix: text, the server's own name (the default), or none."""


@dataclass(frozen=True, slots=True)
class PegEntry:
    """One name on the board: the spec handed out (renamed) and where it routes back to."""

    name: str
    server: str
    tool: str
    namespace: str
    spec: ToolSpec
    tool_id: ToolId


# -- the rules, checked at the pegboard's doors ------------------------------------------------
def check_name_arg(name: object, what: str = "tool name") -> str:
    if not isinstance(name, str):
        raise TypeError(f"a {what} is a str, not {type(name).__name__} {name!r}")
    return name


def check_separator(separator: object) -> str:
    if not isinstance(separator, str):
        raise TypeError(f"separator must be a str, not {type(separator).__name__} {separator!r}")
    if not separator or not is_tool_name(separator):
        raise ValueError(f"invalid separator {separator!r}: {SEPARATOR_RULE}")
    return separator


def check_namespace(namespace: object) -> str:
    """``None``/``""`` mean 'no prefix'; anything else must be a valid namespace."""
    if namespace is None or namespace == "":
        return ""
    if not isinstance(namespace, str):
        raise TypeError(
            f"a namespace is a str or None, not {type(namespace).__name__} {namespace!r}"
        )
    if not is_server_name(namespace):
        raise ValueError(f"invalid namespace {namespace!r}: {NAMESPACE_RULE}")
    return namespace


def check_tool_arg(tool: object) -> str:
    """A tool name handed in by hand: a str that follows the MCP rule."""
    name = check_name_arg(tool)
    if not is_tool_name(name):
        raise ValueError(f"invalid tool name {name!r}: a tool name is {TOOL_RULE}")
    return name


def prefixed_name(separator: str, namespace: str, tool: str) -> str:
    """The name ``tool`` gets in ``namespace``, all three already checked; raises when the
    prefixed name is too long to be a tool name."""
    name = f"{namespace}{separator}{tool}" if namespace else tool
    if not is_tool_name(name):
        raise ValueError(
            f"prefixed name {name!r} is {len(name)} characters long: a tool name is "
            f"{TOOL_RULE}; use a shorter namespace"
        )
    return name


# -- a listing's entries -----------------------------------------------------------------------
def entries_for(separator: str, server: str, namespace: str, specs: Iterable[ToolSpec],
                ) -> tuple[list[PegEntry], list[tuple[str, str]]]:
    """The entries to register, and ``(name, reason)`` for every tool skipped.

    One broken tool must not take its whole server down (DESIGN, "Be all-or-nothing by
    accident"): a name that breaks the MCP rule, or whose prefixed form would, is
    skipped; so is every copy of a name the server lists more than once, since nothing
    says which copy's schema the server applies.
    """
    specs = list(specs)
    for spec in specs:
        if not isinstance(spec, ToolSpec):
            raise TypeError(f"server {server!r} listed {spec!r}, which is not a ToolSpec")
    counts: dict[str, int] = {}
    for spec in specs:
        counts[spec.name] = counts.get(spec.name, 0) + 1
    entries: list[PegEntry] = []
    skipped: list[tuple[str, str]] = []
    repeated: set[str] = set()
    for spec in specs:
        if not is_tool_name(spec.name):
            skipped.append((spec.name, SKIP_INVALID))
            continue
        if counts[spec.name] > 1:
            if spec.name not in repeated:  # a set: 10,000 copies of a name stay linear
                repeated.add(spec.name)
                skipped.append((spec.name, SKIP_REPEATED))
            continue
        name = f"{namespace}{separator}{spec.name}" if namespace else spec.name
        if not is_tool_name(name):
            skipped.append((spec.name, SKIP_TOO_LONG))
            continue
        out = spec if name == spec.name else spec.renamed(name)
        entries.append(PegEntry(name, server, spec.name, namespace, out,
                                ToolId(server, spec.name)))
    if skipped:
        # Counts and reasons only: a tool name is the server's text and may echo a
        # secret; the names go to ``skipped(server)``, which the bench shows redacted.
        reasons = sorted({reason for _, reason in skipped})
        _log.warning("server %r: skipped %d tool(s) (%s); PegBoard.skipped(%r) names them",
                     server, len(skipped), "; ".join(reasons), server)
    return entries, skipped


def describe_skipped(skipped: Iterable[tuple[str, str]]) -> list[str]:
    """One line per reason, naming (capped, repr-quoted) the tools skipped for it."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in skipped:
        by_reason.setdefault(reason, []).append(name)
    lines = []
    for reason, names in by_reason.items():
        shown = ", ".join(repr(n if len(n) <= _SHOWN_NAME_CHARS
                               else n[:_SHOWN_NAME_CHARS] + "...")
                          for n in names[:_SHOWN_SKIPPED])
        if len(names) > _SHOWN_SKIPPED:
            shown += f" and {len(names) - _SHOWN_SKIPPED} more"
        lines.append(f"skipped {len(names)} tool{'s' if len(names) != 1 else ''} "
                     f"({reason}): {shown}")
    return lines


# -- close names -------------------------------------------------------------------------------
def _bigrams(text: str) -> set[str]:
    folded = text.lower()
    return {folded[i:i + 2] for i in range(len(folded) - 1)} or {folded}


def suggestion_pool(names: tuple[str, ...], name: str) -> Iterable[str]:
    """The names worth giving to difflib: on a big board, those sharing most letter pairs.

    difflib compares each candidate in full, which costs tens of ms per thousand similar
    names; a cheap bigram overlap keeps an error message fast on a 10,000-tool board.
    """
    if len(names) <= _SUGGESTION_POOL:
        return names
    grams = _bigrams(name)
    return heapq.nlargest(_SUGGESTION_POOL, names, key=lambda n: len(grams & _bigrams(n)))
