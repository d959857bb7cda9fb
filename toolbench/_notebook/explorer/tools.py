"""The explorer's Tools section: the catalog list, a tool's description and form, Call (its
server's questions shown in the Call tab), Compare and the tool's History."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import ipywidgets as widgets

from toolbench._bench.apps.meta import tool_ui
from toolbench._bench.report.report import check_spec
from toolbench._core import html as _html
from toolbench._core.client import result_html
from toolbench._loop import get_loop
from toolbench._notebook.ask.form import FormError, build_form, css_class
from toolbench._notebook.explorer.base import (
    ALL_SERVERS,
    MAX_DESCRIPTION,
    ExplorerBase,
    close_tree,
)
from toolbench._notebook.views import report as report_view
from toolbench._notebook.views.about import server_about_html
from toolbench._notebook.views.compare import compare_html
from toolbench._notebook.views.display import error_html, history_html


class ToolsSection(ExplorerBase):
    """Browse the catalog, fill a tool's form, call or compare it, see its calls."""

    def refresh(self, servers: bool = False) -> None:
        """Re-read the catalog (and, with ``servers``, the server list) into the tool list."""
        if self._updating:
            return
        self.check_closed()
        self._updating = True
        try:
            if servers:
                names = [str(n) for n in self.bench.servers["name"]]
                current = self.server_filter.value
                self.server_filter.options = [("all", ALL_SERVERS)] + [
                    (_html.shorten(n, 40), n) for n in names]
                self.server_filter.value = current if current in names else ALL_SERVERS
            server = self.server_filter.value or None
            search = self.search.value.strip() or None
            catalog = self.bench.catalog(server=server, search=search)
            names = [str(n) for n in catalog["name"]]
            previous = self.tool_list.value
            self.tool_list.options = [(_html.shorten(n, 60), n) for n in names]
            self.tool_list.value = previous if previous in names else (names[0] if names else None)
            total = self.bench.pegboard.tool_count()
            self.count.value = f"<small>{len(names):,} of {_html.counted(total, 'tool')}</small>"
        finally:
            self._updating = False
        self._select(self.tool_list.value)
        self.show_resources()  # the filter and the search apply to every section
        self.show_prompts()

    def _on_select(self, change: Any) -> None:
        if not self._updating:
            self._select(change["new"])

    def _select(self, name: str | None) -> None:
        if name is None or name not in self.bench.pegboard:
            self._shown = None
            old = self.form
            self.form = build_form(None)
            self.form_box.children = [widgets.HTML("<i>no tool selected</i>")]
            close_tree(old.widget)
            self.description.value = "<i>no tool matches</i>"
            self.compare_servers.value = ""
            return
        if self._shown == name:
            return
        self._shown = name
        self.show_history()  # the History tab is the selected tool's
        entry = self.bench.pegboard.entry(name)
        spec = entry.spec
        # The new form goes in first and the description last: a front end (or a person)
        # that sees the new description can rely on the form below it being the new one.
        old = self.form
        self.form = build_form(spec.input_schema)
        self.form.widget.add_class("toolbench-form")
        self.form.widget.add_class(css_class("toolbench-form-", name))
        self.form_box.children = [self.form.widget]
        close_tree(old.widget)
        self.result.value = ""
        offering = sorted(e.server for e in self.bench.pegboard.entries() if e.tool == entry.tool)
        self.compare_servers.value = (
            f"Runs the form's arguments on every server offering <code>"
            f"{_html.escape(entry.tool)}</code>: "
            + ", ".join(f"<code>{_html.escape(s)}</code>" for s in offering))
        self.compare_output.value = ""
        title = f" — {_html.escape(_html.shorten(spec.title, 200))}" if spec.title else ""
        if spec.task_only:  # the server says so (execution.taskSupport == "required")
            title += (" <span class='toolbench-task-only' title='the server runs this tool only "
                      "as a task; a call creates the task and waits for it'>⏱ task only</span>")
        uri = tool_ui(spec.meta).uri
        if uri is not None:  # the tool brings an MCP App view: a Call shows it
            title += (f" <span class='toolbench-ui' title='an MCP App view: "
                      f"{_html.escape(_html.shorten(uri, 300))}'>ui</span>")
        self.description.value = self.server_about(entry.server) + (  # escaped prose
            f"<div class='toolbench-description'><b>{_html.escape(name)}</b>{title} "
            f"<small>server <code>{_html.escape(entry.server)}</code>, tool "
            f"<code>{_html.escape(entry.tool)}</code></small>"
            f"<div style='max-height:10em;overflow:auto'>"
            f"{_html.description_html(spec.description or '', MAX_DESCRIPTION)}</div></div>"
            + self._findings(entry))

    def _findings(self, entry: Any) -> str:
        """The tool's cost and report findings (``df.tb.report()``), beside its description."""
        try:
            siblings = [e.spec for e in self.bench.pegboard.entries(entry.server)
                        if e.name != entry.name]
            checked = check_spec(entry.server, entry.name, entry.spec, siblings)
            return report_view.explorer_html(checked.findings, checked.tokens,
                                             checked.tokenizer)
        except Exception as exc:  # the description shows whatever the report makes of it
            return f"<small>findings unavailable ({_html.escape(type(exc).__name__)})</small>"

    def server_about(self, server: str) -> str:
        """The server's title, icons and instructions as HTML, escaped (``about.py``)."""
        try:
            row = {str(k): v for k, v in
                   self.bench.servers.set_index("name").loc[server].to_dict().items()}
        except Exception:  # display never raises
            return ""
        return server_about_html(server, row)

    # -- calling --------------------------------------------------------------------------
    def _arguments(self, output: Any) -> dict[str, Any] | None:
        name = self.tool_list.value
        if not name:
            output.value = "<i>choose a tool first</i>"
            return None
        try:
            return self.form.values()
        except FormError as exc:
            # The form marks each field and says "nothing was sent" below itself. The Call tab
            # shows that form, so repeating it under the button would say it twice; the
            # Compare tab does not show the form, so it names the fields.
            output.value = "" if output is self.result else (
                "<span style='color:#b00020'>invalid input in the Call tab's form ("
                f"{_html.escape(', '.join(sorted(exc.errors)))}); nothing was sent</span>")
            return None

    def call(self) -> concurrent.futures.Future[None] | None:
        """What the Call button does: validate, start the call, return a future for the UI."""
        if self.check_closed() or self.call_button.disabled:
            return None
        self.last_future = None
        arguments = self._arguments(self.result)
        if arguments is None:
            return None
        name = str(self.tool_list.value)
        self._busy(self.call_button, self.busy, True, "Calling…")
        self._route_asks(name)
        work = get_loop().submit(lambda: self.bench.acall(name, arguments))
        return self._track(work, self._finish_call)

    def _route_asks(self, name: str) -> None:
        """While this call runs, its server's questions show in the Call tab (not in a cell)."""
        from toolbench._transports.server_requests import registered_asker

        route = getattr(registered_asker(), "route", None)
        if route is None or name not in self.bench.pegboard:
            return
        self._unroute = route(self.bench.pegboard.entry(name).server, self._show_ask)

    def _show_ask(self, widget: Any) -> None:
        self.ask_box.children = (*self.ask_box.children, widget)

    def _finish_call(self, work: concurrent.futures.Future[Any]) -> None:
        try:
            result = work.result()
            self.last_result = result
            self.result.value = result_html(result)
            self._show_app(result)
        except BaseException as exc:  # shown, not raised: the button's caller is the UI
            self.last_result = exc
            self.result.value = error_html(exc)
            self._show_app(None)
        finally:
            if self._unroute is not None:
                self._unroute()
                self._unroute = None
            self.ask_box.children = ()  # the outcome is in the result now
            self._busy(self.call_button, self.busy, False, "Call")

    def _show_app(self, result: Any) -> None:
        """The call's MCP App view above its result (DESIGN.md, "MCP Apps": the explorer's Call
        shows the view); the previous call's view is closed, which tears it down."""
        previous = self.app_box.children
        view = None
        if result is not None:
            try:
                view = result.app
            except Exception as exc:  # the result card still shows
                view = widgets.HTML(f"<small>the view could not be opened "
                                    f"({_html.escape(type(exc).__name__)})</small>")
        self.app_box.children = () if view is None else (view,)
        for old in previous:
            if old is not view:
                close_tree(old)

    def compare(self) -> concurrent.futures.Future[None] | None:
        """What the Compare button does: the same arguments on every server with this tool."""
        if self.check_closed() or self.compare_button.disabled:
            return None
        self.last_future = None
        arguments = self._arguments(self.compare_output)
        if arguments is None:
            return None
        name = str(self.tool_list.value)
        self._busy(self.compare_button, self.compare_busy, True, "Comparing…")
        work = get_loop().submit(lambda: self.bench.acompare(name, [arguments]))
        return self._track(work, self._finish_compare)

    def _finish_compare(self, work: concurrent.futures.Future[Any]) -> None:
        try:
            df = work.result()
            self.last_compare = df
            self.compare_output.value = compare_html(df)
        except BaseException as exc:
            self.compare_output.value = error_html(exc)
        finally:
            self._busy(self.compare_button, self.compare_busy, False, "Compare")

    def show_history(self) -> None:
        """Re-render the selected tool's calls, newest first by when they started (the whole
        bench's are in ``bench.records``)."""
        self.check_closed()
        try:
            name = self.tool_list.value
            if not name or name not in self.bench.pegboard:
                self.history.value = "<i>choose a tool to see its calls</i>"
                return
            entry = self.bench.pegboard.entry(name)
            records = self.bench.records
            mine = records[(records["server"] == entry.server) & (records["tool"] == entry.tool)
                           & (records["kind"] == "tool")] if len(records) else records
            others = len(records) - len(mine)
            note = (f"<p><small>{_html.counted(others, 'other record')} on this bench "
                    f"(other tools, reads, prompts): <code>bench.records</code> has every one"
                    f"</small></p>" if others else "")
            self.history.value = history_html(
                mine, caption=f"calls of {_html.shorten(name, 80)} (newest first)") + note
        except Exception as exc:
            self.history.value = f"<i>history unavailable ({_html.escape(type(exc).__name__)})</i>"
