"""One run of a model with the bench's tools: the ``Run`` it leaves, and what a tool hands back.

A ``Run`` is data, like a record: the transcript (``messages``), one row per model reply and
per tool call (``steps``), the bench's records of its calls (``calls``), the final ``text``,
token ``usage``, and why it ``stopped``. Its HTML (an escaped transcript, a card per tool
call, an MCP Apps view where a tool has one) is drawn by the notebook layer, which registers
itself here (:func:`register_run_display`), since this layer may not import display code.

:func:`handed_back` is what the model reads of a tool's answer: text and structured content
as JSON, images and resources described (never inlined), capped at ``max_result_chars`` with
the cut said in the message itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._core.client import Result, resource_line
from toolbench._core.errors import Disposition, ToolError, ToolFailed

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.journal.record import Record

__all__ = ["STEP_COLUMNS", "Run", "Step", "handed_back", "register_run_display"]

STEP_COLUMNS = ("step", "kind", "tool", "arguments", "ok", "ms", "tokens", "error", "call_id")
"""The columns of ``Run.steps`` (DESIGN names the first seven; ``error`` says why a row is
not ok, ``call_id`` joins a tool row to its record)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One row of ``Run.steps``.

    ``kind`` is ``model`` (a reply that called tools), ``answer`` (a reply without tool
    calls: the run's end), ``tool`` (a call sent through the bench), ``refused`` (a call
    refused before sending: not offered, or arguments that cannot be used) or ``error`` (the
    model failed; the run's end).
    """

    step: int
    kind: str
    tool: str | None = None
    arguments: Any = None
    ok: bool = True
    ms: float | None = None
    tokens: int | None = None
    error: str | None = None
    call_id: str | None = None


@dataclass(eq=False)
class Run:
    """What one ``bench.run`` did: the transcript, its steps and calls, and how it ended.

    Attributes:
        id (str): the run's id; each of its calls' records has it as ``provenance["run"]``.
        model (str): the model's name, as provenance records it.
        messages (list[dict]): the conversation in the OpenAI chat format: the prompt, each
            assistant message, each tool message as the model read it.
        stopped (str): ``"answered"`` (a reply without tool calls), ``"max_steps"`` or
            ``"error"``.
        error (str | None): what ended the run when ``stopped == "error"``: the model
            raised, took longer than ``model_timeout``, or sent neither text nor tool calls.
        text (str | None): the final answer's text; None unless ``stopped == "answered"``.
        usage (dict | None): tokens the model reported, summed: ``{"input": n, "output": m}``.
        rows (list[Step]): the steps as plain rows (``steps`` is their DataFrame).
        records (list[Record]): the bench's records of this run's calls, refusals included.
        results (dict[str, Result]): each answered call's ``Result`` by call id (the cards
            and MCP Apps views of the display).
    """

    id: str
    model: str
    messages: list[dict[str, Any]]
    stopped: str = "answered"
    error: str | None = None
    text: str | None = None
    usage: dict[str, int] | None = None
    rows: list[Step] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    results: dict[str, Result] = field(default_factory=dict, repr=False)

    @property
    def steps(self) -> pd.DataFrame:
        """One row per model reply and per tool call, in order: ``step``, ``kind``, ``tool``,
        ``arguments``, ``ok``, ``ms``, ``tokens`` (the reply's, input + output, when the model
        reported usage), ``error`` and ``call_id``."""
        import pandas as pd

        df = pd.DataFrame([[getattr(row, c) for c in STEP_COLUMNS] for row in self.rows],
                          columns=list(STEP_COLUMNS))
        return df.astype({"step": "int64", "ok": "bool", "tokens": "Int64", "ms": "float64"})

    @property
    def calls(self) -> pd.DataFrame:
        """The bench's records of this run's calls (as ``bench.records`` shows them)."""
        from toolbench._bench.journal.record import frame

        return frame(self.records)

    @property
    def tool_calls(self) -> int:
        """How many tool calls the model made (sent or refused)."""
        return sum(1 for row in self.rows if row.kind in ("tool", "refused"))

    def __repr__(self) -> str:
        try:
            return self._plain()
        except Exception:  # a repr never raises
            return f"<Run {self.id}>"

    def _plain(self) -> str:
        head = (f"Run {self.id} of {self.model}: {self.stopped}, "
                f"{_html.counted(max((r.step for r in self.rows), default=0), 'step')}, "
                f"{_html.counted(self.tool_calls, 'tool call')}")
        lines = [head]
        if self.error:
            lines.append(f"error: {_html.shorten(self.error, 500)}")
        for row in self.rows:
            if row.kind in ("tool", "refused"):
                mark = "ok" if row.ok else f"failed: {_html.shorten(row.error or '', 200)}"
                lines.append(f"  {row.step}. {row.kind} {_html.shorten(str(row.tool), 80)}"
                             f"({_html.shorten(_json(row.arguments), 200)}) {mark}")
        if self.text:
            lines.append(f"answer: {_html.shorten(self.text, 2000)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        show = _run_html
        if show is None:
            return f"<pre>{_html.escape(repr(self))}</pre>"
        try:
            return show(self)
        except Exception as exc:  # display never raises
            return (f"<pre>{_html.escape(repr(self))}\n(the transcript could not be drawn: "
                    f"{_html.escape(type(exc).__name__)})</pre>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": repr(self), "text/html": self._repr_html_()}

    @property
    def _ipython_display_(self) -> Callable[[], None] | None:
        """A run whose tool results have MCP Apps views shows them in place (as a call's
        would); one without is shown from its mimebundle."""
        show = _run_display
        if show is None or not any(r.app_opener is not None or r.app_view is not None
                                   for r in self.results.values()):
            return None
        return lambda: show(self)


_run_html: Callable[[Run], str] | None = None
_run_display: Callable[[Run], None] | None = None


def register_run_display(html: Callable[[Run], str] | None,
                         display: Callable[[Run], None] | None = None) -> None:
    """Install how a notebook draws a run (``html``) and shows one with live views
    (``display``); the notebook layer calls this on import."""
    global _run_html, _run_display
    _run_html, _run_display = html, display


def handed_back(result: Result | None, error: ToolError | None, max_chars: int) -> str:
    """What the model reads of a call's outcome: its structured content as JSON, its text
    (unless it only repeats the JSON), its images and resources described; a failure says
    so. Capped at ``max_chars`` with the cut said in the message.

    Bounded by the cap, not by the result: a server decides how much it sends (DESIGN,
    "Bounded work on what a server sends"), so a 12 MB result is read only as far as the
    cap needs, on the shared loop (the whole of it took ~2 s to serialize and compare)."""
    if error is not None and not isinstance(error, ToolFailed):
        unsent = ", not sent" if error.disposition is Disposition.DID_NOT_HAPPEN else ""
        return _capped(f"Error ({type(error).__name__}{unsent}): {error.detail}", max_chars)
    if error is not None and error.result is not None:
        result = error.result
    parts: list[str] = []
    room = max_chars + 1  # one more than is shown: enough to know there is more
    if result is not None:
        if result.structured is not None:
            parts.append(json_upto(result.structured, room))
        left = room - sum(len(part) for part in parts)
        if left > 0:
            text = _text_upto(result, left)
            if text and not (result.structured is not None and len(text) < left
                             and _echoes(text, result.structured)):
                parts.append(text)
        others = [block for block in result.content
                  if isinstance(block, dict) and block.get("type") not in ("text", None)]
        parts.extend(_described(block) for block in others[:_DESCRIBED])
        if len(others) > _DESCRIBED:
            parts.append(f"[{len(others) - _DESCRIBED:,} more content blocks]")
    body = "\n".join(part for part in parts if part) or "(no content)"
    if error is not None:
        body = f"Error (the tool reported a failure): {body}"
    return _capped(body, max_chars)


_DESCRIBED = 50  # non-text blocks described one by one; the rest are counted


def json_upto(value: Any, room: int) -> str:
    """``value`` as JSON text, at least its first ``room`` characters (all of it if shorter):
    the fast encoder for what is small, and one that stops at ``room`` for what is not."""
    if isinstance(value, str):
        return value[:room]
    try:
        if not _larger_than(value, 4 * room):
            return json.dumps(value, ensure_ascii=False, default=str)
        chunks: list[str] = []
        size = 0
        for chunk in json.JSONEncoder(ensure_ascii=False, default=str).iterencode(value):
            chunks.append(chunk)
            size += len(chunk)
            if size >= room:
                break
        return "".join(chunks)
    except (TypeError, ValueError, RecursionError):
        return _html.shorten(repr(value), room)


def _larger_than(value: Any, budget: int) -> bool:
    """Whether ``value``'s JSON is (roughly) over ``budget`` characters; stops once it is."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            budget -= len(item) + 2
        elif isinstance(item, dict):
            budget -= 2 + 4 * len(item)
            for key, inner in item.items():
                budget -= len(key) if isinstance(key, str) else 8
                stack.append(inner)
                if budget < 0:
                    return True
        elif isinstance(item, list | tuple):
            budget -= 2 + 2 * len(item)
            stack.extend(item[:budget] if budget > 0 else ())
        else:
            budget -= 8
        if budget < 0:
            return True
    return False


def _text_upto(result: Result, room: int) -> str:
    """The result's text blocks joined, only as far as ``room`` characters."""
    pieces: list[str] = []
    size = 0
    for block in result.content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = str(block.get("text", ""))
            pieces.append(text[:room - size])
            size += len(text) + 1
            if size >= room:
                break
    return "\n".join(pieces)


def _echoes(text: str, structured: Any) -> bool:
    """Whether the text only repeats the structured content as JSON (what most servers send;
    ``shows_text`` decides the same for a result card)."""
    try:
        echoed = json.loads(text)
    except (ValueError, RecursionError):  # a server's text nested past the parser's depth
        return False
    return echoed == structured or (isinstance(structured, dict) and set(structured) == {
        "result"} and echoed == structured["result"])


def refusal_message(detail: str) -> str:
    """The tool message for a call refused before sending."""
    return f"Error (Refused, not sent): {detail}"


def _described(block: dict[str, Any]) -> str:
    """A non-text content block in one line: never its bytes."""
    kind = str(block.get("type"))
    if kind in ("resource", "resource_link"):
        return resource_line(block)
    if kind in ("image", "audio"):
        data = block.get("data")
        size = f", {len(data) * 3 // 4:,} bytes" if isinstance(data, str) else ""
        return f"[{kind}: {_html.shorten(str(block.get('mimeType', 'unknown type')), 80)}" \
               f"{size}, not shown to the model]"
    return f"[{_html.shorten(kind, 40)} content, not shown to the model]"


def _capped(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return (f"{text[:max_chars]}\n[cut at {max_chars:,} characters (max_result_chars); the "
            f"bench's record keeps the whole result]")


def _json(value: Any) -> str:
    """The arguments as a record's text shows them (``to_text``), but None as JSON's ``null``
    (``to_text`` shows None as nothing, which would hide arguments the model sent as null)."""
    return "null" if value is None else _html.to_text(value)


def add_usage(total: dict[str, int] | None, usage: Mapping[str, int] | None
              ) -> dict[str, int] | None:
    """The run's usage with one reply's added (None until a reply reports any)."""
    if not usage:
        return total
    total = dict(total or {})
    for key, value in usage.items():
        total[key] = total.get(key, 0) + value
    return total
