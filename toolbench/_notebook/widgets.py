"""``bench.explore()``: browse the catalog, fill a form, call or compare, see the history.

Calls run on toolbench's shared loop, so the kernel stays free while a slow tool works.
The widgets are updated from the call's completion on the kernel's own event loop when
there is one (captured when the explorer is built): ipywidgets are not thread-safe, and the
kernel loop is where every other widget change happens. Without a running loop (plain
Python, tests) the update runs right where the call finished.

Every string a server sent (names, descriptions, results, errors, resources, prompt messages,
log lines) is escaped before it reaches an HTML widget.

Four sections: **Tools** (the catalog, a form, Call, Compare, History), **Resources**,
**Prompts** and **Log**. Resources and prompts are listed when their section is first opened
(or refreshed), not when the explorer is built: a listing is a request to every server, and
most explorations never look there. Their lists are Dropdowns, not Selects: the tool list is
the explorer's one Select, which a page (and ``tests/test_browser.py``) can find by its class.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from toolbench._bench.progress import LOG_COLUMNS
from toolbench._core import html as _html
from toolbench._core.errors import ToolError
from toolbench._core.html import result_html
from toolbench._loop import get_loop
from toolbench._notebook.about import server_about_html
from toolbench._notebook.changes_view import ChangesView
from toolbench._notebook.compare_view import compare_html
from toolbench._notebook.display import error_html, history_html, html_table
from toolbench._notebook.form import Form, FormError, build_form, css_class
from toolbench._notebook.suggest import Suggest
from toolbench._notebook.template_form import TemplateForm

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.bench import BaseBench as Bench

ALL_SERVERS = ""
MAX_DESCRIPTION = 4000
# Plain text, no emoji: the page may have no font for one (an hourglass showed as a box).
BUSY_HTML = "<span class='toolbench-busy' style='color:#a15c00'>running…</span>"
CLOSED_HTML = (
    "<div class='toolbench-closed' style='color:#b00020;padding:4px 0'><b>This bench is "
    "closed</b>: its servers were shut down (<code>bench.close()</code>), so nothing here can "
    "call them any more. Make a new bench and run <code>bench.explore()</code> again.</div>")
LIST_WIDTH = "260px"
PICK_WIDTH = "560px"
MAX_LISTED = 500
"""Resources (or prompts) offered in a section's Dropdown at most; the rest are counted."""
TABLE_ROWS = 100
"""Rows of a section's table (resources, prompts) at most; the rest are counted."""
LOG_ROWS = 100
"""Log rows shown at most, newest first (``bench.logs`` holds up to 1,000 per server)."""
LOG_TEXT = 200
"""A log row's message and data are cut to this for the tab, tooltip included (the whole,
itself capped, stays in ``bench.logs``): 100 rows of 2,000-character tooltips made a page of
nearly a megabyte."""
NOTE_CHARS = 300
"""A server's note (why it lists nothing) is cut to this many characters."""
SECTIONS = ("Tools", "Resources", "Prompts", "Log", "Changes")
RESOURCE_VIEW = ("kind", "name", "server", "uri", "title", "mime_type", "size", "description")
PROMPT_VIEW = ("name", "server", "title", "description", "arguments")
NO_RESOURCES = (
    "<b>No resources here.</b> A resource is data an MCP server offers for reading by URI (a "
    "file, a record, an image); a template is a URI with <code>{variables}</code> to fill in. "
    "None of this bench's servers lists any.")
NO_PROMPTS = (
    "<b>No prompts here.</b> A prompt is a ready-made conversation an MCP server offers, "
    "filled in from a few string arguments. None of this bench's servers lists any.")
NO_LOGS = (
    "<em>No log messages or progress updates yet.</em> <small>Servers send log messages (at "
    "<code>Bench(log_level=...)</code> and above) and progress while a call runs; they land "
    "here and in <code>bench.logs</code>.</small>")


def bench_closed(bench: Bench) -> bool:
    """Whether ``bench.close()`` has run (the explorer cannot call anything after that)."""
    return bench.closed


def _poster() -> Callable[[Callable[[], None]], None]:
    """A function that runs a widget update on the loop the explorer was built on."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None and get_loop().in_loop_thread():
        loop = None  # built on toolbench's own loop: run updates in place

    def post(update: Callable[[], None]) -> None:
        if loop is None or loop.is_closed():
            update()
            return
        try:
            loop.call_soon_threadsafe(update)
        except RuntimeError:  # the loop closed in between
            update()

    return post


class Explorer:
    """The explorer app; each part is an attribute so tests and users can drive it."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self._post = _poster()
        self.form: Form = build_form(None)
        # Completes once the widgets show the last call's outcome. In a notebook that update
        # runs on the kernel's loop, so a cell must await it (asyncio.wrap_future), not block.
        self.last_future: concurrent.futures.Future[None] | None = None
        self.last_result: Any = None
        self.last_compare: pd.DataFrame | None = None
        self._updating = False
        self._shown: str | None = None
        self.closed = False
        self.banner = widgets.HTML("")

        self.server_filter = widgets.Dropdown(description="server", options=[("all", "")],
                                              value=ALL_SERVERS,
                                              layout=widgets.Layout(width="240px"))
        self.search = widgets.Text(placeholder="search name, title, description",
                                   continuous_update=True, layout=widgets.Layout(width="280px"))
        self.refresh_button = widgets.Button(description="refresh", icon="refresh",
                                             layout=widgets.Layout(width="90px"))
        self.count = widgets.HTML("")
        # A fixed basis, neither grown by long names nor squeezed by a wide result beside it.
        self.tool_list = widgets.Select(options=[], rows=14, layout=widgets.Layout(
            width=LIST_WIDTH, min_width=LIST_WIDTH, max_width=LIST_WIDTH,
            flex=f"0 0 {LIST_WIDTH}"))
        self.description = widgets.HTML("")
        self.form_box = widgets.VBox([])

        self.call_button = widgets.Button(description="Call", button_style="primary",
                                          icon="play")
        self.busy = widgets.HTML("")
        self.result = widgets.HTML("")
        # A server's question during a Call (elicitation="ask"/sampling="ask") shows here.
        self.ask_box = widgets.VBox([])
        self.ask_box.add_class("toolbench-explorer-ask")
        self._unroute: Callable[[], None] | None = None
        call_tab = widgets.VBox([self.form_box, widgets.HBox([self.call_button, self.busy]),
                                 self.ask_box, self.result])

        self.compare_servers = widgets.HTML("")
        self.compare_button = widgets.Button(description="Compare", button_style="info",
                                             icon="columns")
        self.compare_busy = widgets.HTML("")
        self.compare_output = widgets.HTML("")
        compare_tab = widgets.VBox([
            self.compare_servers, widgets.HBox([self.compare_button, self.compare_busy]),
            self.compare_output])

        self.history_button = widgets.Button(description="refresh", icon="refresh")
        self.history = widgets.HTML("", layout=widgets.Layout(overflow="auto", max_width="100%"))
        history_tab = widgets.VBox([self.history_button, self.history])

        self.tabs = widgets.Tab(children=[call_tab, compare_tab, history_tab],
                                titles=("Call", "Compare", "History"))
        right = widgets.VBox([self.description, self.tabs],
                             layout=widgets.Layout(flex="1 1 auto", padding="0 0 0 12px",
                                                   min_width="0"))
        tools_section = widgets.HBox([self.tool_list, right])

        # Resources: listed on first opening; choosing one reads it (a template waits for its
        # variables); the URI box reads any URI of the chosen resource's server.
        self.resources_loaded = False
        self.resource_rows: list[dict[str, Any]] = []
        self.resource_notes: dict[str, str] = {}
        self._resource_server: str | None = None
        self.resource_choice = widgets.Dropdown(description="resource",
                                                options=[("(choose a resource)", None)],
                                                value=None,
                                                layout=widgets.Layout(width=PICK_WIDTH))
        self.resources_button = widgets.Button(description="refresh", icon="refresh",
                                               layout=widgets.Layout(width="90px"))
        self.resources_busy = widgets.HTML("")
        self.resources_note = widgets.HTML("<em>open this tab to list resources</em>")
        self.resource_table = widgets.HTML("")
        self.resource_info = widgets.HTML("")
        self.resource_uri = widgets.Text(description="URI", layout=widgets.Layout(
            width=PICK_WIDTH), placeholder="a resource's URI, or a template's, filled in")
        self.read_button = widgets.Button(description="Read", button_style="primary",
                                          icon="book")
        self.read_busy = widgets.HTML("")
        self.resource_output = widgets.HTML("")
        self.template_box = widgets.VBox([])  # a template's variables (template_form.py)
        self.template_form: TemplateForm | None = None
        resources_section = widgets.VBox([
            widgets.HBox([self.resource_choice, self.resources_button, self.resources_busy]),
            self.resources_note, self.resource_info, self.template_box,
            widgets.HBox([self.resource_uri, self.read_button, self.read_busy]),
            self.resource_output, self.resource_table])

        # Prompts: listed on first opening; choosing one builds a form of its (string)
        # arguments with the tools' form builder; the button fetches the transcript.
        self.prompts_loaded = False
        self.prompt_rows: list[dict[str, Any]] = []
        self.prompt_notes: dict[str, str] = {}
        self.prompt_form: Form = build_form(None)
        self.prompt_suggest: Suggest | None = None
        self.prompt_choice = widgets.Dropdown(description="prompt",
                                              options=[("(choose a prompt)", None)],
                                              value=None,
                                              layout=widgets.Layout(width=PICK_WIDTH))
        self.prompts_button = widgets.Button(description="refresh", icon="refresh",
                                             layout=widgets.Layout(width="90px"))
        self.prompts_busy = widgets.HTML("")
        self.prompts_note = widgets.HTML("<em>open this tab to list prompts</em>")
        self.prompt_table = widgets.HTML("")
        self.prompt_info = widgets.HTML("")
        self.prompt_form_box = widgets.VBox([])
        self.prompt_button = widgets.Button(description="Get prompt", button_style="primary",
                                            icon="comments")
        self.prompt_busy = widgets.HTML("")
        self.prompt_output = widgets.HTML("")
        prompts_section = widgets.VBox([
            widgets.HBox([self.prompt_choice, self.prompts_button, self.prompts_busy]),
            self.prompts_note, self.prompt_info, self.prompt_form_box,
            widgets.HBox([self.prompt_button, self.prompt_busy]), self.prompt_output,
            self.prompt_table])

        self.log_button = widgets.Button(description="refresh", icon="refresh")
        self.log = widgets.HTML("")
        log_section = widgets.VBox([self.log_button, self.log])

        self.changes = ChangesView(bench)  # pins and changes: toolbench._notebook.changes_view
        self.sections = widgets.Tab(
            children=[tools_section, resources_section, prompts_section, log_section,
                      self.changes.widget],
            titles=SECTIONS)
        self.widget = widgets.VBox([
            self.banner,
            widgets.HBox([self.server_filter, self.search, self.refresh_button, self.count]),
            self.sections,
        ], layout=widgets.Layout(border="1px solid #ddd", padding="6px"))
        self.widget.add_class("toolbench-explorer")

        self.server_filter.observe(lambda _: self.refresh(), names="value")
        self.search.observe(lambda _: self.refresh(), names="value")
        self.refresh_button.on_click(lambda _: self.refresh_all())
        self.tool_list.observe(self._on_select, names="value")
        self.call_button.on_click(lambda _: self.call())
        self.compare_button.on_click(lambda _: self.compare())
        self.history_button.on_click(lambda _: self.show_history())
        self.sections.observe(self._on_section, names="selected_index")
        self.resource_choice.observe(self._on_resource, names="value")
        self.resources_button.on_click(lambda _: self.load_resources())
        self.read_button.on_click(lambda _: self.read())
        self.prompt_choice.observe(self._on_prompt, names="value")
        self.prompts_button.on_click(lambda _: self.load_prompts())
        self.prompt_button.on_click(lambda _: self.get_prompt())
        self.log_button.on_click(lambda _: self.show_log())
        self._select_prompt(None)
        self.refresh(servers=True)
        self.show_history()

    # -- display --------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"<toolbench explorer: {_html.counted(len(self.tool_list.options), 'tool')} listed>"

    def close(self) -> None:
        """Close every widget of the app (their front-end views go away)."""
        _close_tree(self.widget)

    # -- catalog --------------------------------------------------------------------------
    def check_closed(self) -> bool:
        """If the bench was closed, say so once, plainly, and disable every button."""
        if self.closed:
            return True
        if not bench_closed(self.bench):
            return False
        self.closed = True
        self.banner.value = CLOSED_HTML
        for button in (self.call_button, self.compare_button, self.refresh_button,
                       self.history_button, self.resources_button, self.read_button,
                       self.prompts_button, self.prompt_button, self.log_button):
            button.disabled = True
        self.busy.value = self.compare_busy.value = ""
        self.resources_busy.value = self.read_busy.value = ""
        self.prompts_busy.value = self.prompt_busy.value = ""
        for output in (self.result, self.compare_output, self.resource_output,
                       self.prompt_output):  # wherever the click was
            output.value = CLOSED_HTML
        return True

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

    def refresh_all(self) -> None:
        """What the top refresh button does: servers and tools, and the sections opened."""
        self.refresh(servers=True)
        if self.resources_loaded:
            self.load_resources()
        if self.prompts_loaded:
            self.load_prompts()
        self.show_log()

    def _on_select(self, change: Any) -> None:
        if not self._updating:
            self._select(change["new"])

    def _select(self, name: str | None) -> None:
        if name is None or name not in self.bench.pegboard:
            self._shown = None
            old = self.form
            self.form = build_form(None)
            self.form_box.children = [widgets.HTML("<i>no tool selected</i>")]
            _close_tree(old.widget)
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
        _close_tree(old.widget)
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
        self.description.value = self.server_about(entry.server) + (  # escaped prose
            f"<div class='toolbench-description'><b>{_html.escape(name)}</b>{title} "
            f"<small>server <code>{_html.escape(entry.server)}</code>, tool "
            f"<code>{_html.escape(entry.tool)}</code></small>"
            f"<div style='max-height:10em;overflow:auto'>"
            f"{_html.description_html(spec.description or '', MAX_DESCRIPTION)}</div></div>")

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
        except BaseException as exc:  # shown, not raised: the button's caller is the UI
            self.last_result = exc
            self.result.value = error_html(exc)
        finally:
            if self._unroute is not None:
                self._unroute()
                self._unroute = None
            self.ask_box.children = ()  # the outcome is in the result now
            self._busy(self.call_button, self.busy, False, "Call")

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

    def _track(self, work: concurrent.futures.Future[Any],
               finish: Callable[[concurrent.futures.Future[Any]], None],
               ) -> concurrent.futures.Future[None]:
        """A future that completes once the widgets show the outcome (tests wait on it)."""
        shown: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.last_future = shown

        def update() -> None:
            try:
                finish(work)
                self.show_history()
                self.show_log()  # a call's log messages and progress came meanwhile
                self.check_closed()  # closed while the call ran: the buttons stay off
            finally:
                shown.set_result(None)

        work.add_done_callback(lambda _: self._post(update))
        return shown

    def _busy(self, button: Any, label: Any, busy: bool, text: str) -> None:
        button.disabled = busy or self.closed
        button.description = text
        label.value = BUSY_HTML if busy else ""

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


    # -- sections: resources, prompts, log ------------------------------------------------
    def _on_section(self, change: Any) -> None:
        """Opening a section lists what it shows, once (its refresh button lists again)."""
        title = SECTIONS[change["new"]] if isinstance(change["new"], int) else None
        if title == "Resources" and not self.resources_loaded:
            self.load_resources()
        elif title == "Prompts" and not self.prompts_loaded:
            self.load_prompts()
        elif title == "Log":
            self.show_log()
        elif title == "Changes":
            self.changes.refresh()

    def _server_names(self) -> list[str]:
        """The servers to ask: every row but closed ones (a failed one says why in a note)."""
        servers = self.bench.servers
        return [str(n) for n, status in zip(servers["name"], servers["status"], strict=True)
                if status != "closed"]

    def _listing(self, button: Any, label: Any, note: Any, text: str,
                 work: Callable[[list[str]], Any],
                 finish: Callable[[concurrent.futures.Future[Any]], None],
                 ) -> concurrent.futures.Future[None] | None:
        if button.disabled and not self.closed:  # a listing is running
            return None
        self.last_future = None
        if self.check_closed():
            note.value = CLOSED_HTML
            return None
        try:
            names = self._server_names()
        except Exception as exc:  # shown, not raised: the caller is the UI
            note.value = error_html(exc)
            return None
        self._busy(button, label, True, text)
        return self._track(get_loop().submit(lambda: work(names)), finish)

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
                    notes[name] = _failure(exc)
                    break
                rows += [{**row, "kind": kind} for row in _records(frame)]
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

    def _visible(self, rows: list[dict[str, Any]], keys: tuple[str, ...]
                 ) -> list[tuple[int, dict[str, Any]]]:
        """The rows the server filter and the search box let through, with their index."""
        server = self.server_filter.value or None
        needle = self.search.value.strip().lower()
        return [(i, row) for i, row in enumerate(rows)
                if (server is None or row.get("server") == server)
                and (not needle or any(needle in str(row.get(k) or "").lower() for k in keys))]

    def _fill(self, choice: Any, pick: str, options: list[tuple[str, int]]) -> None:
        """New options for a Dropdown, keeping its choice when still offered (no event)."""
        previous = choice.value
        was, self._updating = self._updating, True
        try:
            choice.options = [(pick, None), *options]
            choice.value = previous if previous in {v for _, v in options} else None
        finally:
            self._updating = was

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

    def _show_listing(self, rows: list[dict[str, Any]], notes: dict[str, str],
                      keys: tuple[str, ...], choice: Any, pick: str, note: Any, table: Any,
                      view: tuple[str, ...], caption: str, empty: str,
                      label: Callable[[dict[str, Any]], str]) -> None:
        import pandas as pd

        visible = self._visible(rows, keys)
        listed = visible[:MAX_LISTED]
        self._fill(choice, pick, [(_html.shorten(label(r).replace("\n", " "), 100), i)
                                  for i, r in listed])
        told = "".join(f"<li><code>{_html.escape(_html.shorten(name, 60))}</code>: "
                       f"{_html.escape(_html.shorten(text, NOTE_CHARS))}</li>"
                       for name, text in sorted(notes.items()))
        told = f"<small><ul style='margin:2px 0'>{told}</ul></small>" if told else ""
        if not rows:
            note.value = f"<div class='toolbench-empty'>{empty}{told}</div>"
            table.value = ""
            return
        more = (f"; the first {MAX_LISTED:,} are in the list" if len(visible) > MAX_LISTED
                else "")
        servers = len({r.get("server") for r in rows})
        note.value = (f"<small>{len(visible):,} of {len(rows):,} {caption} (from {servers} "
                      f"server(s)) match the filter{more}</small>{told}")
        table.value = (html_table(pd.DataFrame([r for _, r in visible], dtype=object),
                                  max_rows=TABLE_ROWS, columns=view, caption=caption)
                       if visible else "")

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
        self.resource_info.value = _info_html("toolbench-resource-info", row, facts)
        old, self.template_form = self.template_form, None
        if row["kind"] == "template":  # its variables as a form offering completions
            self.template_form = TemplateForm(self.bench, str(row["server"]), str(row["uri"]),
                                              self.resource_uri, self._post)
        self.template_box.children = self.template_form.widgets if self.template_form else []
        if old is not None:
            _close_tree(old.form.widget)
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
                notes[name] = _failure(exc)
                return
            found[name] = _records(frame)
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
            _close_tree(old.widget)
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
        _close_tree(old.widget)
        self.prompt_button.disabled = self.closed
        self.prompt_output.value = ""
        self.prompt_info.value = _info_html("toolbench-prompt-info", row, [
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

    def show_log(self) -> None:
        """Re-render ``bench.logs``: newest first, capped, every server string escaped."""
        self.check_closed()
        try:
            logs = self.bench.logs
            if len(logs) == 0:
                self.log.value = NO_LOGS
                return
            import pandas as pd

            newest = logs.iloc[::-1]
            shown = newest.head(LOG_ROWS).copy()
            for column in ("message", "data"):  # only the rows shown are cut (and counted)
                shown[column] = [None if v is None else _html.shorten(_html.to_text(v),
                                                                      LOG_TEXT)
                                 for v in shown[column]]
            newest = pd.concat([shown, newest.iloc[LOG_ROWS:]])
            self.log.value = html_table(newest, max_rows=LOG_ROWS, columns=LOG_COLUMNS,
                                        caption="log messages and progress (newest first)")
        except Exception as exc:  # display never raises
            self.log.value = f"<em>log unavailable ({_html.escape(type(exc).__name__)})</em>"


def _close_tree(widget: Any) -> None:
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()


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


def _info_html(css: str, row: dict[str, Any], facts: list[tuple[str, Any]]) -> str:
    """The chosen item's name, title, facts and description, every one escaped and capped."""
    title = f" — {_html.escape(_html.shorten(str(row['title']), 200))}" if row.get(
        "title") else ""
    told = ", ".join(f"{key} <code>{_html.escape(_html.shorten(str(value), 200))}</code>"
                     for key, value in facts)
    description = _html.escape(_html.shorten(inspect.cleandoc(str(row.get("description") or "")),
                                             MAX_DESCRIPTION))
    return (f"<div class='{css}'><b>{_html.escape(_html.shorten(str(row['name']), 200))}</b>"
            f"{title} <small>{told}</small><div style='white-space:pre-wrap;max-height:6em;"
            f"overflow:auto'>{description}</div></div>")


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def _failure(exc: BaseException) -> str:
    """One server's listing failure, as a note (``Refused`` for "offers none" included)."""
    if isinstance(exc, ToolError):
        return exc.detail
    return f"{type(exc).__name__}: {exc}"


def explorer(bench: Bench) -> Explorer:
    """Build the explorer for ``bench``; display it by leaving it last in a cell."""
    return Explorer(bench)
