"""What a person sees of a server's question: the sampling and elicitation widgets.

Everything a server sent is escaped and capped: at most ``MAX_SHOWN_MESSAGES`` messages of a
sampling request are shown (the rest are counted), each at most ``MAX_MESSAGE_CHARS``; a URL
request's link is shown (``http``/``https`` only), never opened. An elicitation form is
``form.py``'s, checked by the bounded validator; when the schema cannot be fully checked
here (a remote ``$ref``, a pattern re2 cannot run), the form says why.

A widget answers exactly once, through the function it was given; when and where it is shown,
and how a settling click is put off (``defer``), is the asker's (:mod:`.ask`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types

from toolbench._core import html as _html
from toolbench._transports import server_requests as _requests
from toolbench._transports.server_requests import HandlerError

MAX_SHOWN_MESSAGES = 20
"""A sampling request's last messages shown; earlier ones are only counted."""
MAX_MESSAGE_CHARS = 2_000
MAX_TEXT_CHARS = 500
"""Caps for a server's message, system prompt, URL and the like."""
RED = "color:#b00020"
"""The style of a refusal or an error shown to the person."""


# -- rendering (pure, bounded, escaped) ----------------------------------------------------
def _text(value: object, limit: int) -> str:
    return _html.escape(_html.shorten(str(value), limit))


def block_html(content: Any) -> str:
    """One content block of a sampling message: text escaped and capped, media described."""
    kind = getattr(content, "type", None)
    if kind == "text":
        text = str(getattr(content, "text", ""))
        return (f"<span style='white-space:pre-wrap'>{_text(text, MAX_MESSAGE_CHARS)}</span>"
                + (f" <small>({len(text):,} characters)</small>"
                   if len(text) > MAX_MESSAGE_CHARS else ""))
    if kind in ("image", "audio"):
        data = str(getattr(content, "data", ""))
        mime = _text(getattr(content, "mime_type", "?"), 80)
        return f"<i>[{kind} {mime}, {len(data) * 3 // 4:,} bytes]</i>"
    if isinstance(content, list):
        return "<br>".join(block_html(c) for c in content[:MAX_SHOWN_MESSAGES])
    return f"<i>[{_text(kind or type(content).__name__, 60)} block]</i>"


def sampling_html(server: str, params: types.CreateMessageRequestParams) -> str:
    """The request as a short transcript: bounded whatever the server sent."""
    messages = list(params.messages)
    shown = messages[-MAX_SHOWN_MESSAGES:]
    parts = [f"<div><b>{_text(server, 80)}</b> asks for a reply (sampling), at most "
             f"{int(params.max_tokens):,} tokens.</div>"]
    if params.system_prompt:
        parts.append(f"<div><small>system:</small> {_text(params.system_prompt, MAX_TEXT_CHARS)}"
                     "</div>")
    if len(messages) > len(shown):
        parts.append(f"<div><i>{len(messages) - len(shown):,} earlier messages not shown "
                     f"({len(messages):,} in all)</i></div>")
    for message in shown:
        parts.append(f"<div><small>{_text(message.role, 20)}:</small> "
                     f"{block_html(message.content)}</div>")
    return "<div class='toolbench-sampling'>" + "".join(parts) + "</div>"


def safe_link(url: str) -> str:
    """An http(s) URL as an escaped link that opens in a new tab only if a person clicks it;
    any other scheme (``javascript:``, ``data:``, ``file:``) is shown as text only."""
    shown = _text(url, MAX_TEXT_CHARS)
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        scheme = ""
    if scheme not in ("http", "https"):
        return f"<code>{shown}</code> <small style='{RED}'>(not an http(s) link)</small>"
    return (f"<a href=\"{_html.escape(url)}\" target=\"_blank\" "
            f"rel=\"noopener noreferrer nofollow\">{shown}</a>")


# -- the widgets ----------------------------------------------------------------------------
Answer = Callable[[Any], None]
"""Receives the answer: a value for the handler protocol, or a ``HandlerError``."""


class AskWidget:
    """What both kinds share: a status line, buttons, and answering exactly once."""

    def __init__(self, answer: Answer) -> None:
        import ipywidgets as widgets

        self._answer = answer
        self.answered: str | None = None
        self.status = widgets.HTML("")
        self.buttons: list[Any] = []
        self.widget: Any = None
        # How a settling click is put off (the asker's); None: decided at once.
        self.defer: Callable[[Callable[[], None]], None] | None = None
        self.settling = False

    def _button(self, label: str, style: str, on_click: Callable[[], None],
                settle: bool = False) -> Any:
        import ipywidgets as widgets

        button = widgets.Button(description=label, button_style=style)
        button.add_class("toolbench-ask-" + label.lower())
        button.on_click(lambda _b: self._clicked(on_click, settle))
        self.buttons.append(button)
        return button

    def _clicked(self, action: Callable[[], None], settle: bool) -> None:
        if self.answered is not None or self.settling:
            return
        if not settle or self.defer is None:
            self._guarded(action)
            return
        self.settling = True

        def decide() -> None:
            self.settling = False
            self._guarded(action)

        try:
            self.defer(decide)
        except Exception:  # no way to put it off: decide now
            decide()

    def _guarded(self, action: Callable[[], None]) -> None:
        if self.answered is not None:
            return
        try:
            action()
        except Exception as exc:  # a click handler must never raise into the kernel
            self.status.value = f"<span style='{RED}'>{_text(exc, 300)}</span>"

    def finish(self, value: Any, note: str) -> None:
        if self.answered is not None:
            return
        self.answered = note
        for button in self.buttons:
            button.disabled = True
        self.status.value = f"<b>{_text(note, 200)}</b>"
        self._answer(value)

    def expire(self, why: str) -> None:
        """The request ended without an answer from here (timeout, interrupt, call over)."""
        if self.answered is not None:
            return
        self.answered = why
        for button in self.buttons:
            button.disabled = True
        self.status.value = f"<span style='{RED}'>{_text(why, 300)}</span>"


class SamplingAsk(AskWidget):
    """A sampling request as a transcript, a reply box, and Send / Reject."""

    def __init__(self, server: str, params: types.CreateMessageRequestParams,
                 answer: Answer) -> None:
        import ipywidgets as widgets

        super().__init__(answer)
        self.transcript = widgets.HTML(sampling_html(server, params))
        self.reply = widgets.Textarea(placeholder="the reply the server gets", rows=4,
                                      continuous_update=False,  # sent on blur (ask.py: settling)
                                      layout=widgets.Layout(width="95%"))
        self.send = self._button("Send", "success", self._send, settle=True)
        self.reject = self._button("Reject", "danger", self._reject)
        self.widget = widgets.VBox([self.transcript, self.reply,
                                    widgets.HBox([self.send, self.reject]), self.status])
        self.widget.add_class("toolbench-ask")

    def _send(self) -> None:
        if not self.reply.value.strip():
            self.status.value = f"<span style='{RED}'>write a reply first (or Reject)</span>"
            return
        self.finish(self.reply.value, "sent")

    def _reject(self) -> None:
        self.finish(HandlerError("the person rejected the sampling request",
                                 code=_requests.USER_REJECTED), "rejected")


class ElicitationAsk(AskWidget):
    """An elicitation: the schema as a form (or a URL as a link), Accept / Decline / Cancel."""

    def __init__(self, server: str, params: types.ElicitRequestParams, answer: Answer) -> None:
        import ipywidgets as widgets

        from toolbench._notebook.ask.form import build_form

        super().__init__(answer)
        self.params = params
        self.form: Any = None
        head = (f"<div><b>{_text(server, 80)}</b> asks: "
                f"<span style='white-space:pre-wrap'>{_text(params.message, MAX_TEXT_CHARS)}"
                "</span></div>")
        rows: list[Any] = []
        if isinstance(params, types.ElicitRequestURLParams):
            head += (f"<div>It asks you to visit {safe_link(params.url)}; nothing is opened "
                     "for you. Accept once you are done there.</div>")
        else:
            notes = _requests.schema_notes(params.requested_schema)
            if notes:
                shown = "".join(f"<li>{_text(n, 300)}</li>" for n in notes[:5])
                head += (f"<div style='{RED}'>Your answer is not fully checked here; the "
                         f"server checks it:<ul>{shown}</ul></div>")
            self.form = build_form(params.requested_schema)
            rows.append(self.form.widget)
        self.message = widgets.HTML(head)
        self.accept = self._button("Accept", "success", self._accept, settle=True)
        self.decline = self._button("Decline", "warning", lambda: self.finish(
            {"action": "decline"}, "declined"))
        self.cancel = self._button("Cancel", "", lambda: self.finish(
            {"action": "cancel"}, "cancelled"))
        self.widget = widgets.VBox([self.message, *rows,
                                    widgets.HBox([self.accept, self.decline, self.cancel]),
                                    self.status])
        self.widget.add_class("toolbench-ask")

    def _accept(self) -> None:
        if self.form is None:
            self.finish({"action": "accept"}, "accepted")
            return
        from toolbench._notebook.ask.form import FormError

        try:
            content = self.form.values()  # marks the broken fields, or the checked content
        except FormError:
            self.status.value = (f"<span style='{RED}'>fix the marked fields; nothing was "
                                 "sent yet</span>")
            return
        try:  # the same check the server's answer gets from a function handler
            _requests.elicit_result({"action": "accept", "content": content}, self.params)
        except HandlerError as exc:
            self.status.value = f"<span style='{RED}'>{_text(exc.message, 300)}</span>"
            return
        self.finish({"action": "accept", "content": content}, "accepted")
