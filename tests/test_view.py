"""``AppView``, the MCP App widget, driven from code (no browser): its traits, its relay and
its comm protocol (DESIGN.md, "MCP Apps")."""

from __future__ import annotations

import time
from typing import Any

import toolbench as tb
from tests.test_bridge import app_server
from toolbench._notebook.apps.view import AppView


def test_result_app_is_an_appview_with_the_policy_applied() -> None:
    with tb.Bench() as bench:
        bench.connect("app", app_server(), protocol_mode="legacy")
        result = bench.call("app-clock", zone="CET")
        view = result.app
        assert isinstance(view, AppView) and result.app is view
        assert view.sandbox == "allow-scripts" and view.allow == "clipboard-write"
        assert view.border is True and 40 <= view.height <= 4000
        assert (view.uri, view.server, view.tool) == ("ui://clock/view.html", "app", "clock")
        assert view.html.startswith(
            '<!DOCTYPE html><base href="about:srcdoc"><meta http-equiv="Content-Security-Policy"')
        assert "default-src 'none'" in view.csp
        assert any("http://plain.example.com" in w for w in view.warnings)
        assert any("'unsafe-eval'" in w for w in view.warnings)
        assert "needs a running notebook kernel" in repr(view)
        assert bench.call("app-caps").app is None
        init = view.handle({"jsonrpc": "2.0", "id": 1, "method": "ui/initialize",
                            "params": {}})
        assert init is not None and init["result"]["protocolVersion"] == "2026-01-26"
        assert view.handle({"jsonrpc": "2.0", "method": "ui/message",
                            "params": {"role": "user"}}) is None  # a notification: no reply
        view.handle({"jsonrpc": "2.0", "id": 2, "method": "ui/message",
                     "params": {"role": "user", "content": []}})
        assert view.messages[-1]["role"] == "user" and view.context is None
        view.handle({"jsonrpc": "2.0", "method": "ui/notifications/size-changed",
                     "params": {"height": 5}})
        assert view.height == 40
        view.handle({"jsonrpc": "2.0", "id": 3, "method": "ui/open-link",
                     "params": {"url": "https://example.com/"}})
        assert view.links == ["https://example.com/"]
        assert list(view.log.columns) == ["time", "direction", "method", "id", "ok", "error"]


def test_the_comm_protocol_relays_both_ways() -> None:
    with tb.Bench() as bench:
        bench.connect("app", app_server(), protocol_mode="legacy")
        view = bench.call("app-clock").app
        assert isinstance(view, AppView)
        sent: list[dict[str, Any]] = []
        view.send = sent.append  # what would go to the front end
        view._on_front(view, {"kind": "context", "theme": "dark", "width": 640}, [])
        view._on_front(view, {"kind": "rpc", "message": {
            "jsonrpc": "2.0", "id": 7, "method": "ui/initialize", "params": {}}}, [])
        deadline = time.monotonic() + 10
        while not sent and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sent[0]["kind"] == "rpc" and sent[0]["message"]["id"] == 7
        context = sent[0]["message"]["result"]["hostContext"]
        assert context["theme"] == "dark" and context["containerDimensions"]["width"] == 640
        view._on_front(view, {"kind": "rpc", "message": {
            "jsonrpc": "2.0", "method": "ui/notifications/initialized"}}, [])
        deadline = time.monotonic() + 10
        while len(sent) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [m["message"]["method"] for m in sent[1:3]] == [
            "ui/notifications/tool-input", "ui/notifications/tool-result"]
        view.handle({"jsonrpc": "2.0", "method": "ui/notifications/request-teardown"})
        assert sent[-1] == {"kind": "teardown"}


def test_close_asks_the_front_end_to_tear_down_once() -> None:
    with tb.Bench() as bench:
        bench.connect("app", app_server(), protocol_mode="legacy")
        view = bench.call("app-clock").app
        assert isinstance(view, AppView)
        sent: list[dict[str, Any]] = []
        view.send = sent.append
        view.handle({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
        started = time.monotonic()
        view.close()
        assert time.monotonic() - started < 1.0  # the front waits, not the kernel
        assert [m for m in sent if m.get("kind") == "teardown"] == [{"kind": "teardown"}]
        assert view.bridge.torn_down


def test_the_front_ends_teardown_and_the_views_answer_are_in_the_log() -> None:
    """Clearing the output tears the view down in the front end: the kernel is told it was
    sent, gets the view's answer as an ``rpc`` message, and ``view.log`` shows both; a view
    that never answers, or a frame the page had already discarded, is a failed row."""
    with tb.Bench() as bench:
        bench.connect("app", app_server(), protocol_mode="legacy")
        view = bench.call("app-clock").app
        assert isinstance(view, AppView)
        view.send = lambda content: None
        view._on_front(view, {"kind": "teardown", "state": "sent", "id": "toolbench-teardown"},
                       [])
        assert not view.bridge.torn_down  # one output went; the widget may show elsewhere
        view._on_front(view, {"kind": "rpc", "message": {
            "jsonrpc": "2.0", "id": "toolbench-teardown", "result": {}}}, [])
        deadline = time.monotonic() + 10
        while len(view.log) < 2 and time.monotonic() < deadline:  # answered on the loop
            time.sleep(0.01)
        rows = [list(row) for row in view.log[["direction", "method", "id", "ok", "error"]]
                .itertuples(index=False)]
        assert rows == [["out", "ui/resource-teardown", "'toolbench-teardown'", True, None],
                        ["in", "ui/resource-teardown", "'toolbench-teardown'", True, None]]
        view._on_front(view, {"kind": "teardown", "state": "unanswered", "id": 7}, [])
        view._on_front(view, {"kind": "teardown", "state": "gone"}, [])
        view._on_front(view, {"kind": "teardown", "state": "<b>made up</b>"}, [])
        rows = [list(row) for row in view.log[["direction", "method", "ok"]]
                .itertuples(index=False)][2:]
        assert rows == [["in", "ui/resource-teardown", False],
                        ["out", "ui/resource-teardown", False]]
        errors = list(view.log["error"])[2:]
        assert "did not answer" in errors[0] and "already removed" in errors[1]
        assert list(view.log["id"])[2:] == ["'toolbench-teardown'"] * 2  # never the view's id
        again = view.handle({"jsonrpc": "2.0", "id": 9, "method": "ui/initialize",
                             "params": {}})
        assert again is not None and "result" in again  # another output of it still works


def test_the_front_ends_guards_match_the_kernels_constants() -> None:
    """view.js checks a message's size before the comm with the kernel's own bound, and takes
    the bootstrap's word by the key policy.py writes into every framed document."""
    import math
    import re
    from pathlib import Path

    import toolbench._notebook.apps as front
    from toolbench._bench.apps.bridge import MAX_MESSAGE_BYTES
    from toolbench._bench.apps.policy import FRAME_BOOTSTRAP, FRAME_LEAVING

    js = (Path(front.__file__).parent / "view.js").read_text(encoding="utf-8")
    size = re.search(r"const MAX_MESSAGE_BYTES = ([0-9* ]+);", js)
    assert size is not None
    assert math.prod(int(f) for f in size.group(1).split("*")) == MAX_MESSAGE_BYTES
    assert f'const FRAME_LEAVING = "{FRAME_LEAVING}";' in js
    assert f'"{FRAME_LEAVING}": how' in FRAME_BOOTSTRAP
