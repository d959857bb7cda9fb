"""``bench.explore()``: browse the catalog, fill a form, call or compare, see the history.

Calls run on toolbench's shared loop, so the kernel stays free while a slow tool works.
The widgets are updated from the call's completion on the kernel's own event loop when
there is one (captured when the explorer is built): ipywidgets are not thread-safe, and the
kernel loop is where every other widget change happens. Without a running loop (plain
Python, tests) the update runs right where the call finished.

Every string a server sent (names, descriptions, results, errors) is escaped before it
reaches an HTML widget.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from toolbench._core import html as _html
from toolbench._core.html import result_html
from toolbench._loop import get_loop
from toolbench._notebook.compare_view import compare_html
from toolbench._notebook.display import error_html, records_html
from toolbench._notebook.form import Form, FormError, build_form, css_class

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
        call_tab = widgets.VBox([self.form_box, widgets.HBox([self.call_button, self.busy]),
                                 self.result])

        self.compare_servers = widgets.HTML("")
        self.compare_button = widgets.Button(description="Compare", button_style="info",
                                             icon="columns")
        self.compare_busy = widgets.HTML("")
        self.compare_output = widgets.HTML("")
        compare_tab = widgets.VBox([
            self.compare_servers, widgets.HBox([self.compare_button, self.compare_busy]),
            self.compare_output])

        self.history_button = widgets.Button(description="refresh", icon="refresh")
        self.history = widgets.HTML("")
        history_tab = widgets.VBox([self.history_button, self.history])

        self.tabs = widgets.Tab(children=[call_tab, compare_tab, history_tab],
                                titles=("Call", "Compare", "History"))
        right = widgets.VBox([self.description, self.tabs],
                             layout=widgets.Layout(flex="1 1 auto", padding="0 0 0 12px",
                                                   min_width="0"))
        self.widget = widgets.VBox([
            self.banner,
            widgets.HBox([self.server_filter, self.search, self.refresh_button, self.count]),
            widgets.HBox([self.tool_list, right]),
        ], layout=widgets.Layout(border="1px solid #ddd", padding="6px"))
        self.widget.add_class("toolbench-explorer")

        self.server_filter.observe(lambda _: self.refresh(), names="value")
        self.search.observe(lambda _: self.refresh(), names="value")
        self.refresh_button.on_click(lambda _: self.refresh(servers=True))
        self.tool_list.observe(self._on_select, names="value")
        self.call_button.on_click(lambda _: self.call())
        self.compare_button.on_click(lambda _: self.compare())
        self.history_button.on_click(lambda _: self.show_history())
        self.refresh(servers=True)
        self.show_history()

    # -- display --------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"<toolbench explorer: {len(self.tool_list.options)} tools listed>"

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
                       self.history_button):
            button.disabled = True
        self.busy.value = self.compare_busy.value = ""
        self.result.value = self.compare_output.value = CLOSED_HTML  # where the click was
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
            self.count.value = f"<small>{len(names)} of {total} tools</small>"
        finally:
            self._updating = False
        self._select(self.tool_list.value)

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
        text = inspect.cleandoc(spec.description or "")  # docstring indentation is not content
        more = (f" <small>({len(text):,} characters; shortened)</small>"
                if len(text) > MAX_DESCRIPTION else "")
        title = f" — {_html.escape(_html.shorten(spec.title, 200))}" if spec.title else ""
        self.description.value = (
            f"<div class='toolbench-description'><b>{_html.escape(name)}</b>{title} "
            f"<small>server <code>{_html.escape(entry.server)}</code>, tool "
            f"<code>{_html.escape(entry.tool)}</code></small>"
            f"<div style='white-space:pre-wrap;max-height:10em;overflow:auto'>"
            f"{_html.escape(_html.shorten(text, MAX_DESCRIPTION))}</div>{more}</div>")

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
        work = get_loop().submit(lambda: self.bench.acall(name, arguments))
        return self._track(work, self._finish_call)

    def _finish_call(self, work: concurrent.futures.Future[Any]) -> None:
        try:
            result = work.result()
            self.last_result = result
            self.result.value = result_html(result)
        except BaseException as exc:  # shown, not raised: the button's caller is the UI
            self.last_result = exc
            self.result.value = error_html(exc)
        finally:
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
        """Re-render this bench's call records, newest first."""
        self.check_closed()
        try:
            self.history.value = records_html(self.bench.records)
        except Exception as exc:
            self.history.value = f"<i>history unavailable ({_html.escape(type(exc).__name__)})</i>"


def _close_tree(widget: Any) -> None:
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()


def explorer(bench: Bench) -> Explorer:
    """Build the explorer for ``bench``; display it by leaving it last in a cell."""
    return Explorer(bench)
