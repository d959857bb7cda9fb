"""A server that failed, told where it matters (toolbench._bench.servers.failed), issue #37
items 3 and 4: calling one of its tools names the server and why it failed, and
``load_config`` warns once with every failed server and its reason."""

from __future__ import annotations

import sys
import warnings

import pytest

import toolbench as tb

EXITS = [sys.executable, "-c", "import sys; sys.stderr.write('no licence key\\n'); sys.exit(3)"]
MISSING = "toolbench-no-such-program-37"


@pytest.mark.slow
def test_calling_a_tool_of_a_failed_server_says_it_failed_and_why() -> None:
    with tb.Bench() as bench:
        with pytest.raises(tb.Unreachable):
            bench.connect("time", EXITS, connect_timeout=20)
        for name in ("time-get_current_time", "tool://time/get_current_time"):
            with pytest.raises(tb.Unreachable) as caught:
                bench.call(name, timezone="UTC")
            text = str(caught.value)
            assert "its server 'time' failed" in text, text
            assert "no licence key" in text  # the reason: its stderr tail
            assert "no tool named" not in text
        with pytest.raises(tb.Unreachable, match="its server 'time' failed"):
            bench.compare("time-get_current_time", {"timezone": "UTC"})
        with pytest.raises(tb.Unreachable) as other:  # a name of no failed server
            bench.call("clock-now")
        assert "failed" not in str(other.value)


@pytest.mark.slow
def test_a_custom_namespace_leads_to_its_failed_server() -> None:
    with tb.Bench() as bench:
        with pytest.raises(tb.Unreachable):
            bench.connect("time", EXITS, namespace="t", connect_timeout=20)
        with pytest.raises(tb.Unreachable, match="its server 'time' failed"):
            bench.call("t-now")


@pytest.mark.slow
def test_load_config_warns_once_naming_every_failed_server() -> None:
    config = {"mcpServers": {
        "geo": {"command": sys.executable, "args": ["-m", "toolbench.demo.geo"]},
        "time": {"command": EXITS[0], "args": EXITS[1:]},
        "gone": {"command": MISSING},
    }}
    with tb.Bench(connect_timeout=20) as bench:
        with pytest.warns(tb.ConfigWarning) as caught:
            frame = bench.load_config(config)
        assert len(caught) == 1
        text = str(caught[0].message)
        assert text.startswith("2 of 3 servers in the config failed to start")
        assert "'time': " in text and "no licence key" in text
        assert "'gone': " in text and MISSING in text
        assert "'geo'" not in text
        assert caught[0].filename == __file__  # shown where load_config was called
        assert dict(zip(frame["name"], frame["status"], strict=True)) == {
            "geo": "connected", "time": "failed", "gone": "failed"}


@pytest.mark.slow
def test_load_config_with_no_failure_is_silent() -> None:
    config = {"mcpServers": {
        "geo": {"command": sys.executable, "args": ["-m", "toolbench.demo.geo"]}}}
    with tb.Bench() as bench, warnings.catch_warnings():
        warnings.simplefilter("error")
        bench.load_config(config)
