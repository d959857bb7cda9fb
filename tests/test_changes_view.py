"""The explorer's Changes tab: pins summary, a changed tool's diff, Approve by click."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import toolbench as tb
from toolbench._notebook.explorer.changes import ChangesView
from toolbench._notebook.explorer.explorer import SECTIONS
from toolbench.demo import geo_precise, geo_precise_v2


def test_changes_tab_shows_the_change_and_approves_it(tmp_path: Path) -> None:
    pins = tmp_path / "pins.json"
    with tb.Bench(pins=pins) as bench:
        bench.connect("geo_precise", geo_precise.create())
    with tb.Bench(pins=pins) as bench:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tb.PinWarning)
            bench.connect("geo_precise", geo_precise_v2.create())
        app = bench.explore()
        assert SECTIONS[-1] == "Changes"
        app.sections.selected_index = SECTIONS.index("Changes")  # opening it fills it
        view = app.changes
        assert "<b>1 changed</b>" in view.summary.value
        assert list(view.approve_buttons) == ["geo_precise-distance"]
        shown = view.pending.children[0].children[1].value
        assert "<ins>" in shown and "input_schema" in shown
        with pytest.raises(tb.Refused):
            bench.call("geo_precise-distance", from_city="London", to_city="Paris")
        view.approve_buttons["geo_precise-distance"].click()
        assert "approved geo_precise-distance" in view.note.value
        assert "<b>0 changed</b>" in view.summary.value and view.pending.children == ()
        bench.call("geo_precise-distance", from_city="London", to_city="Paris")
        app.close()


def test_changes_since_the_last_listing_and_no_pins(tmp_path: Path) -> None:
    with tb.Bench() as bench:
        bench.connect("geo_precise", geo_precise.create())
        bench.disconnect("geo_precise")
        bench.connect("geo_precise", geo_precise_v2.create())
        view = ChangesView(bench)
        view.refresh()
        assert "No pins" in view.summary.value
        assert "class='changed'" in view.recent.value and "units" in view.recent.value


def test_hostile_descriptions_are_escaped(tmp_path: Path) -> None:
    pins = tmp_path / "pins.json"
    first, second = tb.ToolBox(), tb.ToolBox()

    def make(box: tb.ToolBox, doc: str) -> None:
        def t(x: int) -> int:
            return x

        t.__doc__ = doc
        box.add(tb.tool(server="evil", name="t")(t))

    make(first, "fine")
    make(second, "<script>alert(1)</script> <img src=x onerror=alert(2)>")
    with tb.Bench(pins=pins) as bench:
        bench.add(first)
    with tb.Bench(pins=pins) as bench:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tb.PinWarning)
            bench.add(second)
        view = ChangesView(bench)
        view.refresh()
        html = view.pending.children[0].children[1].value
        assert "<script>" not in html and "<img" not in html
        assert "&lt;script&gt;" in html


def test_a_changed_resource_and_prompt_are_approved_by_click(tmp_path: Path) -> None:
    from test_pins import _resource_server

    pins = tmp_path / "pins.json"
    with tb.Bench(pins=pins) as bench:
        bench.connect("res", _resource_server("first"))
    with tb.Bench(pins=pins) as bench:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tb.PinWarning)
            bench.connect("res", _resource_server("second"))
            bench.disconnect("res")
            bench.connect("res", _resource_server("third"))  # a second listing: "recent"
        view = ChangesView(bench)
        view.refresh()
        assert "<b>3 changed</b>" in view.summary.value
        assert sorted(view.approve_buttons) == ["res/city://{name}", "res/greet", "res/note://a"]
        assert "third" in view.recent.value and "second" in view.recent.value
        with pytest.raises(tb.Refused):
            bench.read("res", "note://a")
        view.approve_buttons["res/note://a"].click()
        assert "approved res/note://a" in view.note.value
        assert "<b>2 changed</b>" in view.summary.value
        assert bench.read("res", "note://a").text == "the note"
