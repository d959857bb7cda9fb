"""Suggestions while typing: a form's text fields offer the server's completions.

The explorer's prompt form (and anything else with a ``Form``) gets a ``Suggest``: every
string field becomes a ``Combobox`` (a text box with a drop-down list of suggestions), and
typing in it asks the server (``bench.complete``) for values, with the other fields' current
text as the context.

Bounded, debounced and never blocking the kernel: the observer (kernel thread) only records
the latest text and, when no request is running for that field, starts one on the shared
loop. There the request waits ``DEBOUNCE_S`` first, so a burst of keystrokes becomes one
request for the latest text; while it runs, newer text waits as one pending value (at most
one in flight plus one pending per field, whatever the typing rate). Each request is bounded
by ``TIMEOUT_S``; a failure shows as no suggestions and a short note, never an exception in
the kernel. The options shown are capped (``MAX_OPTIONS``) and are plain strings, which the
widget renders as text.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._loop import get_loop

if TYPE_CHECKING:
    from toolbench._notebook.ask.form import Form

DEBOUNCE_S = 0.25
TIMEOUT_S = 5.0
MAX_OPTIONS = 50
OPTION_CHARS = 200

Post = Callable[[Callable[[], None]], None]


class Suggest:
    """Completions for one form's string fields (see the module docstring)."""

    def __init__(self, bench: Any, target: Any, form: Form, post: Post) -> None:
        import ipywidgets as widgets

        self.bench, self.target, self.form, self._post = bench, target, form, post
        self._lock = threading.Lock()
        self._want: dict[str, str] = {}  # per field, the latest text
        self._running: set[str] = set()
        self.requests = 0
        """How many completion requests were sent (tests check the debounce)."""
        self.last_future: concurrent.futures.Future[None] | None = None
        self.note = widgets.HTML("")
        for name, field in form.fields.items():
            if field.kind != "string":
                continue
            old = field.input
            combo = widgets.Combobox(value=old.value, options=[], ensure_option=False,
                                     placeholder=old.placeholder, layout=old.layout,
                                     continuous_update=True)
            combo.add_class("toolbench-suggest")
            field.row.children = tuple(combo if child is old else child
                                       for child in field.row.children)
            field.input = combo
            old.close()
            combo.observe(lambda change, n=name: self._typed(n, change["new"]), names="value")

    def _context(self, name: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for other, field in self.form.fields.items():
            value = getattr(field.input, "value", None)
            if other != name and field.kind == "string" and isinstance(value, str) and value:
                found[other] = value
        return found

    def _typed(self, name: str, value: Any, *, others: bool = True) -> None:
        """The observer: record the text; start a request unless one is running.

        A field's suggestions depend on the others (the context), and the front end may
        deliver a field's last keystrokes after another field's: so a change also asks
        again for every other field typed in before, and the context is read when the
        request is sent. The suggestions shown follow the form's latest state.
        """
        if not isinstance(value, str):
            return
        with self._lock:
            typed_before = [n for n in self._want if n != name]
            self._want[name] = value
            start = name not in self._running  # else: the running one picks it up
            self._running.add(name)
        if start:
            self.last_future = get_loop().submit(lambda: self._run(name))
        if others:
            for other in typed_before:
                current = getattr(self.form.fields[other].input, "value", None)
                self._typed(other, current, others=False)

    async def _run(self, name: str) -> None:
        while True:
            await asyncio.sleep(DEBOUNCE_S)
            with self._lock:
                value = self._want[name]
            context = self._context(name)  # as it stands now, not when the key was typed
            note = ""
            try:
                self.requests += 1
                options = await asyncio.wait_for(
                    self.bench.completions.complete(self.target, name, value, context or None,
                                         TIMEOUT_S), TIMEOUT_S + 1)
            except Exception as exc:  # shown as a note; the kernel never sees it
                options = []
                note = f"no suggestions for {name}: {type(exc).__name__}: {exc}"
            shown = [_html.shorten(str(o), OPTION_CHARS) for o in options[:MAX_OPTIONS]]
            self._post(functools.partial(self._show, name, shown, note))
            with self._lock:
                if self._want[name] == value:
                    self._running.discard(name)
                    return

    def _show(self, name: str, options: list[str], note: str) -> None:
        field = self.form.fields.get(name)
        if field is None:
            return
        field.input.options = tuple(dict.fromkeys(options))
        self.note.value = (f"<small style='color:#666'>{_html.escape(_html.shorten(note, 300))}"
                           "</small>" if note else "")
