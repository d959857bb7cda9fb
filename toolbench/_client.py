"""The protocol every transport speaks, and the two values it trades in."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolbench import _html
from toolbench._errors import Refused
from toolbench._ids import Destination, Provenance, ToolId


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as its server declared it: nothing added, nothing inferred."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    title: str | None = None

    @property
    def parameters(self) -> list[str]:
        props = self.input_schema.get("properties") if isinstance(self.input_schema, dict) else None
        return list(props) if isinstance(props, dict) else []

    @property
    def required(self) -> list[str]:
        req = self.input_schema.get("required") if isinstance(self.input_schema, dict) else None
        return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []

    def renamed(self, name: str) -> ToolSpec:
        return ToolSpec(
            name, self.description, self.input_schema, self.output_schema, self.annotations,
            self.title,
        )


@dataclass(slots=True)
class Result:
    """What a tool answered; renders itself in a notebook with every string escaped."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False
    latency_s: float | None = None
    tool: ToolId | None = None

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

    def servers(self) -> Iterable[str]: ...

    def destination(self, tool: ToolId) -> Destination: ...

    async def list_tools(self, server: str) -> list[ToolSpec]: ...

    async def call(
        self,
        tool: ToolId,
        arguments: Mapping[str, Any],
        provenance: Provenance | None = None,
    ) -> Result: ...


def check_arguments(tool: ToolId | None, arguments: object) -> dict[str, Any]:
    """Tool arguments are a JSON object; anything else is refused before sending."""
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise Refused(
            f"arguments must be an object (a mapping of names to values), not "
            f"{type(arguments).__name__} {_html.shorten(repr(arguments), 80)}",
            tool=tool,
        )
    bad = [k for k in arguments if not isinstance(k, str)]
    if bad:
        raise Refused(f"argument names must be strings, not {bad[0]!r}", tool=tool)
    return dict(arguments)


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
