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
from toolbench._bench.overtime import pins as pins_mod
from toolbench._bench.overtime.pins import PinFile
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
from toolbench._bench.overtime.pins import PinFile
f = PinFile(sys.argv[1])
for i in range(60):
    f.save({(sys.argv[2], "tool", f"t{i}"): {"fingerprint": str(i)}})
f.close()
"""


@pytest.mark.slow
def test_two_processes_pinning_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    env = {**os.environ, **demo.python_path_env()}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"p{i}"], env=env)
             for i in range(3)]
    for p in procs:
        assert p.wait(60) == 0
    pins = json.loads(path.read_text())["pins"]
    assert {s: len(pins[s]["tool"]) for s in pins} == {"p0": 60, "p1": 60, "p2": 60}


@pytest.mark.slow
def test_a_restarted_stdio_server_is_refused_until_approved(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    env = demo.python_path_env()
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

    @srv.resource("note://same", name="same", description="never changes")
    def same() -> str:
        return "the same note"

    @srv.resource("city://{name}", name="city", description=f"a city ({description})")
    def city(name: str) -> str:
        return f"city {name}"

    @srv.prompt(name="greet", description=f"greet ({description})")
    def greet(who: str) -> str:
        return f"Hello {who}"

    @srv.prompt(name="steady", description="never changes")
    def steady() -> str:
        return "steady"

    @srv.tool()
    def ping() -> str:
        """Answer pong."""
        return "pong"

    return srv


def test_changed_resources_templates_and_prompts_are_refused_until_approved(
        tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    with tb.Bench(pins=path) as bench:
        _, told = _caught(lambda: bench.connect("res", _resource_server("first")))
        assert told == []  # first sight, at connect: pinned quietly
        assert bench.read("res", "note://a").text == "the note"
    doc = json.loads(path.read_text())["pins"]["res"]
    assert set(doc["resource"]) == {"note://a", "note://same"}
    assert set(doc["resource_template"]) == {"city://{name}"}
    assert set(doc["prompt"]) == {"greet", "steady"}

    with tb.Bench(pins=path) as bench:  # the server changed meanwhile
        _, told = _caught(lambda: bench.connect("res", _resource_server("second")))
        text = "\n".join(str(w.message) for w in told)
        assert "1 pinned resource changed ('note://a'); reads of it are refused" in text
        assert "1 pinned resource template changed ('city://{name}')" in text
        assert "1 pinned prompt changed ('greet'); fetches of it are refused" in text
        with pytest.raises(tb.Refused, match=r"^not sent: resource res/note://a changed since "
                                             r"it was pinned \(description\); bench.approve") \
                as refused:
            bench.read("res", "note://a")
        assert refused.value.disposition == tb.Disposition.DID_NOT_HAPPEN
        record = bench.records.iloc[-1]
        assert (record["kind"], record["disposition"], record["error_type"]) == \
            ("resource", "did_not_happen", "Refused")
        with pytest.raises(tb.Refused, match=r"'city://paris' is read through resource "
                                             r"template res/city://\{name\} changed"):
            bench.read("res", "city://paris")
        with pytest.raises(tb.Refused, match="prompt res/greet changed since it was pinned"):
            bench.prompt("res-greet", who="Ada")
        assert bench.records.iloc[-1]["disposition"] == "did_not_happen"
        compared = bench.compare_read(["note://a", "note://same"])
        assert compared["error_type"].tolist() == ["Refused", None]  # rows, not raised
        assert bench.read("res", "note://same").text == "the same note"
        assert bench.prompt("res-steady").text
        assert bench.call("res-ping").text == "pong"
        state = bench.pins.set_index(["kind", "name"])["state"]
        assert state[("resource", "note://a")] == "changed"
        assert state[("resource", "note://same")] == "ok"
        assert bench.approve("note://a") == "res/note://a"
        assert bench.read("res", "note://a").text == "the note"
        assert bench.approve("res/city://{name}") == "res/city://{name}"
        assert bench.read("res", "city://paris").text == "city paris"
        with pytest.raises(tb.Refused):
            bench.prompt("res-greet", who="Ada")
        assert bench.approve("res-greet") == "res/greet"
        assert "Hello Ada" in bench.prompt("res-greet", who="Ada").text

    with tb.Bench(pins=path) as bench:  # the approvals were saved
        _, told = _caught(lambda: bench.connect("res", _resource_server("second")))
        assert told == []
        assert bench.read("res", "note://a").text == "the note"


def test_pin_approves_changed_resources_too(tmp_path: Path) -> None:
    path = tmp_path / "pins.json"
    with tb.Bench(pins=path) as bench:
        bench.connect("res", _resource_server("first"))
    with tb.Bench(pins=path) as bench:
        _caught(lambda: bench.connect("res", _resource_server("second")))
        assert bench.pin() == 1 + 2 + 1 + 2  # ping; two resources, a template, two prompts
        assert bench.read("res", "note://a").text == "the note"
        assert set(bench.pins["state"]) == {"ok"}


def test_a_template_refuses_only_the_uris_it_makes() -> None:
    from toolbench._bench.overtime.pins import changed_key, template_regex

    changes = {("s", "resource_template", "city://{name}"): None,
               ("s", "resource_template", "file:///{+path}"): None,
               ("s", "resource_template", "{a}{b}{c}{d}{e}{f}{g}{h}{i}{j}{k}{l}x"): None}
    assert changed_key(changes, "s", "resource", "city://paris") == (
        ("s", "resource_template", "city://{name}"), "city://paris")
    assert changed_key(changes, "s", "resource", "city://paris/louvre") is None
    assert changed_key(changes, "s", "resource", "file:///etc/a/b") is not None
    assert changed_key(changes, "other", "resource", "city://paris") is None
    assert changed_key(changes, "s", "prompt", "city://paris") is None
    assert changed_key(changes, "s", "resource", "a" * 100_000 + "y") is None  # linear time
    assert template_regex("x" * 5000) is None  # too long to match anything


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


def _wait_for(condition: Any, seconds: float = 20.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


@pytest.mark.slow
def test_a_restarted_stdio_server_with_a_changed_resource_and_prompt_is_refused(
        tmp_path: Path) -> None:
    import signal

    version = tmp_path / "version"
    version.write_text("1")
    server = Path(__file__).parent / "servers" / "changing_catalog_server.py"
    path = tmp_path / "pins.json"
    with tb.Bench(pins=path, timeout=20) as bench:
        bench.connect("ch", [sys.executable, str(server), str(version)])
        assert bench.read("ch", "note://a").text == "note a, version 1"
        assert "version 1" in bench.prompt("ch-greet", who="Ada").text
        pid = int(bench.call("ch-pid").text)
        version.write_text("2")
        os.kill(pid, signal.SIGKILL)
        assert _wait_for(lambda: bench.servers.set_index("name").loc["ch", "status"] == "lost")
        with warnings.catch_warnings():  # the PinWarning comes from the re-list, on the loop
            warnings.simplefilter("ignore", tb.PinWarning)
            bench.call("ch-pid")  # the next call reconnects; the reconnect re-lists all
            assert _wait_for(lambda: (bench.pins["state"] == "changed").sum() == 3), bench.pins
        state = bench.pins.set_index(["kind", "name"])["state"]
        assert state[("resource", "note://a")] == "changed"
        assert state[("resource_template", "city://{name}")] == "changed"
        assert state[("prompt", "greet")] == "changed"
        assert state[("resource", "note://same")] == "ok"
        with pytest.raises(tb.Refused, match="resource ch/note://a changed since it was "
                                             "pinned"):
            bench.read("ch", "note://a")
        with pytest.raises(tb.Refused, match=r"resource template ch/city://\{name\} changed"):
            bench.read("ch", "city://lima")
        with pytest.raises(tb.Refused, match="prompt ch/greet changed since it was pinned"):
            bench.prompt("ch-greet", who="Ada")
        refused = bench.records[bench.records["error_type"] == "Refused"]
        assert set(refused["disposition"]) == {"did_not_happen"} and len(refused) == 3
        assert bench.read("ch", "note://same").text == "the same note"
        bench.approve("note://a")
        bench.approve("ch-greet")
        assert bench.read("ch", "note://a").text == "note a, version 2"
        assert "version 2" in bench.prompt("ch-greet", who="Ada").text
