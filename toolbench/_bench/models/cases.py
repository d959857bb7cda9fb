"""Eval cases: what a prompt should make a model call, read from a list, a DataFrame or a file.

A case is ``{"id", "prompt", "expect": [{"tool", "arguments", "match"}], "forbid": [...],
"order": "any" | "strict"}`` (DESIGN.md, "A model in the loop"). Tool names are bare
(``distance``): the eval matches them against each server's tool of that name, so one case
runs on every server that has it. Cases are checked here, all of them, before a model is asked
anything: a typo in the 9,000th case of a file must not be found after 8,999 paid requests. A
mistake is a :class:`CaseError` (a ``ValueError``) that names the case and the key.

Shorthands, so a case file stays short: an ``expect`` entry may be a bare tool name (any
arguments), ``arguments`` without ``match`` means ``partial``, a ``forbid`` entry is a tool name
(or ``{"tool": name}``), and a case without ``id`` is numbered by its position.

It imports only ``_core``; ``pyyaml`` (the ``evals`` extra) only when a YAML file is read.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEYS = ("id", "prompt", "expect", "forbid", "order")
EXPECT_KEYS = ("tool", "arguments", "match")
MATCHES = ("partial", "exact", "ignore")
ORDERS = ("any", "strict")
SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")


class CaseError(ValueError):
    """A case that cannot be run as written; the message names the case and the key."""


@dataclass(frozen=True, slots=True)
class Expect:
    """One tool call a case expects, and how its arguments are judged."""

    tool: str
    arguments: Mapping[str, Any]
    match: str

    def accepts(self, arguments: Mapping[str, Any] | None) -> bool:
        """Whether a call's arguments satisfy this expectation (None: unparseable, never)."""
        if self.match == "ignore":
            return True
        if arguments is None:
            return False
        if self.match == "exact":
            return _equal(arguments, self.arguments)
        return _contains(arguments, self.arguments)


@dataclass(frozen=True, slots=True)
class Case:
    """One checked case. ``prompt`` is a str or a list of OpenAI-format messages."""

    id: str
    prompt: str | list[dict[str, Any]]
    expect: tuple[Expect, ...]
    forbid: tuple[str, ...]
    order: str

    @property
    def tools(self) -> list[str]:
        """Every tool name the case mentions, expected first, each once."""
        return list(dict.fromkeys([e.tool for e in self.expect] + list(self.forbid)))

    def as_dict(self) -> dict[str, Any]:
        """The case as plain data, every key filled in (what ``tb.load_cases`` returns)."""
        return {"id": self.id, "prompt": self.prompt,
                "expect": [{"tool": e.tool, "arguments": dict(e.arguments), "match": e.match}
                           for e in self.expect],
                "forbid": list(self.forbid), "order": self.order}

    def digest(self) -> str:
        """A short hash of what the case asks and expects: a resumed eval reuses a row only
        for the same case, not for an edited one that kept its id."""
        text = json.dumps(self.as_dict(), sort_keys=True, ensure_ascii=True, default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_cases(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read eval cases from a JSON, JSON Lines or YAML file, checked, every key filled in.

    The file holds a list of cases, or ``{"cases": [...]}`` (``.jsonl``: one case a line).
    YAML needs ``pyyaml`` (``pip install 'toolbench[evals]'``).

    Args:
        path: a ``.json``, ``.jsonl``, ``.yaml`` or ``.yml`` file.

    Returns:
        The cases as dicts (``id``, ``prompt``, ``expect``, ``forbid``, ``order``), ready for
        ``bench.evaluate``.

    Raises:
        CaseError: a case with an unknown key, no prompt, a bad value (naming case and key).
        ValueError: the file cannot be read or parsed (naming the file and the line).

    Example:
        >>> cases = tb.load_cases("cases.yaml")   # doctest: +SKIP
    """
    return [case.as_dict() for case in read_cases(path)]


def read_cases(path: str | os.PathLike[str]) -> list[Case]:
    """The checked cases of a file (see :func:`load_cases`)."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"cases file {str(file)!r}: a cases file ends in "
                         f"{', '.join(SUFFIXES)}, not {suffix or 'no suffix'!r}")
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cases file {str(file)!r} cannot be read: {exc}") from exc
    data = _parse(text, suffix, str(file))
    if isinstance(data, Mapping) and set(data) == {"cases"}:
        data = data["cases"]
    if not isinstance(data, list):
        raise ValueError(f"cases file {str(file)!r} holds a {type(data).__name__}; it should "
                         "hold a list of cases, or {\"cases\": [...]}")
    return check_cases(data, where=f"{str(file)!r}: ")


def _parse(text: str, suffix: str, name: str) -> Any:
    try:
        return _parsed(text, suffix, name)
    except RecursionError:  # the parsers recurse per level: a file's depth, not a case
        raise ValueError(f"cases file {name!r} is nested too deeply to read") from None


def _parsed(text: str, suffix: str, name: str) -> Any:
    if suffix in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError as exc:
            raise ImportError(f"reading {name!r} needs pyyaml: pip install "
                              "'toolbench[evals]' (or pyyaml), or write the cases as JSON"
                              ) from exc
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"cases file {name!r} is not valid YAML: {exc}") from exc
    if suffix == ".jsonl":
        lines = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    lines.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"cases file {name!r}, line {number}, is not JSON: "
                                     f"{exc.msg}") from exc
        return lines
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"cases file {name!r} is not valid JSON: {exc.msg} at line "
                         f"{exc.lineno}, column {exc.colno}") from exc


def as_cases(cases: Any) -> list[Case]:
    """Checked cases from a list of dicts (or Cases), a DataFrame (a row each) or a file path."""
    if isinstance(cases, (str, os.PathLike)):
        return read_cases(cases)
    if hasattr(cases, "to_dict") and hasattr(cases, "columns"):  # a DataFrame, not imported
        rows = [{str(k): v for k, v in row.items() if not _missing(v)}
                for row in cases.to_dict("records")]
        return check_cases(rows, where="")
    if isinstance(cases, Mapping):
        raise CaseError("cases are a list of cases (or a DataFrame, or a file path), not one "
                        "mapping: write [case]")
    if not isinstance(cases, Iterable):
        raise CaseError(f"cases are a list, a DataFrame or a file path, not "
                        f"{type(cases).__name__}")
    return check_cases(list(cases), where="")


def check_cases(items: list[Any], *, where: str) -> list[Case]:
    """Every case checked, ids unique; the first mistake raises, naming the case and key."""
    out: list[Case] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        case = item if isinstance(item, Case) else _check(item, index, where)
        if case.id in seen:
            raise CaseError(f"{where}case {case.id!r} (#{index}): key 'id': the same id as "
                            f"case #{seen[case.id]}; ids are unique")
        seen[case.id] = index
        out.append(case)
    if not out:
        raise CaseError(f"{where}no cases: evaluate needs at least one")
    return out


def _check(item: Any, index: int, where: str) -> Case:
    if not isinstance(item, Mapping):
        raise CaseError(f"{where}case #{index} is a {type(item).__name__}, not a mapping "
                        f"with the keys {', '.join(KEYS)}")
    raw_id = item.get("id", index)
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or raw_id == "":
        raise CaseError(f"{where}case #{index}: key 'id' is a non-empty str or an int, not "
                        f"{raw_id!r}")
    name = f"{where}case {str(raw_id)!r}" + (f" (#{index})" if "id" in item else "")
    unknown = [str(k) for k in item if k not in KEYS]
    if unknown:
        from toolbench._core.ids import did_you_mean

        raise CaseError(f"{name}: unknown key {unknown[0]!r}{did_you_mean(unknown[0], KEYS)}; "
                        f"a case has the keys {', '.join(KEYS)}")
    if "prompt" not in item:
        raise CaseError(f"{name}: key 'prompt' is missing; every case has a prompt (a str, or "
                        "a list of chat messages)")
    prompt = _prompt(item["prompt"], name)
    expect = _expect(item.get("expect", []), name)
    forbid = _forbid(item.get("forbid", []), name)
    order = item.get("order", "any")
    if order not in ORDERS:
        raise CaseError(f"{name}: key 'order' is 'any' or 'strict', not {order!r}")
    both = sorted({e.tool for e in expect} & set(forbid))
    if both:
        raise CaseError(f"{name}: key 'forbid' names {both[0]!r}, which 'expect' expects")
    return Case(str(raw_id), prompt, expect, forbid, str(order))


def _prompt(value: Any, name: str) -> str | list[dict[str, Any]]:
    if isinstance(value, str):
        if not value.strip():
            raise CaseError(f"{name}: key 'prompt' is empty")
        return value
    if isinstance(value, list) and value and all(
            isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in value):
        return [dict(m) for m in value]
    raise CaseError(f"{name}: key 'prompt' is a str or a non-empty list of chat messages "
                    f"(each a mapping with a 'role'), not {_short(value)}")


def _expect(value: Any, name: str) -> tuple[Expect, ...]:
    if not isinstance(value, list):
        raise CaseError(f"{name}: key 'expect' is a list (of tool names or "
                        f"{{tool, arguments, match}}; [] for no call), not {_short(value)}")
    out = []
    for position, entry in enumerate(value):
        at = f"{name}: key 'expect[{position}]'"
        if isinstance(entry, str):
            entry = {"tool": entry}
        if not isinstance(entry, Mapping):
            raise CaseError(f"{at} is a tool name or a mapping, not {_short(entry)}")
        unknown = [str(k) for k in entry if k not in EXPECT_KEYS]
        if unknown:
            from toolbench._core.ids import did_you_mean

            raise CaseError(f"{at}: unknown key {unknown[0]!r}"
                            f"{did_you_mean(unknown[0], EXPECT_KEYS)}; an expected call has "
                            f"{', '.join(EXPECT_KEYS)}")
        tool = entry.get("tool")
        if not isinstance(tool, str) or not tool:
            raise CaseError(f"{at}: key 'tool' is a tool's bare name, not {_short(tool)}")
        arguments = entry.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise CaseError(f"{at}: key 'arguments' is a mapping, not {_short(arguments)}")
        match = entry.get("match", "partial" if arguments else "ignore")
        if match not in MATCHES:
            raise CaseError(f"{at}: key 'match' is one of {', '.join(MATCHES)}, not {match!r}")
        out.append(Expect(tool, dict(arguments), str(match)))
    return tuple(out)


def _forbid(value: Any, name: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise CaseError(f"{name}: key 'forbid' is a list of tool names, not {_short(value)}")
    out = []
    for position, entry in enumerate(value):
        tool = entry.get("tool") if isinstance(entry, Mapping) and set(entry) == {"tool"} \
            else entry
        if not isinstance(tool, str) or not tool:
            raise CaseError(f"{name}: key 'forbid[{position}]' is a tool's bare name, not "
                            f"{_short(entry)}")
        out.append(tool)
    return tuple(dict.fromkeys(out))


def _short(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def _missing(value: Any) -> bool:
    """A DataFrame's empty cell (NaN, None): the key was not given."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True is not 1, and a dict's order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (Mapping, list, tuple)) or isinstance(b, (Mapping, list, tuple)):
        return False
    return bool(a == b)


def _contains(called: Any, expected: Any) -> bool:
    """``partial``: every expected key is there with an equal value (nested mappings are
    partial too); lists and scalars are compared whole."""
    if isinstance(expected, Mapping):
        return isinstance(called, Mapping) and all(
            k in called and _contains(called[k], v) for k, v in expected.items())
    return _equal(called, expected)
