"""MCP App views over time (DESIGN.md, "MCP Apps", "Over time"): a tool's fingerprint covers
the SHA-256 of its view's HTML, so a changed view is a changed tool. Pins block it until
``approve``, ``tb.diff`` shows a ``ui`` row, a view that cannot be read is its error state
(never "unchanged"), and a pins file from before the HTML counted still loads, quietly.

The server is ``tests/servers/view_server.py`` (the real SDK's MCPServer), in process and over
stdio: its ``flip`` tool rewrites the view's HTML and announces ``tools/list_changed``."""

from __future__ import annotations

import hashlib
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from tests.servers import view_server
from toolbench._bench.overtime.snapshots import fingerprint

SERVER = Path(__file__).parent / "servers" / "view_server.py"


def _sha(version: int) -> str:
    return hashlib.sha256(view_server.html(version).encode()).hexdigest()


def _target(how: str, state: Path) -> Any:
    if how == "stdio":
        return [sys.executable, str(SERVER), str(state)]
    return view_server.create(state)


def _until(what: Callable[[], bool], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.05)
    return what()


def _states(bench: tb.Bench) -> dict[str, str]:
    return dict(bench.pins.set_index("name")["state"])


def _pinned_view(path: Path) -> Any:
    return json.loads(path.read_text())["pins"]["v"]["tool"]["show"]["item"]["ui"]["view"]


def _connects_quietly(pins: Path, state: Path) -> None:
    """A bench on ``pins`` connects the view server with every pin ok, calls ``show`` and
    warns nothing."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tb.Bench(pins=pins) as bench:
            bench.connect("v", _target("in_process", state))
            assert set(_states(bench).values()) == {"ok"}
            assert bench.call("v-show").text == "shown: hi"
    assert not [w for w in caught if issubclass(w.category, tb.PinWarning)]


def _flip_and_wait(bench: tb.Bench, **flip: Any) -> list[warnings.WarningMessage]:
    """Flip the view and wait (bounded) for the verdict and its PinWarning (issued once its
    diff is built off the loop)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bench.call("v-flip", **flip)
        assert _until(lambda: _states(bench)["show"] == "changed"
                      and any(issubclass(w.category, tb.PinWarning) for w in caught))
    return [w for w in caught if issubclass(w.category, tb.PinWarning)]


@pytest.mark.parametrize("how", ["in_process", pytest.param("stdio", marks=pytest.mark.slow)])
def test_a_changed_view_is_a_changed_tool_until_approved(tmp_path: Path, how: str) -> None:
    state, pins, journal = tmp_path / "state.json", tmp_path / "pins.json", tmp_path / "j.sqlite"
    with tb.Bench(pins=pins, journal=journal, timeout=20) as bench:
        bench.connect("v", _target(how, state))
        assert set(_states(bench).values()) == {"ok"}
        assert _pinned_view(pins) == {"sha256": _sha(1)}  # the file keeps the hash...
        assert "view version" not in pins.read_text()  # ...never the HTML
        before = bench.snapshot("v")
        assert before.set_index("name").loc["show", "ui"]["view"] == {"sha256": _sha(1)}
        assert bench.call("v-show").text == "shown: hi"

        told = _flip_and_wait(bench, version=2)
        assert len(told) == 1 and "show" in str(told[0].message)
        assert list(told[0].message.diff["field"]) == ["ui"]  # type: ignore[union-attr]
        states = _states(bench)
        assert states == {"show": "changed", "plain": "ok", "flip": "ok",
                          view_server.URI: "ok"}  # the resource's declaration is the same
        assert bench.catalog().set_index("tool").loc["show", "pin"] == "changed"
        with pytest.raises(tb.Refused, match="show") as refused:
            bench.call("v-show")
        assert refused.value.disposition == tb.Disposition.DID_NOT_HAPPEN
        assert bench.call("v-plain").text == "plain"  # only the changed tool is blocked

        after = bench.snapshot("v")
        changed = tb.diff(before, after)
        assert list(changed["field"]) == ["ui"] and list(changed["name"]) == ["show"]
        row = changed.iloc[0]
        assert row["old"]["view"] == {"sha256": _sha(1)}
        assert row["new"]["view"] == {"sha256": _sha(2)}
        assert row["old"]["ui"] == row["new"]["ui"] == {"resourceUri": view_server.URI}
        assert "the view's HTML" in row["detail"] and "_meta.ui" not in row["detail"]
        assert bench.apps().iloc[0]["bytes"] == len(view_server.html(2))  # the view checked

        assert bench.approve("v-show") == "v/show"
        assert bench.call("v-show").text == "shown: hi"
        assert set(_states(bench).values()) == {"ok"}
        assert _pinned_view(pins) == {"sha256": _sha(2)}
    # The journal's snapshots carry the hash too: the diff reads the same from them.
    stored = tb.diff(before, tb.load_snapshot(journal))
    assert list(stored["field"]) == ["ui"]
    assert stored.iloc[0]["new"]["view"] == {"sha256": _sha(2)}


@pytest.mark.parametrize("how", ["in_process", pytest.param("stdio", marks=pytest.mark.slow)])
def test_an_unchanged_view_stays_ok_across_reconnects(tmp_path: Path, how: str) -> None:
    state, pins = tmp_path / "state.json", tmp_path / "pins.json"
    fingerprints = []
    for _ in range(3):  # three benches, one pins file, the same view
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with tb.Bench(pins=pins, timeout=20) as bench:
                bench.connect("v", _target(how, state))
                bench.disconnect("v")
                bench.connect("v", _target(how, state))  # a reconnect within one bench
                assert set(_states(bench).values()) == {"ok"}
                assert bench.call("v-show").text == "shown: hi"
                fingerprints.append(dict(bench.pins.set_index("name")["fingerprint"]))
        assert not [w for w in caught if issubclass(w.category, tb.PinWarning)]
    assert fingerprints[0] == fingerprints[1] == fingerprints[2]
    assert _pinned_view(pins) == {"sha256": _sha(1)}


def test_a_view_that_cannot_be_read_is_a_change_not_unchanged(tmp_path: Path) -> None:
    state, pins = tmp_path / "state.json", tmp_path / "pins.json"
    with tb.Bench(pins=pins, timeout=20) as bench:
        bench.connect("v", _target("in_process", state))
        told = _flip_and_wait(bench, version=1, broken=True)  # same HTML, now unreadable
        assert "show" in str(told[0].message)
        with pytest.raises(tb.Refused):
            bench.call("v-show")
        new = bench.pins  # the pin still holds the readable version
        assert new.set_index("name").loc["show", "state"] == "changed"
        diff = told[0].message.diff  # type: ignore[attr-defined]
        assert diff.iloc[0]["field"] == "ui"
        assert "error" in diff.iloc[0]["new"]["view"]
        assert "not fetched" in diff.iloc[0]["detail"]
        # Approving the error state pins it; a readable view later is a change again.
        bench.approve("v-show")
        assert bench.call("v-show").text == "shown: hi"
        assert "error" in _pinned_view(pins)
        _flip_and_wait(bench, version=1, broken=False)
        with pytest.raises(tb.Refused):
            bench.call("v-show")


def test_a_pin_from_before_the_view_counted_is_renewed_quietly(tmp_path: Path) -> None:
    state, pins = tmp_path / "state.json", tmp_path / "pins.json"
    with tb.Bench(pins=pins) as bench:
        bench.connect("v", _target("in_process", state))

    def as_before(description: str | None = None) -> None:
        """Rewrite the pin of ``show`` as a toolbench without view hashes wrote it."""
        doc = json.loads(pins.read_text())
        pin = doc["pins"]["v"]["tool"]["show"]
        item = {**pin["item"], "ui": {"ui": pin["item"]["ui"]["ui"]}}
        if description is not None:
            item["description"] = description
        item["fingerprint"] = pin["fingerprint"] = fingerprint(item)
        pin["item"] = item
        pins.write_text(json.dumps(doc))
        pins.chmod(0o600)

    as_before()
    _connects_quietly(pins, state)
    assert _pinned_view(pins) == {"sha256": _sha(1)}  # renewed in the file

    as_before(description="Something else.")  # an old pin that differs in more than that
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tb.Bench(pins=pins) as bench:
            bench.connect("v", _target("in_process", state))
            assert _states(bench)["show"] == "changed"
            with pytest.raises(tb.Refused):
                bench.call("v-show")
    told = [w for w in caught if issubclass(w.category, tb.PinWarning)]
    assert len(told) == 1 and "show" in str(told[0].message)


@pytest.mark.slow
def test_a_view_over_the_byte_cap_restarts_the_connection_once_not_forever(
        tmp_path: Path) -> None:
    """Its read restarts the connection, and a reconnect re-lists: fetched again each time,
    it would restart it forever. It is its error state instead, kept until a new connect."""
    state, pins = tmp_path / "state.json", tmp_path / "pins.json"
    view_server.write_state(state, pad=300_000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tb.Bench(pins=pins, timeout=20) as bench:
            bench.connect("v", _target("stdio", state), max_message_bytes=200_000)
            assert "Malformed" in _pinned_view(pins)["error"]
            seen = set()
            deadline = time.monotonic() + 8  # a restart loop would show within this
            while time.monotonic() < deadline:
                seen.add(bench.servers.set_index("name").loc["v", "status"])
                time.sleep(0.1)
            assert seen == {"connected"}
            assert bench.call("v-show").text == "shown: hi"  # no view, but not blocked
            assert set(_states(bench).values()) == {"ok"}
            row = bench.apps().iloc[0]
            assert "200,000" in row["error"]
    assert not [w for w in caught if issubclass(w.category, tb.PinWarning)]


def test_a_fetch_that_breaks_still_leaves_the_listing_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a ToolError (a bug, say): the view is its error state, and every tool is still
    pinned and checked, never left out of the listing's check."""
    from toolbench._bench.apps.host import BenchHost

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in the fetch")

    monkeypatch.setattr(BenchHost, "read_view", broken)
    state, pins = tmp_path / "state.json", tmp_path / "pins.json"
    with tb.Bench(pins=pins) as bench:
        bench.connect("v", _target("in_process", state))
        assert _pinned_view(pins) == {"error": "not fetched: RuntimeError"}
        assert set(_states(bench)) == {"show", "plain", "flip", view_server.URI}
    monkeypatch.undo()
    with warnings.catch_warnings(record=True) as caught:  # readable again: a change
        warnings.simplefilter("always")
        with tb.Bench(pins=pins) as bench:
            bench.connect("v", _target("in_process", state))
            assert _states(bench)["show"] == "changed"
    assert any("show" in str(w.message) for w in caught
               if issubclass(w.category, tb.PinWarning))


def test_a_pin_from_before_execution_and_ui_counted_is_renewed_quietly(tmp_path: Path) -> None:
    """A pins file written before a tool's ``execution`` and ``_meta.ui`` entered its
    fingerprint (issue 33) holds the item without ``ui``: it loads quietly, and is renewed."""
    state, pins = tmp_path / "state.json", tmp_path / "pins.json"
    with tb.Bench(pins=pins) as bench:
        bench.connect("v", _target("in_process", state))
    doc = json.loads(pins.read_text())
    pin = doc["pins"]["v"]["tool"]["show"]
    item = {k: v for k, v in pin["item"].items() if k not in ("ui", "execution", "fingerprint")}
    item["fingerprint"] = pin["fingerprint"] = fingerprint(item)
    pin["item"] = item
    pins.write_text(json.dumps(doc))
    pins.chmod(0o600)
    _connects_quietly(pins, state)
    assert _pinned_view(pins) == {"sha256": _sha(1)}  # renewed, with the view, in the file
