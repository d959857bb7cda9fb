"""The explorer's shared parts: its limits and texts, its state, and the plumbing every
section uses (a call's outcome posted back to the kernel's loop, busy buttons, the closed
bench, a listing asked of every server at once, the filter applied to a listing).

The sections are mixins on :class:`ExplorerBase` (``explorer_tools.py``,
``explorer_resources.py``, ``explorer_prompts.py``); ``widgets.py`` builds the widgets and
joins them into :class:`~toolbench._notebook.explorer.explorer.Explorer`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._core.errors import ToolError
from toolbench._loop import get_loop
from toolbench._notebook.views.display import error_html, html_table

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.bench import BaseBench as Bench
    from toolbench._notebook.ask.form import Form
    from toolbench._notebook.explorer.changes import ChangesView
    from toolbench._notebook.explorer.suggest import Suggest
    from toolbench._notebook.explorer.template_form import TemplateForm

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


def poster() -> Callable[[Callable[[], None]], None]:
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


def close_tree(widget: Any) -> None:
    for child in getattr(widget, "children", ()):
        close_tree(child)
    widget.close()


def info_html(css: str, row: dict[str, Any], facts: list[tuple[str, Any]]) -> str:
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


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def listing_failure(exc: BaseException) -> str:
    """One server's listing failure, as a note (``Refused`` for "offers none" included)."""
    if isinstance(exc, ToolError):
        return exc.detail
    return f"{type(exc).__name__}: {exc}"


class ExplorerBase:
    """The explorer's state (built by ``Explorer.__init__``) and the plumbing its sections
    share. Each widget is an attribute so tests and users can drive it."""

    bench: Bench
    form: Form
    last_future: concurrent.futures.Future[None] | None
    last_result: Any
    last_compare: pd.DataFrame | None
    closed: bool
    _post: Callable[[Callable[[], None]], None]
    _updating: bool
    _shown: str | None
    _unroute: Callable[[], None] | None
    # the top: banner, filter, search, count
    banner: Any
    server_filter: Any
    search: Any
    refresh_button: Any
    count: Any
    # Tools: the list, the description, the Call / Compare / History tabs
    tool_list: Any
    description: Any
    form_box: Any
    call_button: Any
    busy: Any
    result: Any
    ask_box: Any
    app_box: Any
    compare_servers: Any
    compare_button: Any
    compare_busy: Any
    compare_output: Any
    history_button: Any
    history: Any
    tabs: Any
    # Resources
    resources_loaded: bool
    resource_rows: list[dict[str, Any]]
    resource_notes: dict[str, str]
    _resource_server: str | None
    resource_choice: Any
    resources_button: Any
    resources_busy: Any
    resources_note: Any
    resource_table: Any
    resource_info: Any
    resource_uri: Any
    read_button: Any
    read_busy: Any
    resource_output: Any
    template_box: Any
    template_form: TemplateForm | None
    # Prompts
    prompts_loaded: bool
    prompt_rows: list[dict[str, Any]]
    prompt_notes: dict[str, str]
    prompt_form: Form
    prompt_suggest: Suggest | None
    prompt_choice: Any
    prompts_button: Any
    prompts_busy: Any
    prompts_note: Any
    prompt_table: Any
    prompt_info: Any
    prompt_form_box: Any
    prompt_button: Any
    prompt_busy: Any
    prompt_output: Any
    # Log, Changes, the whole
    log_button: Any
    log: Any
    changes: ChangesView
    sections: Any
    widget: Any

    if TYPE_CHECKING:  # each defined by the section that owns it
        def show_history(self) -> None: ...
        def show_log(self) -> None: ...
        def show_resources(self) -> None: ...
        def show_prompts(self) -> None: ...

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
