"""The explorer's "Changes" tab: pins, what changed since the last listing, Approve by click.

Three parts, each rebuilt by ``refresh()`` (on opening the tab, on its refresh button, and
after an approval):

- a summary of the pins (how many pinned, changed, removed; or that the bench has no pins
  file, and how to make one);
- one line per changed pinned tool, with its diff (escaped, the description word by word)
  and an **Approve** button that calls ``bench.approve(name, fingerprint)`` with the version
  shown (a newer one is not approved unseen): the tool's calls go through
  again and the pins file keeps the new version;
- what changed between each server's last two listings (a reconnect, a re-list after
  ``tools/list_changed``, a restart), as ``tb.diff`` shows it.

Everything a server declared is escaped (``diff_view``); nothing here talks to a server: the
listings and fingerprints are the bench's, computed when each listing was applied.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._notebook.views.diff import diff_html

if TYPE_CHECKING:
    from toolbench._bench.bench import BaseBench as Bench

TITLE = "Changes"


def _pegboard_name(bench: Bench, server: str, tool: str) -> str | None:
    for entry in bench.pegboard.entries(server):
        if entry.tool == tool:
            return entry.name
    return None


class ChangesView:
    """The Changes tab of one bench's explorer (``.widget`` is what the tab shows)."""

    def __init__(self, bench: Bench) -> None:
        import ipywidgets as widgets

        self.bench = bench
        self.summary = widgets.HTML("")
        self.pending = widgets.VBox([])
        self.recent = widgets.HTML("")
        self.note = widgets.HTML("")
        self.refresh_button = widgets.Button(description="refresh", icon="refresh",
                                             layout=widgets.Layout(width="90px"))
        self.refresh_button.on_click(lambda _: self.refresh())
        self.approve_buttons: dict[str, Any] = {}
        self.widget = widgets.VBox([
            widgets.HBox([self.refresh_button, self.note]), self.summary, self.pending,
            widgets.HTML("<b>Changed since the last listing</b>"), self.recent])

    def refresh(self) -> None:
        """Rebuild the tab from the bench's pins and listings; never raises."""
        try:
            self._refresh()
        except Exception as exc:
            self.summary.value = (f"<i>changes unavailable ({_html.escape(type(exc).__name__)}:"
                                  f" {_html.escape(_html.shorten(str(exc), 300))})</i>")

    def _refresh(self) -> None:
        import ipywidgets as widgets

        bench = self.bench
        pins = bench.pins
        if not bench.guard.active:
            self.summary.value = ("<p>No pins: make the bench with "
                                  "<code>Bench(pins=\"pins.json\")</code> to pin every tool on "
                                  "first sight and refuse calls to one that changes.</p>")
        else:
            counts = pins["state"].value_counts().to_dict() if len(pins) else {}
            self.summary.value = (
                f"<p>{len(pins)} pinned item{'s' * (len(pins) != 1)} in "
                f"<code>{_html.escape(str(bench.guard.path))}</code>: "
                f"{counts.get('ok', 0)} unchanged, <b>{counts.get('changed', 0)} changed</b> "
                f"(calls, reads and fetches refused until approved), "
                f"{counts.get('removed', 0)} removed"
                + (f", <b>{counts['unverified']} unverified</b> (a re-list failed; calls "
                   "refused until one succeeds)" if counts.get("unverified") else "")
                + ".</p>")
        rows = []
        self.approve_buttons = {}
        for (server, kind, name), (old, new) in sorted(bench.guard.changes.items()):
            board_name = (_pegboard_name(bench, server, name) if kind == "tool"
                          else f"{server}/{name}")  # approve() takes server/uri for the rest
            button = widgets.Button(description="Approve", button_style="warning",
                                    icon="check", disabled=board_name is None)
            if board_name is not None:
                button.on_click(lambda _, n=board_name, f=str(new["fingerprint"]):
                                self.approve(n, f))
                self.approve_buttons[board_name] = button
            from toolbench._bench.overtime.diff import diff
            from toolbench._bench.overtime.snapshots import snapshot_frame

            when = datetime.now(UTC)
            before = snapshot_frame([(server, when, old)]) if old else None
            after = snapshot_frame([(server, when, new)])
            shown = (diff_html(diff(before, after)) if before is not None else
                     "<i>the pin holds only a fingerprint: no fields to compare</i>")
            label = widgets.HTML(f"<b>{_html.escape(server)}/{_html.escape(name)}</b> "
                                 f"({_html.escape(kind)}) changed since it was pinned")
            head = [label, button]
            rows.append(widgets.VBox([widgets.HBox(head), widgets.HTML(shown)]))
        self.pending.children = rows
        recent = bench.history.changes_since()
        self.recent.value = diff_html(recent)

    def approve(self, name: str, fingerprint: str | None = None) -> None:
        """What an Approve button does: ``bench.approve(name, fingerprint)`` of the version
        the tab showed (a newer one is refused), then the tab again."""
        try:
            self.bench.approve(name, fingerprint)
            self.note.value = f"<span style='color:#1a7f37'>approved {_html.escape(name)}</span>"
        except Exception as exc:
            self.note.value = (f"<span style='color:#b00020'>{_html.escape(type(exc).__name__)}"
                               f": {_html.escape(_html.shorten(str(exc), 300))}</span>")
        self.refresh()
