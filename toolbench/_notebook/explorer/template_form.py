"""A resource template's variables as a form, with the server's completions.

Choosing a template in the explorer's Resources section builds one text field per variable
of its URI template (``city://{name}`` has ``name``); each field offers the server's
suggestions as one types (``toolbench._notebook.explorer.suggest``, with the template as
``(server, uri_template)``), and the URI box is filled in as the fields change. Only simple
``{name}`` variables (and their ``{+name}`` ``{#name}`` ``{/name}`` ``{.name}`` forms) are
understood; a template with none gets no form and is filled in by hand as before.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from toolbench._notebook.ask.form import Form, build_form, css_class
from toolbench._notebook.explorer.suggest import Post, Suggest

_VARIABLE = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_]+)\}")
MAX_VARIABLES = 20


def variables(template: str) -> list[str]:
    """The template's variable names, in order, each once (at most ``MAX_VARIABLES``)."""
    found = [m.group(2) for m in _VARIABLE.finditer(template)]
    return list(dict.fromkeys(found))[:MAX_VARIABLES]


def fill(template: str, values: dict[str, str]) -> str:
    """The URI with each variable given a value replaced (``{+x}`` keeps reserved chars)."""
    def one(match: re.Match[str]) -> str:
        op, name = match.group(1), match.group(2)
        value = values.get(name)
        if not value:
            return match.group(0)
        text = quote(value, safe="/:@!$&'()*+,;=" if op in ("+", "#") else "")
        return {"#": "#", "/": "/", ".": "."}.get(op, "") + text
    return _VARIABLE.sub(one, template)


class TemplateForm:
    """The form for one template; ``uri_box`` (a Text) follows what is typed."""

    def __init__(self, bench: Any, server: str, template: str, uri_box: Any,
                 post: Post) -> None:
        names = variables(template)
        self.template, self.uri_box = template, uri_box
        schema = {"type": "object", "properties": {n: {"type": "string"} for n in names}}
        self.form: Form = build_form(schema if names else None)
        self.form.widget.add_class("toolbench-form")
        self.form.widget.add_class(css_class("toolbench-template-form-", template))
        self.suggest = Suggest(bench, (server, template), self.form, post)
        for field in self.form.fields.values():
            field.input.observe(lambda _change: self._follow(), names="value")
        self.widgets = [self.form.widget, self.suggest.note] if names else []

    def _follow(self) -> None:
        values = {name: str(f.input.value or "") for name, f in self.form.fields.items()}
        self.uri_box.value = fill(self.template, values)
