"""``bench.tools``: every pegboard name as a callable handle that tab-completes in IPython.

A handle calls through a :class:`Caller` (the bench's ``call``/``acall``, a Protocol here, so
this module imports no bench) and reads the pegboard. It may import ``_routing`` and
``_core``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from toolbench._core import html as _html
from toolbench._core.client import Result, ToolSpec

if TYPE_CHECKING:
    from toolbench._routing.pegboard import PegBoard


class Caller(Protocol):
    """What a handle calls through: ``Bench.call`` and ``Bench.acall``."""

    def call(self, name: str, arguments: Mapping[str, Any] | None = None, /,
             **kwargs: Any) -> Result: ...

    async def acall(self, name: str, arguments: Mapping[str, Any] | None = None, /,
                    **kwargs: Any) -> Result: ...


def _doc(spec: ToolSpec, server: str) -> str:
    lines = [spec.description or "(no description)", "", f"Server: {server}"]
    props = spec.input_schema.get("properties") if isinstance(spec.input_schema, dict) else None
    if isinstance(props, dict) and props:
        lines += ["", "Parameters:"]
        required = set(spec.required)
        for pname, pschema in props.items():
            kind = pschema.get("type", "any") if isinstance(pschema, dict) else "any"
            desc = pschema.get("description", "") if isinstance(pschema, dict) else ""
            mark = " (required)" if pname in required else ""
            lines.append(f"  {pname}: {kind}{mark}" + (f" — {desc}" if desc else ""))
    return "\n".join(lines)


class ToolHandle:
    """One tool, callable like a function: ``bench.tools["time-get_current_time"](...)``."""

    def __init__(self, caller: Caller, name: str, spec: ToolSpec, server: str) -> None:
        self._caller = caller
        self.name = name
        self.spec = spec
        self.server = server
        self.__doc__ = _doc(spec, server)

    @property
    def schema(self) -> dict[str, Any]:
        return self.spec.input_schema

    def __call__(self, arguments: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Result:
        return self._caller.call(self.name, arguments, **kwargs)

    async def acall(self, arguments: Mapping[str, Any] | None = None, /,
                    **kwargs: Any) -> Result:
        """Awaitable call of this tool: ``await bench.tools.geo_distance.acall(...)``; the same
        arguments, result and errors as ``Bench.acall``.
        """
        return await self._caller.acall(self.name, arguments, **kwargs)

    def __repr__(self) -> str:
        params = ", ".join(self.spec.parameters)
        return f"<tool {self.name}({params}) on {self.server}>"

    def _repr_html_(self) -> str:
        """The name, its server, the description (escaped, in paragraphs) and parameters."""
        try:
            params = ", ".join(f"<code>{_html.escape(p)}</code>" for p in self.spec.parameters)
            return (f"<div><b>{_html.escape(self.name)}</b> <small>on server <code>"
                    f"{_html.escape(self.server)}</code>; parameters: {params or 'none'}"
                    f"</small>{_html.description_html(self.spec.description or '')}</div>")
        except Exception:
            return f"<pre>{_html.escape(repr(self))}</pre>"


class ToolHandles(Mapping[str, ToolHandle]):
    """A live view of the bench's pegboard: new servers appear without re-fetching."""

    def __init__(self, caller: Caller, pegboard: PegBoard) -> None:
        self._caller = caller
        self._pegboard = pegboard

    def __getitem__(self, name: str) -> ToolHandle:
        entry = self._pegboard.entry(name)
        return ToolHandle(self._caller, entry.name, entry.spec, entry.server)

    def __iter__(self) -> Iterator[str]:
        return iter(self._pegboard.list_all_tools())

    def __len__(self) -> int:
        return self._pegboard.tool_count()

    def __contains__(self, name: object) -> bool:
        return name in self._pegboard

    def _ipython_key_completions_(self) -> list[str]:
        return self._pegboard.list_all_tools()

    def __repr__(self) -> str:
        names = self._pegboard.list_all_tools()
        shown = ", ".join(names[:20]) + (f", … ({len(names)} in all)" if len(names) > 20 else "")
        return f"<{len(names)} tools: {shown}>"
