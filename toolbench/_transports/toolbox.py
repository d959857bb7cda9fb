"""Plain typed Python functions as tools, each naming the server it belongs to.

The schema comes from the type hints through pydantic, so what the catalog shows and what
validation enforces can never drift apart.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, get_type_hints

import anyio.to_thread
import pydantic

from toolbench._core.arguments import check_arguments
from toolbench._core.client import Result, ToolSpec, result_from_value
from toolbench._core.errors import Malformed, Refused, ToolFailed, Unreachable
from toolbench._core.ids import Destination, Provenance, ToolId, check_server_name, check_tool_name

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__toolbench_tool__"


@dataclass(frozen=True, slots=True)
class TypedTool:
    """A function with the schema and validator derived from its signature."""

    id: ToolId
    function: Callable[..., Any]
    spec: ToolSpec
    model: type[pydantic.BaseModel]
    is_async: bool


def _describe(function: Callable[..., Any], description: str | None) -> str:
    if description is not None:
        return description
    return inspect.cleandoc(function.__doc__ or "").strip()


def _build(function: Callable[..., Any], server: str, name: str | None,
           description: str | None) -> TypedTool:
    if not callable(function):
        raise TypeError(f"@tool needs a function, not {function!r}")
    check_server_name(server)
    tool_name = check_tool_name(name if name is not None else getattr(function, "__name__", ""))
    signature = inspect.signature(function)
    try:
        hints = get_type_hints(function, include_extras=True)  # keep Annotated[...]
    except Exception as exc:
        raise TypeError(f"cannot read the type hints of {function!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"tool {tool_name!r}: *{param.name} parameters cannot be described by a schema"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"tool {tool_name!r}: positional-only parameter {param.name!r}")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    model = pydantic.create_model(  # type: ignore[call-overload]
        f"{tool_name}_arguments",
        __config__=pydantic.ConfigDict(extra="forbid"),
        **fields,
    )
    schema = model.model_json_schema()
    schema.pop("title", None)
    spec = ToolSpec(
        name=tool_name,
        description=_describe(function, description),
        input_schema=schema,
    )
    return TypedTool(
        ToolId(server, tool_name), function, spec, model, inspect.iscoroutinefunction(function)
    )


def tool(*, server: str, name: str | None = None,
         description: str | None = None) -> Callable[[F], F]:
    """Mark a typed function as a tool of ``server``; the function itself is unchanged."""

    def mark(function: F) -> F:
        setattr(function, _MARK, _build(function, server, name, description))
        return function

    return mark


def _rule_text(error: pydantic.ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item.get("loc", ())) or "(arguments)"
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    more = len(error.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


class ToolBox:
    """A ToolClient over typed Python functions; the servers are those the tools name."""

    def __init__(self, *functions: Callable[..., Any]) -> None:
        self._tools: dict[ToolId, TypedTool] = {}
        for function in functions:
            self.add(function)

    def add(self, function: Callable[..., Any]) -> TypedTool:
        """Register a function decorated with ``@tool``; returns its ``TypedTool``.

        Raises:
            TypeError: the function is not decorated with ``@tool``.
            NameCollision: the box already has a tool of that server and name.
        """
        typed = getattr(function, _MARK, None)
        if not isinstance(typed, TypedTool):
            raise TypeError(
                f"{function!r} is not a tool: decorate it with @tool(server=...) first"
            )
        if typed.id in self._tools:
            raise ValueError(f"tool {typed.id} is already in this ToolBox; ids must be unique")
        self._tools[typed.id] = typed
        return typed

    def tool(self, *, server: str, name: str | None = None,
             description: str | None = None) -> Callable[[F], F]:
        """Decorate and add in one step."""

        def mark_and_add(function: F) -> F:
            marked = tool(server=server, name=name, description=description)(function)
            self.add(marked)
            return marked

        return mark_and_add

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, item: object) -> bool:
        return item in self._tools

    def ids(self) -> list[ToolId]:
        """Every tool's ``ToolId``, sorted."""
        return sorted(self._tools)

    def servers(self) -> list[str]:
        """The servers the box's tools are grouped under, sorted."""
        return sorted({tid.server for tid in self._tools})

    def destination(self, tool: ToolId) -> Destination:
        """Always ``LOCAL``: the functions run in this process."""
        return Destination.LOCAL

    async def list_tools(self, server: str) -> list[ToolSpec]:
        """The specs (JSON Schemas made from the type hints) of ``server``'s tools.

        Raises:
            Unreachable: the box has no such server.
        """
        if server not in self.servers():
            raise Unreachable(
                f"this ToolBox has no server {server!r}; it has {self.servers()}"
            )
        return [t.spec for tid, t in sorted(self._tools.items()) if tid.server == server]

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],
                   provenance: Provenance | None = None) -> Result:
        """Validate the arguments against the type hints, then run the function.

        Raises:
            Refused: the arguments do not fit the hints; the function did not run.
            ToolFailed: the function raised (its exception is the cause).
            Unreachable: no such tool.
        """
        typed = self._tools.get(tool)
        if typed is None:
            known = [t.tool for t in self.ids() if t.server == tool.server]
            raise Refused(f"no tool {tool.tool!r} on {tool.server!r}; known: {known}", tool=tool)
        args = check_arguments(tool, arguments)
        try:
            validated = typed.model.model_validate(args)
        except pydantic.ValidationError as exc:
            raise Refused(f"invalid arguments: {_rule_text(exc)}", tool=tool) from exc
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        started = time.perf_counter()
        try:
            if typed.is_async:
                value = await typed.function(**kwargs)
            else:
                value = await anyio.to_thread.run_sync(lambda: typed.function(**kwargs))
        except Exception as exc:
            raise ToolFailed(f"{type(exc).__name__}: {exc}", tool=tool) from exc
        try:
            return result_from_value(value, tool, time.perf_counter() - started)
        except TypeError as exc:
            raise Malformed(str(exc), tool=tool) from exc

