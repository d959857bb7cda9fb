"""The explorer's Resources section: every server's resources and templates, listed when
the section is first opened; choosing one reads it (a template waits for its variables, which
``template_form.py`` fills with the server's completions); Read reads any URI."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from toolbench._loop import get_loop
from toolbench._notebook.explorer.base import (
    NO_RESOURCES,
    RESOURCE_VIEW,
    ExplorerBase,
    close_tree,
    frame_records,
    info_html,
    listing_failure,
)
from toolbench._notebook.explorer.template_form import TemplateForm
from toolbench._notebook.views.display import error_html


class ResourcesSection(ExplorerBase):
    """List, choose and read resources (templates filled in first)."""

    def load_resources(self) -> concurrent.futures.Future[None] | None:
        """List every server's resources and templates (on the shared loop); a future for
        the UI, as ``call`` returns."""
        return self._listing(self.resources_button, self.resources_busy, self.resources_note,
                             "listing…", self._list_resources, self._finish_resources)

    async def _list_resources(self, names: list[str]
                              ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """Each server on its own, at once: one server's failure is its note, not the tab's."""
        found: dict[str, list[dict[str, Any]]] = {}
        notes: dict[str, str] = {}

        async def one(name: str) -> None:
            rows: list[dict[str, Any]] = []
            for kind, listing in (("resource", self.bench.aresources),
                                  ("template", self.bench.aresource_templates)):
                try:
                    frame = await listing(server=name)
                except Exception as exc:  # noted per server; the first failure says it all
                    notes[name] = listing_failure(exc)
                    break
                rows += [{**row, "kind": kind} for row in frame_records(frame)]
            found[name] = rows
            if not rows and name not in notes:
                notes[name] = "lists no resources"

        await asyncio.gather(*(one(name) for name in names))
        return [row for name in names for row in found.get(name, [])], notes

    def _finish_resources(self, work: concurrent.futures.Future[Any]) -> None:
        try:
            self.resource_rows, self.resource_notes = work.result()
            self.resources_loaded = True
            self.show_resources()
        except BaseException as exc:  # shown, not raised: the caller is the UI
            self.resources_note.value = error_html(exc)
        finally:
            self._busy(self.resources_button, self.resources_busy, False, "refresh")

    def show_resources(self) -> None:
        """Render the listed resources (filtered, capped, escaped) into the Resources tab."""
        if not self.resources_loaded:
            return
        try:
            self._show_listing(self.resource_rows, self.resource_notes, ("name", "uri",
                               "title", "description"), self.resource_choice,
                               "(choose a resource)", self.resources_note, self.resource_table,
                               RESOURCE_VIEW, "resources and templates", NO_RESOURCES,
                               lambda r: f"{r['server']} · {r['name']}  ({r['uri']})"
                               + ("  [template]" if r["kind"] == "template" else ""))
        except Exception as exc:  # display never raises
            self.resources_note.value = error_html(exc)

    def _on_resource(self, change: Any) -> None:
        if not self._updating:
            self._select_resource(change["new"])

    def _select_resource(self, index: int | None) -> concurrent.futures.Future[None] | None:
        """Show the chosen resource and read it; a template waits for its variables."""
        if index is None or not 0 <= index < len(self.resource_rows):
            self._resource_server = None
            self.resource_info.value = ""
            self.template_box.children = []
            return None
        row = self.resource_rows[index]
        self._resource_server = str(row["server"])
        self.resource_uri.value = str(row["uri"])
        facts = [("server", row["server"])] + [(key, row[key]) for key in ("mime_type", "size")
                                               if row.get(key) is not None]
        self.resource_info.value = info_html("toolbench-resource-info", row, facts)
        old, self.template_form = self.template_form, None
        if row["kind"] == "template":  # its variables as a form offering completions
            self.template_form = TemplateForm(self.bench, str(row["server"]), str(row["uri"]),
                                              self.resource_uri, self._post)
        self.template_box.children = self.template_form.widgets if self.template_form else []
        if old is not None:
            close_tree(old.form.widget)
        if row["kind"] == "template":
            self.last_future = None
            self.resource_output.value = (
                "<em>a template: fill in its <code>{variables}</code> in the URI box, then "
                "press Read</em>")
            return None
        return self.read()

    def read(self) -> concurrent.futures.Future[None] | None:
        """What the Read button does: read the URI box's URI from the chosen resource's
        server (or the filter's server), recorded like any read; a future for the UI."""
        if self.read_button.disabled and not self.closed:  # busy: a second press does nothing
            return None
        self.last_future = None
        if self.check_closed() or self.read_button.disabled:
            return None
        uri = self.resource_uri.value.strip()
        server = self._resource_server or self.server_filter.value or None
        if server is None or not uri:
            self.resource_output.value = ("<em>choose a resource (or a server in the filter) "
                                          "and a URI first; nothing was sent</em>")
            return None
        index = self.resource_choice.value
        if (index is not None and 0 <= index < len(self.resource_rows)
                and self.resource_rows[index]["kind"] == "template"
                and uri == self.resource_rows[index]["uri"]):
            self.resource_output.value = ("<em>fill in the template's <code>{variables}"
                                          "</code> first; nothing was sent</em>")
            return None
        self._busy(self.read_button, self.read_busy, True, "Reading…")
        work = get_loop().submit(lambda: self.bench.aread(server, uri))
        return self._track(work, self._finish_read)

    def _finish_read(self, work: concurrent.futures.Future[Any]) -> None:
        try:
            answer = work.result()
            self.last_result = answer
            self.resource_output.value = answer._repr_html_()  # escaped; never raises
        except BaseException as exc:  # shown, not raised: the caller is the UI
            self.last_result = exc
            self.resource_output.value = error_html(exc)
        finally:
            self._busy(self.read_button, self.read_busy, False, "Read")
