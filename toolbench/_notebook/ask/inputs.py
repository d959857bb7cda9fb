"""A VS Code ``${input:id}`` asked in a notebook: a small card with the input's description, a
text box (a password box for ``"password": true``, a list for ``pickString``), Use and Cancel.

It is an ``"ask"`` question (kind ``"input"``) of :mod:`toolbench._notebook.ask.ask`, so it
shows during a plain blocking ``bench.load_config`` through the cell-side pump, in the cell
that waits. A password is read once and the box emptied at once, so it stays in no widget
state; the card says only that it was received. The declaration's words are the config
file's, shown escaped and capped. Outside a kernel (or without ipywidgets) nobody is asked
and ``load_config`` names the inputs to pass instead (``toolbench._bench.clients.inputs``).
"""

from __future__ import annotations

from typing import Any

from toolbench._bench.clients.inputs import InputPrompt, register_input_asker
from toolbench._core import html as _html
from toolbench._notebook.ask import ask as _ask
from toolbench._notebook.ask import widgets as _widgets
from toolbench._transports.server_requests import HandlerError

KIND = "input"


class InputCard(_widgets.AskWidget):
    """One input: what it is for, the box, Use and Cancel."""

    def __init__(self, source: str, prompt: InputPrompt, answer: _widgets.Answer) -> None:
        import ipywidgets as widgets

        super().__init__(answer)
        self.prompt = prompt
        self.message = widgets.HTML(
            f"<div><b>{_html.escape(_html.shorten(prompt.source, 200))}</b> asks for input "
            f"<code>{_html.escape(_html.shorten(prompt.id, 80))}</code>: "
            f"{_html.escape(_html.shorten(prompt.description, 500))}"
            + (" <small>(hidden, never kept)</small>" if prompt.password else "") + "</div>")
        self.box: Any
        if prompt.options:
            self.box = widgets.Dropdown(options=list(prompt.options),
                                        value=prompt.default if prompt.default in prompt.options
                                        else prompt.options[0])
        elif prompt.password:
            self.box = widgets.Password(placeholder=prompt.id, continuous_update=False)
        else:
            self.box = widgets.Text(value=prompt.default or "", placeholder=prompt.id,
                                    continuous_update=False)
        self.box.add_class("toolbench-input-value")
        self.use = self._button("Use", "primary", self._use, settle=True)
        self.cancel = self._button("Cancel", "", self._cancel)
        self.widget = widgets.VBox([self.message, widgets.HBox([self.box, self.use,
                                                                self.cancel]), self.status])
        self.widget.add_class("toolbench-input")

    def _use(self) -> None:
        value = str(self.box.value or "")
        if self.prompt.password:
            self.box.value = ""  # no secret stays in the widget's state
        if not value and not self.prompt.options:
            self.status.value = (f"<span style='{_widgets.RED}'>input "
                                 f"{_html.escape(_html.shorten(repr(self.prompt.id), 80))} "
                                 "needs a value: the box is empty; nothing was sent</span>")
            return
        self.box.disabled = True
        self.finish(value, "received (hidden)" if self.prompt.password else "received")

    def _cancel(self) -> None:
        self._close_box()
        self.finish(HandlerError(f"the person cancelled input {self.prompt.id!r}"),
                    "cancelled")

    def expire(self, why: str) -> None:
        """The question ended unanswered (an interrupt, the inputs' timeout): a password
        typed and sent on blur, but never used, leaves the widget's state too."""
        if self.answered is None:
            self._close_box()
        super().expire(why)

    def _close_box(self) -> None:
        if self.prompt.password:
            self.box.value = ""
        self.box.disabled = True


_ask.KINDS[KIND] = InputCard


class NotebookInputs:
    """The ``InputAsker`` of a kernel: the process's asker, with the input card."""

    def available(self) -> str | None:
        return _ask.ASKER.available()

    def prepare(self) -> None:
        _ask.ASKER.prepare()

    async def ask_input(self, prompt: InputPrompt) -> str:
        return str(await _ask.ASKER.ask(KIND, prompt.source, prompt))


register_input_asker(NotebookInputs())
