"""The catalog follows its servers (toolbench/_bench/catalog/follow.py): a stdio server killed
mid-session comes back (reconnect on the next call) with a renamed tool, and the catalog has
the new name and not the old one, as after a ``tools/list_changed``; its resources and prompts
are listed again too and applied as a ``list_changed`` would be (kept, logged, stored as a
snapshot, checked against pins)."""

from __future__ import annotations

import os
import signal
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb

SERVERS = Path(__file__).parent / "servers"
pytestmark = pytest.mark.slow  # stdio children


def _wait_for(condition: Callable[[], bool], seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_a_restarted_server_with_a_renamed_tool_is_followed(tmp_path: Path) -> None:
    counter = tmp_path / "starts"
    command = [sys.executable, str(SERVERS / "renaming_server.py"), str(counter)]
    with tb.Bench(timeout=20) as bench:
        assert bench.connect("rs", command) == 2
        bench.subscribe("rs", "note://a")
        assert set(bench.catalog()["name"]) == {"rs-pid", "rs-tool_v1"}
        pid = int(bench.call("rs-pid").text)
        os.kill(pid, signal.SIGKILL)
        assert _wait_for(lambda: bench.servers.set_index("name").loc["rs", "status"] == "lost")
        # The next call reconnects; the reconnect re-lists everything, like a list_changed.
        assert int(bench.call("rs-pid").text) != pid
        # Subscribed again before the call that reconnected was sent (not merely soon).
        subs = Path(f"{counter}.subs")
        assert subs.read_text().splitlines() == ["1 note://a", "2 note://a"]
        assert _wait_for(lambda: set(bench.catalog()["name"]) == {"rs-pid", "rs-tool_v2"}), \
            set(bench.catalog()["name"])
        assert bench.call("rs-tool_v2").text == "v2"
        with pytest.raises(tb.Unreachable, match="rs-tool_v1"):
            bench.call("rs-tool_v1")
        assert bench.servers.set_index("name").loc["rs", "status"] == "connected"
        assert bench.follower.relists()["rs"]["tools"] == 1
        assert counter.read_text() == "2"
        assert bench.subscriptions() == {"rs": ["note://a"]}


@pytest.mark.parametrize("keeping", [False, True], ids=["plain", "journal-and-pins"])
def test_a_restarted_server_with_a_changed_resource_and_prompt_is_followed(
        tmp_path: Path, keeping: bool) -> None:
    """After a reconnect, resources and prompts are listed again and applied exactly as a
    ``list_changed`` would be: the bench keeps the new lists and ``bench.logs`` says what
    changed; with a journal and pins, the journal stores the snapshot and the pins see it."""
    counter = tmp_path / "starts"
    journal = tmp_path / "calls.sqlite"
    command = [sys.executable, str(SERVERS / "renaming_server.py"), str(counter)]
    options: dict[str, Any] = {"journal": journal, "pins": tmp_path / "pins.json"} \
        if keeping else {}
    with tb.Bench(timeout=20, **options) as bench:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # trust on first use: nothing to report
            bench.connect("rs", command)
        if not keeping:  # the baseline is listed in the background after the connect
            assert _wait_for(lambda: {"resource", "prompt"} <= set(bench.follower.kept("rs")))
        pid = int(bench.call("rs-pid").text)
        os.kill(pid, signal.SIGKILL)
        assert _wait_for(lambda: bench.servers.set_index("name").loc["rs", "status"] == "lost")
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            assert int(bench.call("rs-pid").text) != pid  # reconnects
            # The prompts are applied last: then the whole round is.
            assert _wait_for(lambda: any(isinstance(d, dict) and d.get("kind") == "prompt"
                                         for d in bench.logs["data"]))
        assert bench.follower.relists()["rs"] == {"tools": 1, "resources": 1, "prompts": 1}
        kept = bench.follower.kept("rs")
        assert set(kept["resource"]) == {"note://fixed", "note://v2"}
        assert kept["resource"]["note://fixed"]["description"] == "start 2"
        assert set(kept["prompt"]) == {"greet_v2"}
        # bench.logs: one row per kind that changed.
        logs = bench.logs
        changes = {row["kind"]: row for row in logs["data"]
                   if isinstance(row, dict) and row.get("event") == "catalog_changed"}
        assert changes["resource"]["why"] == "reconnect"
        assert changes["resource"]["added"] == ["note://v2"]
        assert changes["resource"]["removed"] == ["note://v1"]
        assert changes["resource"]["changed"] == ["note://fixed"]
        assert changes["prompt"]["added"] == ["greet_v2"]
        assert changes["prompt"]["removed"] == ["greet_v1"]
        assert changes["tool"]["added"] == ["tool_v2"] and changes["tool"]["removed"] == ["tool_v1"]
        assert "resource_template" not in changes  # none before, none after
        message = logs.loc[logs["data"].map(lambda d: isinstance(d, dict) and d.get("kind")
                                            == "prompt"), "message"].iloc[0]
        assert message.startswith("prompts changed after a reconnect")
        if not keeping:
            return
        # The pins saw it: the changed resource is marked, and a PinWarning said so.
        pins = [str(w.message) for w in told if issubclass(w.category, tb.PinWarning)]
        assert any("pinned resource changed ('note://fixed')" in text for text in pins), pins
        state = bench.pins.set_index(["kind", "name"])["state"]
        assert state[("resource", "note://fixed")] == "changed"
    # The journal stored the new lists as a snapshot of the re-list.
    snap = tb.load_snapshot(journal)
    assert set(snap.loc[snap["kind"] == "resource", "name"]) == {"note://fixed", "note://v2"}
    assert set(snap.loc[snap["kind"] == "prompt", "name"]) == {"greet_v2"}


def _restarted_changed(tmp_path: Path, bench: tb.Bench) -> Path:
    """Connect the pinned-change server, kill it and have it come back at version 2; the
    returned file lists what reached the server (``VERSION what`` per line)."""
    version = tmp_path / "version"
    version.write_text("1")
    bench.connect("pc", [sys.executable, str(SERVERS / "pinned_change_server.py"),
                         str(version)])
    assert bench.call("pc-echo", text="hi").text == "hi (version 1)"
    assert bench.read("pc", "note://a").text == "note a, version 1"
    pid = int(bench.call("pc-pid").text)
    version.write_text("2")
    os.kill(pid, signal.SIGKILL)
    assert _wait_for(lambda: bench.servers.set_index("name").loc["pc", "status"] == "lost")
    return Path(f"{version}.sent")


@pytest.mark.parametrize("first", ["call", "read", "prompt"])
def test_the_first_request_after_a_restart_with_a_changed_pin_is_refused(
        tmp_path: Path, first: str) -> None:
    """Issue 26: the request that reconnects is checked against the re-listed catalog, not
    the one from before the restart (the re-list is applied before it is sent)."""
    with tb.Bench(pins=tmp_path / "pins.json", timeout=20) as bench:
        sent = _restarted_changed(tmp_path, bench)
        before = sent.read_text()
        with warnings.catch_warnings():  # the PinWarning of the re-list
            warnings.simplefilter("ignore", tb.PinWarning)
            if first == "call":
                with pytest.raises(tb.Refused, match="tool pc/echo changed since it was pinned"):
                    bench.call("pc-echo", text="hi")
            elif first == "read":
                with pytest.raises(tb.Refused, match="resource pc/note://a changed since it "
                                                     "was pinned"):
                    bench.read("pc", "note://a")
            else:
                with pytest.raises(tb.Refused, match="prompt pc/greet changed since it was "
                                                     "pinned"):
                    bench.prompt("pc-greet", who="Ada")
        assert sent.read_text() == before  # nothing reached the restarted server
        refused = bench.records[bench.records["error_type"] == "Refused"]
        assert list(refused["disposition"]) == ["did_not_happen"]
        state = bench.pins.set_index(["kind", "name"])["state"]
        assert state[("tool", "echo")] == "changed"
        assert state[("resource", "note://a")] == "changed"
        assert state[("prompt", "greet")] == "changed"
        assert state[("tool", "pid")] == "ok"
        # unchanged items are served on the new connection; approving lets the changed through
        assert bench.read("pc", "note://same").text == "the same note"
        bench.approve("pc-echo")
        assert bench.call("pc-echo", text="hi").text == "hi (version 2)"
