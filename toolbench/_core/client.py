"""The protocol every transport speaks, and the two values it trades in."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolbench._core import html as _html
from toolbench._core.errors import Refused
from toolbench._core.ids import Destination, Provenance, ToolId


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as its server declared it: nothing added, nothing inferred."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    title: str | None = None
    icons: list[dict[str, Any]] | None = None
    """The server's icons for the tool (``src`` as text; never fetched)."""
    meta: dict[str, Any] | None = None
    """The tool's ``_meta``, capped (a note replaces one over 10 kB of JSON)."""
    execution: dict[str, Any] | None = None
    """How the tool runs (``taskSupport``: ``"required"`` means only as a task)."""

    @property
    def task_only(self) -> bool:
        """True when the tool runs only as a task (``execution.taskSupport == "required"``)."""
        support = (self.execution or {}).get("taskSupport")
        return support == "required"

    @property
    def parameters(self) -> list[str]:
        props = self.input_schema.get("properties") if isinstance(self.input_schema, dict) else None
        return list(props) if isinstance(props, dict) else []

    @property
    def required(self) -> list[str]:
        req = self.input_schema.get("required") if isinstance(self.input_schema, dict) else None
        return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []

    def renamed(self, name: str) -> ToolSpec:
        """The same spec under another name (a pegboard's prefixed name); nothing else changes."""
        return ToolSpec(
            name, self.description, self.input_schema, self.output_schema, self.annotations,
            self.title, self.icons, self.meta, self.execution,
        )


@dataclass(slots=True)
class Result:
    """What a tool answered; renders itself in a notebook with every string escaped."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False
    latency_s: float | None = None
    tool: ToolId | None = None
    task_id: str | None = None
    """The server's task id, for a tool that runs only as a task (records keep it in
    ``provenance["task_id"]``)."""

    @property
    def text(self) -> str:
        return "\n".join(
            str(block.get("text", ""))
            for block in self.content
            if isinstance(block, dict) and block.get("type") == "text"
        )

    @property
    def data(self) -> Any:
        """Structured content if any, else the text parsed as JSON, else the text itself."""
        if self.structured is not None:
            return self.structured
        text = self.text
        try:
            return json.loads(text)
        except ValueError:
            return text

    def __repr__(self) -> str:
        try:
            return self._plain()
        except Exception:  # a repr never raises
            return f"<Result of {self.tool}>"

    def _plain(self) -> str:
        head = f"Result({self.tool}" + (", error" if self.is_error else "")
        if self.latency_s is not None:
            head += f", {self.latency_s * 1000:.1f} ms"
        body = self.text if self.structured is None else _html.pretty_json(self.structured, 2000)
        images = sum(1 for b in self.content if isinstance(b, dict) and b.get("type") == "image")
        tail = f"\n[{images} image(s)]" if images else ""
        return f"{head})\n{_html.shorten(body, 2000)}{tail}"

    def _repr_html_(self) -> str:
        return _html.result_html(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """``text/plain`` and the HTML card, and nothing else.

        No ``application/json``: JupyterLab ranks its JSON viewer above ``text/html`` and would
        show a bare tree instead of the card (server, latency, content). VS Code and classic
        Notebook prefer the HTML anyway. ``result.data`` is the way to the JSON value.
        """
        return {"text/plain": repr(self), "text/html": self._repr_html_()}  # neither raises


@runtime_checkable
class ToolClient(Protocol):
    """Anything that can list and call tools for one or more locally named servers."""

    def servers(self) -> Iterable[str]:
        """The locally named servers this client answers for (a router routes each to it)."""
        ...

    def destination(self, tool: ToolId) -> Destination:
        """Where a call to ``tool`` would go (``LOCAL`` or a remote host), without any I/O:
        an ``Egress`` allowlist judges it before anything is sent."""
        ...

    async def list_tools(self, server: str) -> list[ToolSpec]:
        """Every tool ``server`` offers, as it declared them (all pages)."""
        ...

    async def call(
        self,
        tool: ToolId,
        arguments: Mapping[str, Any],
        provenance: Provenance | None = None,
    ) -> Result:
        """Call ``tool`` with ``arguments``; ``provenance`` says who asked.

        Returns the tool's Result; every failure is a ``ToolError`` whose disposition says
        whether the call may have happened (``help(toolbench.ToolError)``).
        """
        ...


@runtime_checkable
class ResourceClient(Protocol):
    """The optional rest of MCP: resources and prompts (``McpClient`` offers it).

    A ``ToolClient`` need not implement it (a ``ToolBox`` or ``Toolset`` serves tools only);
    the bench checks for it and says plainly when a server offers no resources or prompts.
    Listings are row dicts (see ``toolbench._transports.mcp.resources``); a read returns a
    ``ReadResult``, a prompt fetch a ``PromptResult`` (``toolbench._core.contents``).
    """

    async def list_resources(self, server: str) -> list[dict[str, Any]]:
        """Every resource ``server`` lists, one row dict each."""
        ...

    async def list_resource_templates(self, server: str) -> list[dict[str, Any]]:
        """Every resource template ``server`` lists, one row dict each."""
        ...

    async def read_resource(self, server: str, uri: str, *, timeout: float | None = None,
                            provenance: Provenance | None = None) -> Any:
        """Read one resource of ``server``; failures are ``ToolError``s, as for a call."""
        ...

    async def list_prompts(self, server: str) -> list[dict[str, Any]]:
        """Every prompt ``server`` lists, one row dict each."""
        ...

    async def get_prompt(self, server: str, name: str,
                         arguments: Mapping[str, str] | None = None, *,
                         timeout: float | None = None,
                         provenance: Provenance | None = None) -> Any:
        """Fetch one prompt's messages from ``server``."""
        ...


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


def result_from_value(value: Any, tool: ToolId | None, latency_s: float | None) -> Result:
    """How a Python handler's return value becomes a Result (dict / JSON value / str)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if isinstance(value, Result):
        return value
    if isinstance(value, str):
        return Result([{"type": "text", "text": value}], None, False, latency_s, tool)
    structured = value if isinstance(value, dict) else {"result": value}
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a tool returned {type(value).__name__}, which is not JSON") from exc
    return Result([{"type": "text", "text": text}], structured, False, latency_s, tool)
