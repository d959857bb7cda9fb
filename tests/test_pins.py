"""Pins: trust on first use, a changed tool refused until approved, new and removed tools
reported, and a pins file that is safe against bad content and concurrent writers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench import demo
from toolbench._bench import pins as pins_mod
from toolbench._bench.pins import PinFile
from toolbench.demo import geo_precise, geo_precise_v2


def _caught(fn: Any) -> tuple[Any, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, [w for w in caught if issubclass(w.category, tb.PinWarning)]


def test_trust_on_first_use_then_a_change_is_refused_until_approved(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    with tb.Bench(pins=path) as bench:
        _, told = _caught(lambda: bench.connect("geo_precise", geo_precise.create()))
        assert told == []  # first sight: pinned quietly
        assert set(bench.catalog()["pin"]) == {"pinned"}
        before = bench.call("geo_precise-distance", from_city="London", to_city="Paris").data
    doc = json.loads(path.read_text())
    assert doc["version"] == 1
    assert set(doc["pins"]["geo_precise"]["tool"]) == {"bearing", "city", "distance"}

    with tb.Bench(pins=path) as bench:  # the server was updated meanwhile
        _, told = _caught(lambda: bench.connect("geo_precise", geo_precise_v2.create()))
        assert len(told) == 1
        warning = told[0].message
        assert isinstance(warning, tb.PinWarning)
        assert "1 pinned tool changed ('distance')" in str(warning)
        assert "parameter removed: unit; parameter added: units" in str(warning)
        assert set(warning.diff["field"]) == {"description", "input_schema"}
        catalog = bench.catalog().set_index("tool")
        assert catalog.loc["distance", "pin"] == "changed"
        assert catalog.loc["bearing", "pin"] == "pinned"
        with pytest.raises(tb.Refused, match="changed since it was pinned") as refused:
            bench.call("geo_precise-distance", from_city="London", to_city="Paris")
        assert refused.value.disposition == tb.Disposition.DID_NOT_HAPPEN
        record = bench.records.iloc[-1]
        assert record["disposition"] == "did_not_happen" and record["error_type"] == "Refused"
        compared = bench.compare("distance", from_city="London", to_city="Paris")
        assert compared["error_type"].tolist() == ["Refused"]  # a row, not raised
        assert bench.call("geo_precise-bearing", from_city="London", to_city="Paris").data
        assert bench.pins.set_index("name").loc["distance", "state"] == "changed"
        assert bench.approve("geo_precise-distance") == "geo_precise/distance"
        after = bench.call("geo_precise-distance", from_city="London", to_city="Paris").data
        assert after == before
        assert bench.catalog().set_index("tool").loc["distance", "pin"] == "pinned"

    with tb.Bench(pins=path) as bench:  # the approval was saved
        _, told = _caught(lambda: bench.connect("geo_precise", geo_precise_v2.create()))
        assert told == []
        bench.call("geo_precise-distance", from_city="London", to_city="Paris")


def test_added_and_removed_are_reported_not_blocked(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    first, second = tb.ToolBox(), tb.ToolBox()

    @first.tool(server="calc")
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @first.tool(server="calc")
    def sub(a: int, b: int) -> int:
        """Subtract."""
        return a - b

    second.add(add)

    @second.tool(server="calc")
    def mul(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    with tb.Bench(pins=path) as bench:
        bench.add(first)
    with tb.Bench(pins=path) as bench:
        _, told = _caught(lambda: bench.add(second))
        assert len(told) == 1
        text = str(told[0].message)
        assert "1 pinned tool removed: 'sub'" in text and "1 new tool (pinned now): 'mul'" in text
        assert bench.call("calc-mul", a=2, b=3).data == {"result": 6}
        assert bench.pins.set_index("name").loc["sub", "state"] == "removed"
    doc = json.loads(path.read_text())
    assert set(doc["pins"]["calc"]["tool"]) == {"add", "sub", "mul"}


def test_pin_pins_what_is_listed_now(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    with tb.Bench(pins=path) as bench:
        bench.connect("geo_precise", geo_precise.create())
    with tb.Bench(pins=path) as bench:
        _caught(lambda: bench.connect("geo_precise", geo_precise_v2.create()))
        assert bench.pin() == 3
        bench.call("geo_precise-distance", from_city="London", to_city="Paris")
    with tb.Bench() as bench:
        with pytest.raises(ValueError, match="no pins file"):
            bench.pin()
        bench.connect("g", geo_precise.create())
        with pytest.raises(ValueError, match="no pins file"):
            bench.approve("g-distance")


# -- a bad pins file ----------------------------------------------------------------------------
@pytest.mark.parametrize(("content", "message"), [
    (b"{not json", "is not valid JSON"),
    (b"\xff\xfe\x00garbage", "not UTF-8 text"),
    (b"[1, 2]", "is not a pins file"),
    (b'{"version": 99, "pins": {}}', "newer toolbench .pins version 99"),
    (b'{"version": "1", "pins": {}}', "a version is a whole number"),
    (b'{"version": 1, "pins": {"s": {"tool": {"t": {"nope": 1}}}}}', "no \"fingerprint\""),
    (b"[" * 100_000 + b"]" * 100_000, "(nested too deeply|not a pins file|not valid JSON)"),
])
def test_bad_pins_files_are_refused_clearly(tmp_path: Path, content: bytes, message: str,
                                            ) -> None:
    path = tmp_path / "pins.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        tb.Bench(pins=path, journal=tmp_path / "calls.sqlite")
    assert path.read_bytes() == content  # left untouched
    assert not (tmp_path / "calls.sqlite").exists()  # refused before the journal opened


def test_huge_symlinked_and_fifo_pins_files_are_refused(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real.json"
    real.write_text('{"version": 1, "pins": {}}')
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(ValueError, match="symbolic link"):
        tb.Bench(pins=link)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        tb.Bench(pins=fifo)  # refused at once, not blocked waiting for a writer
    monkeypatch.setattr(pins_mod, "MAX_PINS_BYTES", 10)
    with pytest.raises(ValueError, match="the most read is 10"):
        tb.Bench(pins=real)
    with pytest.raises(ValueError, match="does not exist"):
        tb.Bench(pins=tmp_path / "no" / "such" / "pins.json")


def test_a_symlink_is_never_replaced(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    pin_file = PinFile(path)
    target = tmp_path / "elsewhere.json"
    target.write_text("keep me")
    path.symlink_to(target)
    with pytest.raises(ValueError, match="symbolic link"):
        pin_file.save({("s", "tool", "t"): {"fingerprint": "f"}})
    assert target.read_text() == "keep me"
    pin_file.close()


def test_two_benches_pinning_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    files = [PinFile(path), PinFile(path)]
    errors: list[BaseException] = []

    def write(which: int) -> None:
        try:
            for i in range(40):
                files[which].save({(f"s{which}", "tool", f"t{i}"): {"fingerprint": str(i)}})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    pins = json.loads(path.read_text())["pins"]
    assert len(pins["s0"]["tool"]) == 40 and len(pins["s1"]["tool"]) == 40
    for f in files:
        f.close()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


_WRITER = """
import sys
from toolbench._bench.pins import PinFile
f = PinFile(sys.argv[1])
for i in range(60):
    f.save({(sys.argv[2], "tool", f"t{i}"): {"fingerprint": str(i)}})
f.close()
"""


@pytest.mark.slow
def test_two_processes_pinning_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    env = {**os.environ, **demo._python_path_env()}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"p{i}"], env=env)
             for i in range(3)]
    for p in procs:
        assert p.wait(60) == 0
    pins = json.loads(path.read_text())["pins"]
    assert {s: len(pins[s]["tool"]) for s in pins} == {"p0": 60, "p1": 60, "p2": 60}


@pytest.mark.slow
def test_a_restarted_stdio_server_is_refused_until_approved(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    env = demo._python_path_env()
    with tb.Bench(pins=path) as bench:
        bench.connect("geo_precise", [sys.executable, "-m", "toolbench.demo.geo_precise"],
                      env=env)
        bench.disconnect("geo_precise")
        _, told = _caught(lambda: bench.connect(
            "geo_precise", [sys.executable, "-m", "toolbench.demo.geo_precise_v2"], env=env))
        assert len(told) == 1 and "distance" in str(told[0].message)
        with pytest.raises(tb.Refused):
            bench.call("geo_precise-distance", from_city="London", to_city="Rome", units="km")
        bench.approve("geo_precise-distance")
        assert bench.call("geo_precise-distance", from_city="London", to_city="Rome",
                          units="km").data["result"] > 1000


def _resource_server(description: str) -> Any:
    from mcp.server.mcpserver import MCPServer

    srv = MCPServer("res")

    @srv.resource("note://a", name="a", description=description)
    def a() -> str:
        return "the note"

    @srv.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"

    return srv


def test_resources_are_pinned_when_listed_and_reported_not_blocked(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    with tb.Bench(pins=path) as bench:
        bench.connect("res", _resource_server("first"))
        _, told = _caught(lambda: bench.snapshot())
        assert told == []
    assert "note://a" in json.loads(path.read_text())["pins"]["res"]["resource"]
    with tb.Bench(pins=path) as bench:
        bench.connect("res", _resource_server("second"))
        _, told = _caught(lambda: bench.snapshot())
        assert len(told) == 1
        assert "1 pinned resource changed ('note://a')" in str(told[0].message)
        assert "refused" not in str(told[0].message)
        assert bench.read("res", "note://a").text == "the note"  # reads are not blocked
        assert bench.call("res-ping").text == "pong"
        state = bench.pins.set_index(["kind", "name"])["state"]
        assert state[("resource", "note://a")] == "changed"


def test_two_benches_pin_into_one_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    boxes = []
    for server in ("left", "right"):
        box = tb.ToolBox()
        for i in range(20):
            def fn(x: int) -> int:
                return x

            fn.__doc__ = f"tool {i} of {server}"
            box.add(tb.tool(server=server, name=f"t{i}")(fn))
        boxes.append(box)
    benches = [tb.Bench(pins=path), tb.Bench(pins=path)]
    start = threading.Barrier(2)

    def add(which: int) -> None:
        start.wait(10)
        benches[which].add(boxes[which])
        benches[which].pin()

    threads = [threading.Thread(target=add, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for bench in benches:
        bench.close()
    pins = json.loads(path.read_text())["pins"]
    assert {s: len(pins[s]["tool"]) for s in pins} == {"left": 20, "right": 20}
