"""Pins under attack (#33, the bench's side): no window while a server's tools are listed
again, ``unverified`` after a failed re-list, ``approve`` of only what was shown, first-use
races between benches, and no word diff or large catalog holding the shared loop.

The server is ``tests/servers/rugpull_server.py`` (the real SDK's MCPServer), in process and
over stdio: it flips its tool's version and then delays or fails its ``tools/list``."""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from tests.servers import rugpull_server

SERVER = Path(__file__).parent / "servers" / "rugpull_server.py"
DELAY = 1.5


def _target(how: str, state: Path) -> Any:
    if how == "stdio":
        return [sys.executable, str(SERVER), str(state)]
    return rugpull_server.create(state)


def _quiet(fn: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tb.PinWarning)
        return fn()


@pytest.fixture(autouse=True)
def _pin_warnings_are_shown_not_raised() -> Any:
    """A PinWarning raised on the loop (a re-list) is what these tests cause on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tb.PinWarning)
        yield


def _hammer(bench: tb.Bench, seconds: float) -> tuple[int, int, int]:
    """Call ``s-echo`` for ``seconds``: (answered by version 2, answered by 1, refused)."""
    v2 = v1 = refused = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            text = str(bench.call("s-echo", text="x").data)
        except tb.Refused:
            refused += 1
            continue
        v2 += "x v2" in text
        v1 += "x v1" in text
    return v2, v1, refused


@pytest.mark.parametrize("how", ["in_process", pytest.param("stdio", marks=pytest.mark.slow)])
def test_no_call_is_answered_by_a_changed_tool_while_it_is_listed_again(
        tmp_path: Path, how: str) -> None:
    state = tmp_path / "state.json"
    with tb.Bench(pins=tmp_path / "pins.json", timeout=10) as bench:
        bench.connect("s", _target(how, state))
        assert "x v1" in str(bench.call("s-echo", text="x").data)
        bench.call("s-flip", version=2, delay=DELAY)
        v2, _, refused = _quiet(lambda: _hammer(bench, DELAY + 0.5))
        assert v2 == 0, f"{v2} calls were answered by the changed tool while it was re-listed"
        assert refused >= 1
        assert bench.catalog().set_index("tool").loc["echo", "pin"] == "changed"
        record = bench.records.iloc[-1]
        assert record["error_type"] == "Refused" and record["disposition"] == "did_not_happen"


def test_a_map_right_after_a_list_changed_waits_and_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    with tb.Bench(pins=tmp_path / "pins.json", timeout=10) as bench:
        bench.connect("s", _target("in_process", state))
        bench.call("s-flip", version=2, delay=DELAY)
        started = time.monotonic()
        rows = _quiet(lambda: bench.map("s-echo", [{"text": str(i)} for i in range(10)],
                                        progress=False))
        assert time.monotonic() - started >= DELAY * 0.5  # it waited for the listing
        assert rows["error_type"].tolist() == ["Refused"] * 10
        assert not any("v2" in str(v) for v in rows["text"])


def test_a_call_that_outwaits_its_timeout_is_refused_unsent(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    with tb.Bench(pins=tmp_path / "pins.json", timeout=10) as bench:
        bench.connect("s", _target("in_process", state))
        bench.call("s-flip", version=1, delay=3)  # the same tools, listed slowly
        with pytest.raises(tb.Refused, match="still being listed again") as refused:
            bench.call("s-echo", text="x", timeout=0.3)
        assert refused.value.disposition == tb.Disposition.DID_NOT_HAPPEN


@pytest.mark.parametrize("how", ["in_process", pytest.param("stdio", marks=pytest.mark.slow)])
def test_a_failed_relist_leaves_the_tools_unverified_and_refused(tmp_path: Path,
                                                                 how: str) -> None:
    state = tmp_path / "state.json"
    with tb.Bench(pins=tmp_path / "pins.json", timeout=10) as bench:
        bench.connect("s", _target(how, state))
        bench.call("s-flip", version=2, fail=True, recover=2.0)
        deadline = time.monotonic() + 5
        while bench.catalog().set_index("tool").loc["echo", "pin"] != "unverified":
            assert time.monotonic() < deadline, bench.catalog()["pin"].tolist()
            time.sleep(0.02)
        assert set(bench.catalog()["pin"]) == {"unverified"}
        v2, v1, refused = _hammer(bench, 0.5)
        assert (v2, v1) == (0, 0) and refused >= 1
        with pytest.raises(tb.Refused, match="unverified") as caught:
            bench.call("s-echo", text="x")
        assert caught.value.disposition == tb.Disposition.DID_NOT_HAPPEN
        # the server lists again (and announces it): verified, the change found and blocked
        deadline = time.monotonic() + 10
        while bench.catalog().set_index("tool").loc["flip", "pin"] != "pinned":
            assert time.monotonic() < deadline, bench.catalog()["pin"].tolist()
            time.sleep(0.05)
        assert bench.catalog().set_index("tool").loc["echo", "pin"] == "changed"
        with pytest.raises(tb.Refused, match="changed since it was pinned"):
            bench.call("s-echo", text="x")


def _fingerprint(bench: tb.Bench, tool: str) -> str:
    snap = bench.snapshot("s")
    return str(snap.set_index("name").loc[tool, "fingerprint"])


def test_approve_approves_only_what_the_last_warning_showed(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    with tb.Bench(pins=tmp_path / "pins.json", timeout=10) as bench:
        bench.connect("s", _target("in_process", state))
        v1 = _fingerprint(bench, "echo")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bench.call("s-flip", version=2)
            _until(lambda: any("version [-1)-] {+2)+}" in str(w.message) for w in caught))
        assert bench.catalog().set_index("tool").loc["echo", "pin"] == "changed"
        v2 = _fingerprint(bench, "echo")
        # the user reviewed v2; the server flips to v3 (listed slowly) before approve runs
        bench.call("s-flip", version=3, delay=1.0)
        time.sleep(0.2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert bench.approve("s-echo") is None  # v3 was never shown: nothing approved
        again = [str(w.message) for w in caught if "changed again" in str(w.message)]
        assert len(again) == 1 and "nothing was approved" in again[0]
        assert "{+3)+}" in again[0]  # the newer diff: v2 -> v3
        with pytest.raises(tb.Refused):
            bench.call("s-echo", text="x")
        v3 = _fingerprint(bench, "echo")
        assert len({v1, v2, v3}) == 3
        for wrong in (v1, v2):  # a version that is not listed now
            with pytest.raises(ValueError, match=f"fingerprint '{wrong}' is not the version "
                                                 "of s/echo listed now"):
                bench.approve("s-echo", fingerprint=wrong)
        with pytest.raises(ValueError, match="'abc' is not a fingerprint: 64 lowercase hex"):
            bench.approve("s-echo", fingerprint="abc")
        assert bench.catalog().set_index("tool").loc["echo", "pin"] == "changed"
        assert bench.approve("s-echo") == "s/echo"  # the warning above showed v3
        assert "x v3" in str(bench.call("s-echo", text="x").data)
        assert bench.pins.set_index("name").loc["echo", "fingerprint"] == v3


def test_approve_with_a_fingerprint_approves_that_version_only(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    with tb.Bench(pins=tmp_path / "pins.json", timeout=10) as bench:
        bench.connect("s", _target("in_process", state))
        bench.call("s-flip", version=2)
        _until(lambda: bench.catalog().set_index("tool").loc["echo", "pin"] == "changed")
        v2 = _fingerprint(bench, "echo")
        assert bench.approve("s-echo", fingerprint=v2) == "s/echo"
        assert "x v2" in str(bench.call("s-echo", text="x").data)


def _until(condition: Any, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def _neighbour() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("neighbour")

    @server.tool()
    def ping() -> str:
        """pong"""
        return "pong"

    return server


def _latencies(bench: tb.Bench, seconds: float, at_least: int = 0) -> list[float]:
    out: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end or len(out) < at_least:
        t0 = time.perf_counter()
        bench.call("n-ping")
        out.append(time.perf_counter() - t0)
    return out


def test_a_rug_pull_warning_does_not_hold_a_neighbours_calls(tmp_path: Path) -> None:
    # the word diff off the loop is this branch's; its cap and time bound (without which a
    # 6,000-word diff runs for minutes on any thread) come with h/pins1's words module
    pytest.importorskip("toolbench._bench.overtime.words")
    state = tmp_path / "state.json"
    rugpull_server.write_state(state, version=1, words=6000)  # pinned with the long text
    with tb.Bench(pins=tmp_path / "pins.json", timeout=60) as bench:
        bench.connect("s", _target("in_process", state))
        bench.connect("n", _neighbour())
        alone = sorted(_latencies(bench, 0.5, 30))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bench.call("s-flip", version=2, words=6000)  # a rug pull: one word in ten
            during = _latencies(bench, 0.0, 1)
            while not any("changed" in str(w.message) for w in caught):
                during += _latencies(bench, 0.2)
                assert len(during) < 100_000
        bound = 2 * alone[len(alone) // 2] + 0.050
        assert max(during) <= bound, (f"a neighbour's worst call took {max(during):.3f} s "
                                      f"while the warning was built (alone: median "
                                      f"{alone[len(alone) // 2]:.4f} s)")


def test_first_use_races_are_warned_about_and_blocked_never_overwritten(
        tmp_path: Path) -> None:
    # the save that re-reads the file under its lock and returns the conflicts is h/pins1's
    pytest.importorskip("toolbench._bench.overtime.words")
    pins = tmp_path / "pins.json"
    first_state, second_state = tmp_path / "a.json", tmp_path / "b.json"
    rugpull_server.write_state(first_state, version=1)
    rugpull_server.write_state(second_state, version=2)  # an injected version
    with tb.Bench(pins=pins) as first, tb.Bench(pins=pins) as second:  # both read it empty
        first.connect("s", rugpull_server.create(first_state))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            second.connect("s", rugpull_server.create(second_state))
        assert any("changed ('echo')" in str(w.message) for w in caught)
        assert second.catalog().set_index("tool").loc["echo", "pin"] == "changed"
        with pytest.raises(tb.Refused, match="changed since it was pinned"):
            second.call("s-echo", text="x")
        assert "x v1" in str(first.call("s-echo", text="x").data)
    with tb.Bench(pins=pins) as third:  # the first pin held: the injected version is refused
        third.connect("s", rugpull_server.create(second_state))
        with pytest.raises(tb.Refused, match="changed since it was pinned"):
            third.call("s-echo", text="x")
