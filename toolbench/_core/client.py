"""The protocol every transport speaks, and the two values it trades in."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolbench._core import html as _html
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
    meta: dict[str, Any] | None = field(default=None, compare=False)
    """The result's ``_meta`` as the server sent it (None when it sent none). An MCP App
    view may carry its data only there (``anywidget-mcp`` does): views get it in
    ``tool-result``, and records keep the tool's part of it (not the protocol's own
    ``io.modelcontextprotocol/`` keys) in ``provenance["result_meta"]``."""
    call_id: str | None = field(default=None, compare=False)
    """The record's call id, set for a call whose tool has an MCP App view."""
    app_opener: Callable[[], Any] | None = field(default=None, repr=False, compare=False)
    """Makes the live view (set by the bench when the tool has a view and apps are on)."""
    app_view: Any = field(default=None, repr=False, compare=False)

    @property
    def app(self) -> Any:
        """The tool's MCP App view of this call (an ``AppView`` in a notebook), made on first
        use; None for a tool without a view, and with ``Bench(apps=False)``."""
        if self.app_view is None and self.app_opener is not None:
            self.app_view = self.app_opener()
        return self.app_view

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
        parts = []
        if self.structured is not None:  # the structured part first, then any text that adds
            parts.append(_html.shorten(_html.pretty_json(self.structured, 2000), 2000))
        if shows_text(self):
            parts.append(_html.shorten(self.text, 2000))
        parts.extend(resource_line(b) for b in self.content[:20]
                     if isinstance(b, dict) and b.get("type") in ("resource_link", "resource"))
        images = sum(1 for b in self.content if isinstance(b, dict) and b.get("type") == "image")
        if images:
            parts.append(f"[{images} image(s)]")
        return f"{head})\n" + "\n".join(parts)

    def _repr_html_(self) -> str:
        return _html.no_math(result_html(self))

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:
        """How IPython shows a result whose tool has a view: the live view, then the card.

        A property, so that a result without a view has no such method (IPython then takes
        the plain mimebundle, as an ``execute_result``); the showing is registered by the
        notebook layer (:func:`register_view_display`), which may import IPython.
        """
        show = _view_display
        if show is None or (self.app_opener is None and self.app_view is None):
            return None
        return lambda: show(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """``text/plain`` and the HTML card, and nothing else.

        No ``application/json``: JupyterLab ranks its JSON viewer above ``text/html`` and would
        show a bare tree instead of the card (server, latency, content). VS Code and classic
        Notebook prefer the HTML anyway. ``result.data`` is the way to the JSON value.
        """
        return {"text/plain": repr(self), "text/html": self._repr_html_()}  # neither raises


_view_display: Callable[[Result], None] | None = None


def register_view_display(show: Callable[[Result], None] | None) -> None:
    """Install how a notebook shows a result with a live view (DESIGN.md, "MCP Apps":
    the view above the usual result card)."""
    global _view_display
    _view_display = show


def shows_text(result: Result) -> bool:
    """Whether a result's text is worth showing: always without structured content, and
    beside it unless the text only repeats it as JSON (what most servers send; issue 37)."""
    text = result.text
    if not text.strip():
        return False
    if result.structured is None:
        return True
    try:
        echoed = json.loads(text)
    except ValueError:
        return True
    structured = result.structured
    return echoed != structured and not (set(structured) == {"result"}
                                         and echoed == structured["result"])


def resource_line(block: dict[str, Any]) -> str:
    """A resource link or embedded resource in one line of plain text: its kind, URI, name
    and type (its contents are for ``bench.read`` or the HTML card)."""
    kind = block.get("type")
    inner = block.get("resource") if kind == "resource" else block
    inner = inner if isinstance(inner, dict) else {}
    facts = [_html.shorten(str(inner.get("uri", "")), 300)]
    for key in ("name", "title"):
        if isinstance(block.get(key), str) and block.get(key):
            facts.append(_html.shorten(block[key], 120))
    if inner.get("mimeType"):
        facts.append(_html.shorten(str(inner["mimeType"]), 80))
    label = "resource link" if kind == "resource_link" else "embedded resource"
    return f"[{label}] " + " · ".join(facts)


MAX_IMAGES = 8
"""Images a rendered result inlines; the rest are left out."""


def result_html(result: Result, *, budget: int = _html.RESULT_BUDGET) -> str:
    """Text, pretty JSON and inline images of a result, escaped, within ``budget`` chars.

    It lives beside :class:`Result` (a result draws itself): ``html`` escapes any text and
    knows no result, so the layer's lowest module depends on nothing.
    """
    try:
        return _result_html(result, budget)
    except Exception as exc:  # never raise from display
        return f"<pre>{_html.escape(type(exc).__name__)}: result could not be shown</pre>"


def _result_html(result: Result, budget: int) -> str:
    parts = []
    head = _html.escape(result.tool or "result")
    if result.latency_s is not None:
        head += f" <small>{result.latency_s * 1000:.1f} ms</small>"
    parts.append(f"<div><b>{head}</b></div>")
    left = budget
    if result.structured is not None:  # the structured part first (issue 37)
        cut: list[bool] = []
        room = max(left // 2 if shows_text(result) else left, 200)
        text = _html.pretty_json(_html.trim(result.structured, room, cut=cut), room)
        note = " <small>(shortened)</small>" if cut or text.endswith("…") else ""
        parts.append(f"<pre style='white-space:pre-wrap'>{_html.escape(text)}</pre>{note}")
        left -= len(text)
    texts = shows_text(result)
    images = 0
    for block in result.content[:200]:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and texts and left > 0:
            text = str(block.get("text", ""))
            short = _html.shorten(text, left)
            left -= len(short)
            more = f" <small>({len(text):,} characters in all)</small>" if short != text else ""
            parts.append(f"<pre style='white-space:pre-wrap'>{_html.escape(short)}</pre>{more}")
        elif kind == "image" and images < MAX_IMAGES:
            images += 1
            tag = _html.image_tag(block.get("data"), block.get("mimeType"))
            parts.append(tag or f"<i>[image {_html.escape(block.get('mimeType'))} not shown]</i>")
        elif kind in ("resource_link", "resource"):
            shown = _html.resource_block_html(block, max(left, 200))
            left -= len(shown)
            parts.append(shown)
        elif kind not in ("text", "image"):
            parts.append(f"<i>[{_html.escape(_html.shorten(str(kind), 40))} block]</i>")
    return "<div class='toolbench-result'>" + "".join(parts) + "</div>"


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
