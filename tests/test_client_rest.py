"""The rest of the client through a Bench, against a raw JSON-RPC stdio server that writes
down everything it receives (tests/servers/recorder_server.py): ``logging/setLevel`` on
connect and on ``bench.log_level = ...``, per-server roots (a server never sees another
server's roots; changing one server's roots notifies that server only), what a server says
about itself (capped, untrusted), a broken tool skipped while the other nine load, an output
schema's remote ``$ref`` in the catalog's warnings, and -32042 as ``Refused`` naming the URL;
and subscriptions that survive a reconnect on a 2026-07-28 connection (a real stdio server,
tests/servers/memo_server.py, killed mid-session).
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb

SERVERS = Path(__file__).parent / "servers"
pytestmark = pytest.mark.slow  # each test starts stdio children


def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _received(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _methods(log: Path, method: str) -> list[dict[str, Any]]:
    return [m for m in _received(log) if m.get("method") == method]


def recorder(log: Path, name: str = "recorder") -> list[str]:
    return [sys.executable, str(SERVERS / "recorder_server.py"), str(log), name]


def test_log_level_is_sent_on_connect_and_on_change(tmp_path: Path) -> None:
    log = tmp_path / "rec.jsonl"
    with tb.Bench(log_level="debug") as bench:
        bench.connect("rec", recorder(log))
        assert _wait_for(lambda: len(_methods(log, "logging/setLevel")) == 1)
        assert _methods(log, "logging/setLevel")[0]["params"] == {"level": "debug"}
        bench.log_level = "error"
        assert bench.log_level == "error"
        assert _wait_for(lambda: len(_methods(log, "logging/setLevel")) == 2)
        assert _methods(log, "logging/setLevel")[1]["params"] == {"level": "error"}
        with pytest.raises(ValueError, match="invalid log_level 'loud'"):
            bench.log_level = "loud"  # type: ignore[assignment]


def test_no_log_level_sends_nothing(tmp_path: Path) -> None:
    log = tmp_path / "rec.jsonl"
    with tb.Bench(log_level=None) as bench:
        bench.connect("rec", recorder(log))
        bench.call("rec-good1")
        assert _methods(log, "logging/setLevel") == []


def _roots_seen(bench: tb.Bench, server: str) -> list[str]:
    return list(json.loads(bench.call(f"{server}-ask_roots").text))


def test_roots_are_per_server(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    default = tmp_path / "default"
    for folder in (a, b, default):
        folder.mkdir()
    log_a, log_b, log_c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    with tb.Bench(roots=[default]) as bench:
        bench.connect("sa", recorder(log_a), roots=[a])
        bench.connect("sb", recorder(log_b), roots=[str(b)])
        bench.connect("sc", recorder(log_c))
        assert _roots_seen(bench, "sa") == [a.resolve().as_uri()]
        assert _roots_seen(bench, "sb") == [b.resolve().as_uri()]
        assert _roots_seen(bench, "sc") == [default.resolve().as_uri()]
        assert bench.server_roots("sa") == [a.resolve().as_uri()]
        # Changing one server's roots tells that server only.
        assert bench.set_roots("sa", [b]) is True
        assert _wait_for(lambda: len(_methods(log_a, "notifications/roots/list_changed")) == 1)
        assert _roots_seen(bench, "sa") == [b.resolve().as_uri()]
        time.sleep(0.3)
        assert _methods(log_b, "notifications/roots/list_changed") == []
        assert _methods(log_c, "notifications/roots/list_changed") == []
        # Changing the bench's default tells only servers without their own.
        bench.roots = [a]
        assert _wait_for(lambda: len(_methods(log_c, "notifications/roots/list_changed")) == 1)
        time.sleep(0.3)
        assert len(_methods(log_a, "notifications/roots/list_changed")) == 1
        assert _methods(log_b, "notifications/roots/list_changed") == []
        assert _roots_seen(bench, "sc") == [a.resolve().as_uri()]
        with pytest.raises(KeyError, match="no server 'nope'"):
            bench.set_roots("nope", [a])
        with pytest.raises(ValueError, match="only file:// URIs are roots"):
            bench.connect("sd", recorder(tmp_path / "d.jsonl"), roots=["https://x.example"])


def test_roots_key_in_a_config(tmp_path: Path) -> None:
    folder = tmp_path / "only"
    folder.mkdir()
    config = {"mcpServers": {"rec": {"command": sys.executable,
                                     "args": recorder(tmp_path / "r.jsonl")[1:],
                                     "roots": [str(folder)]}}}
    with tb.Bench() as bench:
        bench.load_config(config)
        assert _roots_seen(bench, "rec") == [folder.resolve().as_uri()]


class _Counting(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()
        self.wfile.write(b"\x89PNG")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def icon_server() -> Iterator[str]:
    _Counting.hits = 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/icon.png"
    finally:
        server.shutdown()
        server.server_close()


def test_what_a_server_says_about_itself(tmp_path: Path, icon_server: str) -> None:
    with tb.Bench() as bench:
        bench.connect("rec", [*recorder(tmp_path / "r.jsonl"), icon_server])
        row = bench.servers.set_index("name").loc["rec"]
        assert row["title"] == "Recorder <i>title</i>"
        assert row["description"] == "writes down what it hears"
        assert row["website"] == "https://example.com/recorder"
        assert row["instructions"].startswith("Use <script>")
        assert len(row["instructions"]) <= 10_000
        assert row["capabilities"] == {"tools": {}, "logging": {}}
        assert [icon["src"] for icon in row["icons"]][1] == icon_server
        catalog = bench.catalog().set_index("tool")
        assert catalog.loc["ask_roots", "meta"] == {"team": "<b>core</b>"}
        assert catalog.loc["ask_roots", "icons"][0]["mimeType"] == "image/png"
        # Shown: escaped, the data: PNG inline, the remote icon as text, never fetched.
        assert "<script>alert" not in bench._repr_mimebundle_()["text/html"]
        explorer = bench.explore()
        shown = explorer.server_about("rec")
        assert "&lt;script&gt;" in shown and "<script>" not in shown
        assert "<img" in shown and "data:image/png;base64," in shown
        assert icon_server in shown and f'src="{icon_server}"' not in shown
        time.sleep(0.3)
        assert _Counting.hits == 0


def test_a_broken_tool_is_skipped_and_the_rest_load(tmp_path: Path) -> None:
    with tb.Bench() as bench:
        assert bench.connect("rec", recorder(tmp_path / "r.jsonl")) == 9
        warnings = bench.servers.set_index("name").loc["rec", "warnings"]
        assert any("'broken'" in w and "inputSchema" in w for w in warnings), warnings
        catalog = bench.catalog().set_index("tool")
        assert "broken" not in catalog.index
        assert any("output schema" in w and "https://example.invalid" in w
                   for w in catalog.loc["remote_out", "warnings"])


def test_url_elicitation_error_is_refused_naming_the_url(tmp_path: Path) -> None:
    with tb.Bench() as bench:
        bench.connect("rec", recorder(tmp_path / "r.jsonl"))
        with pytest.raises(tb.Refused, match=r"https://auth\.example\.com/start\?x=1") as info:
            bench.call("rec-needs_url")
        assert info.value.urls == ["https://auth.example.com/start?x=1"]  # type: ignore[attr-defined]
        assert "Sign in to continue" in info.value.detail
        record = bench.records.iloc[-1]
        assert record["disposition"] == "did_not_happen"
        assert bench.call("rec-needs_url").text == "thanks"


def _updates(bench: tb.Bench, uri: str) -> int:
    logs = bench.logs
    if logs.empty:
        return 0
    return int(((logs["kind"] == "resource_updated") & (logs["message"] == uri)).sum())


def test_subscriptions_survive_a_reconnect_on_a_2026_connection() -> None:
    """On 2026-07-28 a subscription is a ``subscriptions/listen`` stream naming the URIs; the
    reconnected connection's stream names them again before the request that reconnected is
    sent, so the update that request causes is not lost."""
    with tb.Bench(timeout=20) as bench:
        bench.connect("memo", [sys.executable, str(SERVERS / "memo_server.py")],
                      protocol_mode="auto")
        assert bench.servers.set_index("name").loc["memo", "protocol"] == "2026-07-28"
        bench.subscribe("memo", "memo://a")
        bench.call("memo-touch", uri="memo://a")
        assert _wait_for(lambda: _updates(bench, "memo://a") == 1)
        pid = int(bench.call("memo-pid").text)
        os.kill(pid, signal.SIGKILL)
        assert _wait_for(lambda: bench.servers.set_index("name").loc["memo", "status"] == "lost")
        # The first request after the loss reconnects; its own update must arrive.
        bench.call("memo-touch", uri="memo://a")
        assert _wait_for(lambda: _updates(bench, "memo://a") == 2), bench.logs.tail(5)
        assert int(bench.call("memo-pid").text) != pid
        assert bench.servers.set_index("name").loc["memo", "protocol"] == "2026-07-28"
        assert bench.subscriptions() == {"memo": ["memo://a"]}
        # The new connection's stream follows (un)subscribing as the first one did.
        bench.unsubscribe("memo", "memo://a")
        bench.subscribe("memo", "memo://b")
        bench.call("memo-touch", uri="memo://a")
        bench.call("memo-touch", uri="memo://b")
        assert _wait_for(lambda: _updates(bench, "memo://b") == 1)
        assert _updates(bench, "memo://a") == 2  # one stream, in order: none came for a
