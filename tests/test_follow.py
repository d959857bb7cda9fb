"""The catalog follows its servers (toolbench/_bench/follow.py): a stdio server killed
mid-session comes back (reconnect on the next call) with a renamed tool, and the catalog has
the new name and not the old one, as after a ``tools/list_changed``; resources and prompts
``list_changed`` re-list too, coalesced."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

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
        assert _wait_for(lambda: set(bench.catalog()["name"]) == {"rs-pid", "rs-tool_v2"}), \
            set(bench.catalog()["name"])
        assert bench.call("rs-tool_v2").text == "v2"
        with pytest.raises(tb.Unreachable, match="rs-tool_v1"):
            bench.call("rs-tool_v1")
        assert bench.servers.set_index("name").loc["rs", "status"] == "connected"
        assert bench._relists()["rs"]["tools"] == 1
        assert counter.read_text() == "2"
        # Subscribed again after the reconnect, without being asked.
        subs = Path(f"{counter}.subs")
        assert _wait_for(lambda: subs.read_text().splitlines() == ["1 note://a", "2 note://a"])
        assert bench.subscriptions() == {"rs": ["note://a"]}
