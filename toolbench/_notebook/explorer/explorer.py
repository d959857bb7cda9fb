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

This module builds the widgets and lays them out; each section's behaviour is a mixin in its
own module (``explorer_tools.py``, ``explorer_resources.py``, ``explorer_prompts.py``), on the
shared state and plumbing of ``explorer_base.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from toolbench._bench.progress.progress import LOG_COLUMNS
from toolbench._core import html as _html
from toolbench._notebook.ask.form import build_form
from toolbench._notebook.explorer.base import (
    ALL_SERVERS,
    BUSY_HTML,
    CLOSED_HTML,
    LIST_WIDTH,
    LOG_ROWS,
    LOG_TEXT,
    NO_LOGS,
    PICK_WIDTH,
    SECTIONS,
    bench_closed,
    close_tree,
    poster,
)
from toolbench._notebook.explorer.changes import ChangesView
from toolbench._notebook.explorer.prompts import PromptsSection, prompt_schema
from toolbench._notebook.explorer.resources import ResourcesSection
from toolbench._notebook.explorer.tools import ToolsSection
from toolbench._notebook.views.display import html_table

if TYPE_CHECKING:
    from toolbench._bench.bench import BaseBench as Bench

__all__ = ["BUSY_HTML", "CLOSED_HTML", "LIST_WIDTH", "LOG_ROWS", "SECTIONS", "Explorer",
           "bench_closed", "explorer", "prompt_schema"]


class Explorer(ToolsSection, ResourcesSection, PromptsSection):
    """The explorer app; each part is an attribute so tests and users can drive it."""

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        self._post = poster()
        self.form = build_form(None)
        # Completes once the widgets show the last call's outcome. In a notebook that update
        # runs on the kernel's loop, so a cell must await it (asyncio.wrap_future), not block.
        self.last_future = None
        self.last_result = None
        self.last_compare = None
        self._updating = False
        self._shown = None
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
        self._unroute = None
        # A tool's MCP App view of the last call shows here, above its result (#34).
        self.app_box = widgets.VBox([])
        self.app_box.add_class("toolbench-explorer-app")
        call_tab = widgets.VBox([self.form_box, widgets.HBox([self.call_button, self.busy]),
                                 self.ask_box, self.app_box, self.result])

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
        self.resource_rows = []
        self.resource_notes = {}
        self._resource_server = None
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
        self.template_form = None
        resources_section = widgets.VBox([
            widgets.HBox([self.resource_choice, self.resources_button, self.resources_busy]),
            self.resources_note, self.resource_info, self.template_box,
            widgets.HBox([self.resource_uri, self.read_button, self.read_busy]),
            self.resource_output, self.resource_table])

        # Prompts: listed on first opening; choosing one builds a form of its (string)
        # arguments with the tools' form builder; the button fetches the transcript.
        self.prompts_loaded = False
        self.prompt_rows = []
        self.prompt_notes = {}
        self.prompt_form = build_form(None)
        self.prompt_suggest = None
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

        self.changes = ChangesView(bench)  # pins and changes: toolbench._notebook.explorer.changes
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
        close_tree(self.widget)

    def refresh_all(self) -> None:
        """What the top refresh button does: servers and tools, and the sections opened."""
        self.refresh(servers=True)
        if self.resources_loaded:
            self.load_resources()
        if self.prompts_loaded:
            self.load_prompts()
        self.show_log()

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


def explorer(bench: Bench) -> Explorer:
    """Build the explorer for ``bench``; display it by leaving it last in a cell."""
    return Explorer(bench)
