"""The explorer's Prompts section: every server's prompts, listed when the section is first
opened; choosing one builds a form of its (string) arguments, whose fields offer the server's
completions; Get prompt fetches the transcript."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import ipywidgets as widgets

from toolbench._core import html as _html
from toolbench._loop import get_loop
from toolbench._notebook.ask.form import FormError, build_form, css_class
from toolbench._notebook.explorer.base import (
    NO_PROMPTS,
    PROMPT_VIEW,
    ExplorerBase,
    close_tree,
    frame_records,
    info_html,
    listing_failure,
)
from toolbench._notebook.explorer.suggest import Suggest
from toolbench._notebook.views.display import error_html


class PromptsSection(ExplorerBase):
    """List and choose prompts, fill in their arguments, fetch them."""

    def load_prompts(self) -> concurrent.futures.Future[None] | None:
        """List every server's prompts (on the shared loop); a future for the UI."""
        return self._listing(self.prompts_button, self.prompts_busy, self.prompts_note,
                             "listing…", self._list_prompts, self._finish_prompts)

    async def _list_prompts(self, names: list[str]
                            ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        found: dict[str, list[dict[str, Any]]] = {}
        notes: dict[str, str] = {}

        async def one(name: str) -> None:
            try:
                frame = await self.bench.aprompts(server=name)
            except Exception as exc:  # noted per server
                notes[name] = listing_failure(exc)
                return
            found[name] = frame_records(frame)
            if not found[name]:
                notes[name] = "lists no prompts"

        await asyncio.gather(*(one(name) for name in names))
        return [row for name in names for row in found.get(name, [])], notes

    def _finish_prompts(self, work: concurrent.futures.Future[Any]) -> None:
        try:
            self.prompt_rows, self.prompt_notes = work.result()
            self.prompts_loaded = True
            self.show_prompts()
        except BaseException as exc:  # shown, not raised: the caller is the UI
            self.prompts_note.value = error_html(exc)
        finally:
            self._busy(self.prompts_button, self.prompts_busy, False, "refresh")

    def show_prompts(self) -> None:
        """Render the listed prompts (filtered, capped, escaped) into the Prompts tab."""
        if not self.prompts_loaded:
            return
        try:
            self._show_listing(self.prompt_rows, self.prompt_notes, ("name", "title",
                               "description"), self.prompt_choice, "(choose a prompt)",
                               self.prompts_note, self.prompt_table, PROMPT_VIEW, "prompts",
                               NO_PROMPTS,
                               lambda r: str(r["name"]) + (f" — {r['title']}" if r.get("title")
                                                           else ""))
        except Exception as exc:  # display never raises
            self.prompts_note.value = error_html(exc)

    def _on_prompt(self, change: Any) -> None:
        if not self._updating:
            self._select_prompt(change["new"])

    def _select_prompt(self, index: int | None) -> None:
        """Build the chosen prompt's form: one text field per argument, required marked."""
        old = self.prompt_form
        if index is None or not 0 <= index < len(self.prompt_rows):
            self.prompt_form = build_form(None)
            self.prompt_form_box.children = []
            self.prompt_info.value = ""
            self.prompt_button.disabled = True
            close_tree(old.widget)
            return
        row = self.prompt_rows[index]
        self.prompt_form = build_form(prompt_schema(row.get("arguments")))
        # Its text fields offer the server's completions as one types (suggest.py).
        self.prompt_suggest = Suggest(self.bench, str(row["name"]), self.prompt_form,
                                      self._post)
        self.prompt_form.widget.add_class("toolbench-form")
        self.prompt_form.widget.add_class(css_class("toolbench-prompt-form-", str(row["name"])))
        if not self.prompt_form.fields and self.prompt_form.whole is None:
            self.prompt_form.widget.children = [
                widgets.HTML("<em>this prompt takes no arguments</em>"),
                self.prompt_form.message]
        self.prompt_form_box.children = [self.prompt_form.widget, self.prompt_suggest.note]
        close_tree(old.widget)
        self.prompt_button.disabled = self.closed
        self.prompt_output.value = ""
        self.prompt_info.value = info_html("toolbench-prompt-info", row, [
            ("server", row["server"]), ("prompt", row["prompt"])])

    def get_prompt(self) -> concurrent.futures.Future[None] | None:
        """What the Get prompt button does: check the form, fetch the transcript (recorded)."""
        if self.prompt_button.disabled and not self.closed:  # busy: a second press does nothing
            return None
        self.last_future = None
        if self.check_closed() or self.prompt_button.disabled:
            return None
        index = self.prompt_choice.value
        if index is None or not 0 <= index < len(self.prompt_rows):
            self.prompt_output.value = "<em>choose a prompt first</em>"
            return None
        try:
            arguments = self.prompt_form.values()
        except FormError:  # the form marks the fields and says nothing was sent
            self.prompt_output.value = ""
            return None
        name = str(self.prompt_rows[index]["name"])
        self._busy(self.prompt_button, self.prompt_busy, True, "Fetching…")
        work = get_loop().submit(lambda: self.bench.aprompt(name, arguments))
        return self._track(work, self._finish_prompt)

    def _finish_prompt(self, work: concurrent.futures.Future[Any]) -> None:
        try:
            answer = work.result()
            self.last_result = answer
            self.prompt_output.value = answer._repr_html_()  # escaped; never raises
        except BaseException as exc:  # shown, not raised: the caller is the UI
            self.last_result = exc
            self.prompt_output.value = error_html(exc)
        finally:
            self._busy(self.prompt_button, self.prompt_busy, False, "Get prompt")


def prompt_schema(arguments: object) -> dict[str, Any]:
    """A form schema for a prompt's arguments: MCP's are strings, some required.

    ``arguments`` is the server's list of ``{name, description, required}`` (untrusted:
    entries that are not such a mapping with a str name are left out).
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for item in arguments if isinstance(arguments, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        name = item["name"]
        prop: dict[str, Any] = {"type": "string"}
        if isinstance(item.get("description"), str):
            prop["description"] = _html.shorten(item["description"], 500)
        properties[name] = prop
        if item.get("required") is True and name not in required:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}
