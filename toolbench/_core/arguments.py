"""Tool arguments, checked once before anything is sent: a JSON object of JSON values.

A call crosses several public doors (the bench, the router, the client), and each checks what
it is handed; :class:`CheckedArguments` is the proof of an earlier check that lets the next
door copy instead of walking again. What is refused is a :class:`~toolbench._core.errors.Refused`
(``did_not_happen``): nothing was sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolbench._core import html as _html
from toolbench._core.errors import Refused
from toolbench._core.ids import ToolId

MAX_ARGUMENT_DEPTH = 200
"""Nesting levels allowed in arguments; the SDK's serialiser gives up at about 250."""
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class CheckedArguments(dict[str, Any]):
    """A copy of arguments that :func:`check_arguments` passed: the next check copies, no walk.

    A call crosses the bench, the router and the client, and each of them is a public door
    that must check what it is handed; on the bench's own path the same arguments were
    checked three or four times. Each door still gets its own copy (a
    shallow one), but a copy made from one of these skips the walk. Changing the copy at the
    top level (``args[k] = v``, ``update``, ...) makes it unchecked again, so the next door
    walks it. Nested values are shared with the caller, as they always were; only code
    between two doors could change them, and on toolbench's own path there is none.
    """

    checked = True
    """False once changed at the top level (set on the instance; copying stays C-fast)."""

    def __setitem__(self, key: str, value: Any) -> None:
        self.checked = False
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.checked = False
        super().__delitem__(key)

    def __ior__(self, other: Any) -> CheckedArguments:  # type: ignore[override,misc]
        self.checked = False
        return super().__ior__(other)  # type: ignore[return-value]

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.checked = False
        super().update(*args, **kwargs)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.checked = False
        return super().setdefault(key, default)

    def pop(self, key: str, *default: Any) -> Any:
        self.checked = False
        return super().pop(key, *default)

    def popitem(self) -> tuple[str, Any]:
        self.checked = False
        return super().popitem()

    def clear(self) -> None:
        self.checked = False
        super().clear()

    def __reduce__(self) -> Any:  # pickles (a Dask worker's job) as the plain dict it is
        return dict, (dict(self),)


def check_arguments(tool: ToolId | None, arguments: object) -> CheckedArguments:
    """Tool arguments are a JSON object of JSON values; anything else is refused before sending.

    NaN, infinities, lone surrogates, non-string keys and values that are not JSON would
    otherwise fail inside the SDK once the call counts as sent (in doubt), or go out as
    something that is not JSON at all. The common case is one recursive walk over exact
    types, cheaper than ``json.dumps``; only a failure pays for finding the path. What
    passes comes back as a :class:`CheckedArguments` copy, so the next layer's check of
    the same call is a copy, not another walk.
    """
    if type(arguments) is CheckedArguments and arguments.checked:
        return CheckedArguments(arguments)
    if arguments is None:
        return CheckedArguments()
    if not isinstance(arguments, Mapping):
        raise Refused(
            f"arguments must be an object (a mapping of names to values), not "
            f"{type(arguments).__name__} {_html.shorten(repr(arguments), 80)}",
            tool=tool,
        )
    args = CheckedArguments(arguments)
    if not _plain(args, 0):
        bad = [k for k in args if not isinstance(k, str)]
        if bad:
            raise Refused(
                f"argument names must be strings, not {_html.shorten(repr(bad[0]), 80)}",
                tool=tool)
        found = _unsendable(args)
        if found is not None:
            where, rule = found
            raise Refused(f"argument {where}: {rule}; nothing was sent", tool=tool)
    return args


def _plain_text(text: str) -> bool:
    return text.isascii() or _SURROGATE.search(text) is None


def _plain(value: Any, depth: int) -> bool:
    """True for plain JSON of exact builtin types; False means "look closer", not "bad"."""
    kind = type(value)
    if kind is dict or kind is CheckedArguments:  # the latter only at the top
        if depth >= MAX_ARGUMENT_DEPTH:
            return False
        for key, item in value.items():
            if type(key) is not str or not (key.isascii() or _SURROGATE.search(key) is None):
                return False
            sort = type(item)
            if sort is str:
                if not (item.isascii() or _SURROGATE.search(item) is None):
                    return False
            elif sort is float:
                if item - item != 0.0:  # NaN or an infinity
                    return False
            elif not (sort is int or sort is bool or item is None or _plain(item, depth + 1)):
                return False
        return True
    if kind is list or kind is tuple:
        if depth >= MAX_ARGUMENT_DEPTH:
            return False
        for item in value:
            sort = type(item)
            if sort is str:
                if not (item.isascii() or _SURROGATE.search(item) is None):
                    return False
            elif sort is float:
                if item - item != 0.0:
                    return False
            elif not (sort is int or sort is bool or item is None or _plain(item, depth + 1)):
                return False
        return True
    if kind is str:
        return _plain_text(value)
    if kind is float:
        return bool(value - value == 0.0)
    return kind is int or kind is bool or value is None


def _unsendable(arguments: dict[str, Any]) -> tuple[str, str] | None:
    """(where, rule) for the first value or key that is not JSON; subclasses of the JSON
    types (a StrEnum, an OrderedDict, numpy's float64) pass when their value does."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(arguments, ())]
    while stack:
        value, path = stack.pop()
        where = repr(_html.shorten("/".join(str(p) for p in path), 120))
        if len(path) >= MAX_ARGUMENT_DEPTH and isinstance(value, dict | list | tuple):
            return where, (f"nested deeper than {MAX_ARGUMENT_DEPTH} levels (or it contains "
                           "itself)")
        if isinstance(value, str):
            if not _plain_text(value):
                return where, _surrogate_rule(value, "the string")
        elif isinstance(value, float):
            if value != value:
                return where, "NaN is not a JSON number"
            if value - value != 0.0:
                return where, f"{value} is not a JSON number (infinity)"
        elif isinstance(value, int | bool) or value is None:
            pass
        elif isinstance(value, dict):
            children = []
            for key, item in value.items():
                at = repr(_html.shorten("/".join(str(p) for p in (*path, key)), 120))
                if not isinstance(key, str):
                    return at, f"an object key must be a string, not {type(key).__name__} " \
                        f"{_html.shorten(repr(key), 80)}"
                if not _plain_text(key):
                    return at, _surrogate_rule(key, "the key")
                children.append((item, (*path, key)))
            stack.extend(reversed(children))
        elif isinstance(value, list | tuple):
            stack.extend(reversed([(item, (*path, i)) for i, item in enumerate(value)]))
        else:
            return where, (f"{type(value).__name__} is not JSON (send a str, int, float, bool, "
                           "None, list or dict; convert it first, e.g. with str())")
    return None


def _surrogate_rule(text: str, what: str) -> str:
    found = _SURROGATE.search(text)
    code = f"U+{ord(found.group()):04X}" if found else "a surrogate"
    return f"{what} holds a lone surrogate ({code}), which is not Unicode and not JSON"
