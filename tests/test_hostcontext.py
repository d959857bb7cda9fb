"""What a view knows of its host after ``ui/initialize`` (DESIGN.md, "The bridge"): the
display modes it may ask for, ``host-context-changed`` when the theme, the container's size
or the display mode changes (never before ``initialized``), and the last known height a
re-run starts at. Driven from code; the browser tests check the front end's part."""

from __future__ import annotations

from typing import Any

import toolbench as tb
from tests.test_bridge import app_server
from toolbench._bench.apps.hostcontext import HOST_CONTEXT_CHANGED, HostContext, pixels
from toolbench._bench.apps.policy import DEFAULT_HEIGHT
from toolbench._bench.apps.views import LAST_HEIGHTS

INIT = {"jsonrpc": "2.0", "id": 1, "method": "ui/initialize", "params": {}}
INITIALIZED = {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}


def changes(view: Any) -> list[dict[str, Any]]:
    return [m["params"] for m in view.bridge.outbox if m.get("method") == HOST_CONTEXT_CHANGED]


def front(view: Any, **content: Any) -> None:
    """What view.js sends over the comm, as the widget receives it."""
    view._on_front(view, {"kind": "context", **content}, [])


def test_theme_and_size_changes_reach_the_view_only_after_initialized() -> None:
    with tb.Bench() as bench:
        bench.connect("app", app_server(), protocol_mode="legacy")
        view = bench.call("app-clock").app
        front(view, theme="dark", width=700)  # before initialize: kept, not sent
        init = view.handle(INIT)
        assert init is not None
        context = init["result"]["hostContext"]
        assert context["theme"] == "dark" and context["displayMode"] == "inline"
        assert context["availableDisplayModes"] == ["inline", "fullscreen"]
        assert context["containerDimensions"] == {"maxHeight": 4000, "width": 700}
        front(view, theme="light", width=700)
        assert changes(view) == []  # not initialized yet: nothing is sent
        view.handle(INITIALIZED)
        front(view, theme="dark", width=700)
        front(view, theme="dark", width=700)  # the same again: nothing new
        front(view, theme="purple", width=-3)  # not a theme, not a size: ignored
        front(view, theme="dark", width=640.0)
        assert changes(view) == [{"theme": "dark"},
                                 {"containerDimensions": {"maxHeight": 4000, "width": 640}}]


def test_fullscreen_is_granted_and_the_person_closing_it_is_told_to_the_view() -> None:
    with tb.Bench() as bench:
        bench.connect("app", app_server(), protocol_mode="legacy")
        view = bench.call("app-clock").app
        view.handle(INIT)
        view.handle(INITIALIZED)
        asked = view.handle({"jsonrpc": "2.0", "id": 2, "method": "ui/request-display-mode",
                             "params": {"mode": "fullscreen"}})
        assert asked is not None and asked["result"] == {"mode": "fullscreen"}
        assert view.display_mode == "fullscreen"  # the front end follows this trait
        pip = view.handle({"jsonrpc": "2.0", "id": 3, "method": "ui/request-display-mode",
                           "params": {"mode": "pip"}})
        assert pip is not None and pip["result"] == {"mode": "fullscreen"}  # not granted
        front(view, theme="light", width=1200, height=800, mode="fullscreen")
        front(view, theme="light", width=900, height=None, mode="inline")  # closed by a person
        assert view.display_mode == "inline"
        assert changes(view) == [
            {"displayMode": "fullscreen", "containerDimensions": {"maxHeight": 4000}},
            {"containerDimensions": {"height": 800, "width": 1200}},
            {"displayMode": "inline", "containerDimensions": {"maxHeight": 4000, "width": 900}}]
        back = view.handle({"jsonrpc": "2.0", "id": 4, "method": "ui/request-display-mode",
                            "params": {"mode": "inline"}})
        assert back is not None and back["result"] == {"mode": "inline"}


def test_a_rerun_starts_at_the_views_last_known_height() -> None:
    LAST_HEIGHTS.pop(("rerun", "ui://clock/view.html"), None)  # another test's view
    with tb.Bench() as bench:
        bench.connect("rerun", app_server(), protocol_mode="legacy")
        first = bench.call("rerun-clock").app
        assert first.height == DEFAULT_HEIGHT
        first.handle({"jsonrpc": "2.0", "method": "ui/notifications/size-changed",
                      "params": {"height": 512}})
        again = bench.call("rerun-clock").app
        assert again.height == 512 and again.bridge.height == 512
        assert bench.app(again.bridge.opened.call_id).height == 512
    with tb.Bench() as bench:  # a new bench (Run All): the same server name and view
        bench.connect("rerun", app_server(), protocol_mode="legacy")
        assert bench.call("rerun-clock").app.height == 512


def test_the_host_context_checks_what_the_front_end_says() -> None:
    context = HostContext()
    assert context.update(theme="dark", width=True, mode="pip") == {"theme": "dark"}
    assert [pixels(v) for v in (0, 1, 99_999, 100_000, float("nan"), "9", None)] == [
        None, 1, 99_999, None, None, None, None]
