"""A ``Run`` in a notebook: an escaped transcript with each tool call as a card.

Everything in a run came from somewhere untrusted: the model wrote the text and the
arguments, a server wrote the results. Every string is escaped and shortened here, the
whole page is capped, and a tool result whose tool has an MCP Apps view shows that view
above its card, as a single call's result does (``_notebook/bench.py``). Display never
raises: a transcript that cannot be drawn falls back to the run's text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._core.client import result_html

if TYPE_CHECKING:
    from toolbench._bench.models.run import Run, Step
    from toolbench._core.client import Result

__all__ = ["run_html", "show_run"]

MAX_MESSAGES = 200
"""Messages drawn; a longer transcript says how many more there are."""
MAX_TEXT = 4_000
"""Characters of one message's text drawn (``run.messages`` keeps it all)."""
RESULT_BUDGET = 8_000
"""Characters of one tool result's card."""

RUN_STYLE = (
    "<style>.toolbench-run{font-size:13px;line-height:1.4;max-width:60em}"
    ".toolbench-run .tb-msg{margin:4px 0;padding:4px 8px;border-left:3px solid #ccc}"
    ".toolbench-run .tb-user{border-color:#3a6fb0}"
    ".toolbench-run .tb-assistant{border-color:#1a7f37}"
    ".toolbench-run .tb-system{border-color:#888;color:#555}"
    ".toolbench-run .tb-role{font-weight:bold;font-size:11px;text-transform:uppercase;"
    "color:#555}"
    ".toolbench-run .tb-card{margin:4px 0 4px 12px;padding:4px 8px;border:1px solid #ddd;"
    "border-radius:4px;background:#fafafa}"
    ".toolbench-run .tb-card.tb-failed{border-color:#b00020;background:#fff5f5}"
    ".toolbench-run pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0}"
    ".toolbench-run .tb-error{color:#b00020}"
    ".toolbench-run .tb-result{max-height:18em;overflow:auto;border-top:1px solid #eee}</style>"
)


def run_html(run: Run) -> str:
    """The whole run as one escaped HTML page (no live views: those need a display)."""
    return "".join(piece for piece in _pieces(run, views=False) if isinstance(piece, str))


def show_run(run: Run) -> None:
    """Display a run whose results have MCP Apps views: the transcript in pieces, each view
    above its call's card. Never raises."""
    from IPython.display import display

    def emit(value: Any, raw: bool = True) -> None:
        display(value, raw=raw)  # type: ignore[no-untyped-call]

    try:
        for piece in _pieces(run, views=True):
            if isinstance(piece, str):
                emit({"text/html": piece, "text/plain": ""})
                continue
            try:
                view = piece.app
            except Exception as exc:  # the card must still show
                view = None
                emit({"text/plain": f"(the view could not be opened: {type(exc).__name__})"})
            if view is not None:
                emit(view, raw=False)
    except Exception as exc:  # display never raises
        emit({"text/plain": f"{run!r}\n(the run could not be shown: {type(exc).__name__})"})


def _pieces(run: Run, *, views: bool) -> Iterator[str | Result]:
    """HTML strings, and (with ``views``) the results whose view goes between them."""
    out = [RUN_STYLE, f"<div class='toolbench-run {_html.NO_MATH}'>", _header(run)]
    calls = iter([row for row in run.rows if row.kind in ("tool", "refused")])
    answered = {m.get("tool_call_id"): m for m in run.messages
                if isinstance(m, dict) and m.get("role") == "tool"}
    for index, message in enumerate(run.messages):
        if index >= MAX_MESSAGES:
            more = _html.counted(len(run.messages) - MAX_MESSAGES, "more message")
            out.append(f"<p><small>{more} not drawn (run.messages has them all)</small></p>")
            break
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", "?"))
        if role == "tool":
            continue  # drawn inside its call's card
        out.append(_message(role, message.get("content")))
        for tool_call in message.get("tool_calls") or ():
            row = next(calls, None)
            reply = answered.get(tool_call.get("id")) if isinstance(tool_call, dict) else None
            result = run.results.get(row.call_id) if row is not None and row.call_id else None
            if views and result is not None and (result.app_opener is not None
                                                 or result.app_view is not None):
                yield "".join([*out, "</div>"])  # the view goes above its call's card
                yield result
                out = [f"<div class='toolbench-run {_html.NO_MATH}'>"]
            out.append(_card(tool_call, row, result, reply))
    if run.error:
        error = _html.escape(_html.shorten(run.error, MAX_TEXT))
        out.append(f"<p class='tb-error'><b>error:</b> {error}</p>")
    out.append("</div>")
    yield "".join(out)


def _header(run: Run) -> str:
    steps = max((row.step for row in run.rows), default=0)
    facts = [f"<b>{_html.escape(_html.shorten(run.model, 120))}</b>",
             _html.escape(run.stopped), _html.counted(steps, "step"),
             _html.counted(run.tool_calls, "tool call")]
    if run.usage:
        facts.append(_html.escape(", ".join(f"{k} {v:,}" for k, v in run.usage.items()))
                     + " tokens")
    return (f"<div><small>run {_html.escape(run.id)}</small> · "
            f"{' · '.join(facts)}</div>")


def _message(role: str, content: Any) -> str:
    css = role if role in ("user", "assistant", "system") else "other"
    text = _content_text(content)
    body = (f"<pre>{_html.escape(_html.shorten(text, MAX_TEXT))}</pre>" if text
            else "")
    if not body and role == "assistant":
        return ""  # a reply that only called tools: its cards follow
    return (f"<div class='tb-msg tb-{css}'><div class='tb-role'>{_html.escape(role[:20])}"
            f"</div>{body}</div>")


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content[:50]:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict):
                parts.append(f"[{_html.shorten(str(part.get('type', 'part')), 40)}]")
        return "\n".join(parts)
    return _html.shorten(repr(content), MAX_TEXT)


def _card(tool_call: Any, row: Step | None, result: Result | None, reply: Any) -> str:
    """One tool call: its name, arguments, outcome, and the result's card (or what the
    model was told)."""
    function = tool_call.get("function") if isinstance(tool_call, dict) else None
    function = function if isinstance(function, dict) else {}
    name = row.tool if row is not None and row.tool else function.get("name", "?")
    failed = row is not None and not row.ok
    if row is None:
        status = ""
    elif row.kind == "refused":
        status = " <span class='tb-error'>refused, not sent</span>"
    elif failed:
        status = " <span class='tb-error'>failed</span>"
    else:
        status = f" <small>ok{_ms(row.ms)}</small>"
    arguments = row.arguments if row is not None else function.get("arguments")
    shown_args = arguments if isinstance(arguments, str) else _html.pretty_json(arguments, 2_000)
    head = (f"<div><b>{_html.escape(_html.shorten(str(name), 120))}</b>"
            f"<small> step {row.step if row is not None else '?'}</small>{status}</div>"
            f"<pre>{_html.escape(_html.shorten(shown_args, 2_000))}</pre>")
    css = "tb-card tb-failed" if failed else "tb-card"
    parts = [head]
    if row is not None and row.error:
        parts.append(f"<div class='tb-error'>{_html.escape(_html.shorten(row.error, MAX_TEXT))}"
                     f"</div>")
    if result is not None:
        # The card is headed by the record's name (a secret in a tool's name hidden); the
        # result's own head would show the tool as the server named it.
        card = result_html(dataclasses.replace(result, tool=None), budget=RESULT_BUDGET)
        parts.append(f"<div class='tb-result'>{card}</div>")
    elif isinstance(reply, dict) and not (row is not None and row.error):
        told = _content_text(reply.get("content"))
        parts.append(f"<pre>{_html.escape(_html.shorten(told, MAX_TEXT))}</pre>")
    return f"<div class='{css}'>{''.join(parts)}</div>"


def _ms(ms: float | None) -> str:
    return "" if ms is None or ms != ms else f", {ms:,.1f} ms"
