"""tb.serve_recording: a journal served back as an MCP server (in process, stdio, streamable
HTTP), answering recorded argument sets only; hostile or malformed recordings stay safe."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import everything

import toolbench as tb
from toolbench import demo
from toolbench._bench.replay import recording as recording_mod
from toolbench._bench.replay.kinds import MAX_REPLAYED_BYTES
from toolbench.demo import geo

CASES = [{"from_city": "London", "to_city": c} for c in ("Paris", "Tokyo")]


def _record_geo(path: Path) -> None:
    with tb.Bench(journal=path) as bench:
        bench.connect("geo", geo.create())
        bench.map("geo-distance", CASES, progress=False)
        bench.call("geo-city", name="Paris")


def test_in_process_answers_recorded_arguments_only(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    _record_geo(path)
    with tb.Bench() as bench:
        bench.connect("geo", geo.create())
        bench.connect("rec", tb.serve_recording(path))
        rec, real = bench.catalog("rec"), bench.catalog("geo")
        assert list(rec["tool"]) == list(real["tool"])  # the recorded catalog, all of it
        assert list(rec["description"]) == list(real["description"])
        assert rec["input_schema"].tolist() == real["input_schema"].tolist()
        for case in CASES:
            assert (bench.call("rec-distance", case).data
                    == bench.call("geo-distance", case).data)
        with pytest.raises(tb.Refused, match="not recorded: distance was never called with") \
                as refused:
            bench.call("rec-distance", from_city="Paris", to_city="Rome")
        assert "2 recorded argument sets" in str(refused.value)
        with pytest.raises(tb.Refused, match="not recorded"):
            bench.call("rec-cities")  # listed, never called
        # the 02 comparison, from the recording
        df = bench.compare("distance", CASES, servers=["rec", "geo"])
        assert df.tb.summary()["agrees_with_majority"].tolist() == [1.0, 1.0]


def test_several_servers_need_a_choice(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.connect("a", geo.create())
        bench.connect("b", geo.create())
        bench.call("a-city", name="Paris")
    with pytest.raises(ValueError, match=r"records 2 servers \(a, b\); pick one"):
        tb.serve_recording(path)
    with pytest.raises(ValueError, match="no recording of server 'c'"):
        tb.serve_recording(path, server="c")
    assert tb.serve_recording(path, server="b") is not None


def test_bad_journals_are_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"\x00" * 3000 + b"not sqlite")
    with pytest.raises(ValueError, match="not a toolbench journal"):
        tb.serve_recording(garbage)
    real = tmp_path / "real.sqlite"
    _record_geo(real)
    link = tmp_path / "link.sqlite"
    link.symlink_to(real)
    with pytest.raises(ValueError, match="symbolic link"):
        tb.serve_recording(link)
    db = sqlite3.connect(real)
    db.execute("PRAGMA user_version = 42")
    db.commit()
    db.close()
    with pytest.raises(ValueError, match="newer toolbench"):
        tb.serve_recording(real)


def _hostile_journal(path: Path) -> None:
    box = tb.ToolBox()

    @box.tool(server="evil")
    def say(what: str) -> str:
        """Say something."""
        return what

    with tb.Bench(journal=path) as bench:
        bench.add(box)
        for what in ("markup", "binary", "huge", "malformed", "damaged"):
            bench.call("evil-say", what=what)
    db = sqlite3.connect(path)

    def put(what: str, text: str, content: str) -> None:
        db.execute("UPDATE calls SET text = ?, content = ? WHERE arguments = ?",
                   (text, content, json.dumps({"what": what})))

    markup = "<script>alert('x')</script><img src=x onerror=alert(1)>"
    put("markup", markup, json.dumps([{"type": "text", "text": markup}]))
    binary = "\x00\x01\x07\x1b[31m\ufffe\udc80"
    put("binary", binary[:-1], json.dumps([{"type": "text", "text": binary}]))
    huge = "x" * 50_000_000
    put("huge", huge, json.dumps([{"type": "text", "text": huge}]))
    put("malformed", "", json.dumps([{"type": "image", "mimeType": "image/png"}]))
    put("damaged", "", '"not a list of blocks"')
    db.commit()
    db.close()


def test_hostile_and_malformed_recordings(tmp_path: Path) -> None:
    path = tmp_path / "evil.sqlite"
    _hostile_journal(path)
    with pytest.warns(tb.JournalWarning, match="skipped 1 damaged row"):
        server = tb.serve_recording(path)
    with tb.Bench() as bench:
        bench.connect("rec", server)
        markup = bench.call("rec-say", what="markup")
        assert markup.text.startswith("<script>")  # the recorded data, as recorded
        html = tb.show(markup)._repr_mimebundle_()["text/html"]
        assert "<script>alert" not in html and "&lt;script&gt;" in html
        binary = bench.call("rec-say", what="binary")
        assert binary.text.startswith("\x00\x01\x07")
        with pytest.raises(tb.ToolFailed, match=r"recorded result is 50,000,\d+ bytes, over"):
            bench.call("rec-say", what="huge")
        with pytest.raises(tb.ToolFailed, match="not a valid tool result"):
            bench.call("rec-say", what="malformed")
        with pytest.raises(tb.Refused, match="not recorded"):  # its row could not be read
            bench.call("rec-say", what="damaged")
        assert bench.records["error_type"].tolist()[-3:] == ["ToolFailed", "ToolFailed",
                                                             "Refused"]


# -- over stdio and HTTP, as a separate process ----------------------------------------------------
def _env() -> dict[str, str]:
    return demo.python_path_env()


@pytest.mark.slow
def test_cli_serves_a_recording_over_stdio(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    _record_geo(path)
    with tb.Bench() as bench:
        bench.connect("rec", [sys.executable, "-m", "toolbench", "serve-recording", str(path)],
                      env=_env())
        assert bench.call("rec-distance", CASES[0]).data["result"] > 300
        with pytest.raises(tb.Refused, match="not recorded"):
            bench.call("rec-distance", from_city="Rome", to_city="Oslo")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _http(path: Path) -> Iterator[str]:
    port = _port()
    log = path.with_suffix(".log")
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "toolbench", "serve-recording",
                                 str(path), "--http", str(port)],
                                env={**os.environ, **_env()}, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.slow
def test_cli_serves_a_recording_over_http(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    _record_geo(path)
    with _http(path) as url, tb.Bench() as bench:
        bench.connect("rec", url)
        assert bench.call("rec-city", name="Paris").data == bench.records.iloc[-1]["structured"]


@pytest.mark.slow
def test_cli_refuses_a_bad_journal(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_text("{}")
    run = subprocess.run([sys.executable, "-m", "toolbench", "serve-recording", str(bad)],
                         env={**os.environ, **_env()}, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2
    assert "not a toolbench journal" in run.stderr


_why_not = everything.node_missing()


@pytest.mark.slow
@pytest.mark.skipif(_why_not is not None, reason=f"server-everything needs Node.js: {_why_not}")
def test_server_everything_recorded_and_served_back_offline(tmp_path: Path) -> None:
    path = tmp_path / "everything.sqlite"
    asked = [("everything-echo", {"message": "hello <b>world</b>"}),
             ("everything-get-sum", {"a": 2, "b": 40}),
             ("everything-get-structured-content", {"location": "New York"}),
             ("everything-get-tiny-image", {})]
    with tb.Bench(journal=path, timeout=30, connect_timeout=60) as live:
        live.connect("everything", everything.stdio_command())
        originals = [live.call(name, args) for name, args in asked]
        live_catalog = live.catalog()
        live_resources, live_prompts = live.resources(), live.prompts()
        live_templates = live.resource_templates()
        features = next(u for u in live_resources["uri"] if u.endswith("/features.md"))
        read = live.read("everything", features)
        transcript = live.prompt("everything-args-prompt", {"city": "Paris"})
    with tb.Bench() as offline:
        offline.connect("everything", [sys.executable, "-m", "toolbench", "serve-recording",
                                       str(path)], env=_env())
        assert offline.servers.iloc[0]["server_name"] == "recording of everything"
        catalog = offline.catalog()
        assert list(catalog["name"]) == list(live_catalog["name"])
        assert list(catalog["description"]) == list(live_catalog["description"])
        for (name, args), original in zip(asked, originals, strict=True):
            again = offline.call(name, args)
            assert again.content == original.content
            assert again.structured == original.structured
        with pytest.raises(tb.Refused, match="not recorded"):
            offline.call("everything-echo", message="something new")
        # its resources, templates and prompts, as listed, and what was read and fetched
        assert offline.resources()["uri"].tolist() == live_resources["uri"].tolist()
        assert offline.resource_templates()["uri"].tolist() == live_templates["uri"].tolist()
        assert offline.prompts()["name"].tolist() == live_prompts["name"].tolist()
        again = offline.read("everything", features)
        assert again.contents == read.contents and "features" in again.text.lower()
        fetched = offline.prompt("everything-args-prompt", {"city": "Paris"})
        assert fetched.messages == transcript.messages
        with pytest.raises(tb.Refused, match=r"not recorded: resource .* was never read"):
            offline.read("everything", live_resources["uri"].iloc[0]
                         if live_resources["uri"].iloc[0] != features
                         else live_resources["uri"].iloc[1])
        with pytest.raises(tb.Refused, match="not recorded: prompt args-prompt was never "
                                             "fetched"):
            offline.prompt("everything-args-prompt", {"city": "Lima"})
        replayed = offline.replay(path, against="everything", progress=False)
        assert not replayed["changed"].any()
        assert MAX_REPLAYED_BYTES > 0


def test_resources_and_prompts_are_recorded_and_served_back(tmp_path: Path) -> None:
    from toolbench.demo import beyond

    path = tmp_path / "beyond.sqlite"
    with tb.Bench(journal=path) as live:
        live.connect("beyond", beyond.create())
        read = live.read("beyond", "beyond://cities.json")
        city = live.read("beyond", "city://paris")  # through the template
        blob = live.read("beyond", "beyond://bytes.bin")
        welcome = live.prompt("beyond-welcome")
        plan = live.prompt("beyond-plan_trip", from_city="Paris", to_city="Lima")
        resources, templates = live.resources(), live.resource_templates()
        prompts = live.prompts()
    with tb.Bench() as offline:
        offline.connect("beyond", tb.serve_recording(path))
        assert offline.resources()["uri"].tolist() == resources["uri"].tolist()
        assert offline.resources()["description"].tolist() == \
            resources["description"].tolist()
        assert offline.resource_templates()["uri"].tolist() == templates["uri"].tolist()
        assert offline.prompts()[["name", "description", "arguments"]].equals(
            prompts[["name", "description", "arguments"]])
        assert offline.read("beyond", "beyond://cities.json").data == read.data
        assert offline.read("beyond", "city://paris").text == city.text
        assert offline.read("beyond", "beyond://bytes.bin").blob() == blob.blob()
        assert offline.prompt("beyond-welcome").messages == welcome.messages
        again = offline.prompt("beyond-plan_trip", from_city="Paris", to_city="Lima")
        assert again.messages == plan.messages and again.text == plan.text
        with pytest.raises(tb.Refused, match=r"not recorded: resource 'beyond://readme' was "
                                             r"never read .it holds 3 recorded reads"):
            offline.read("beyond", "beyond://readme")  # listed, never read
        with pytest.raises(tb.Refused, match=r"not recorded: prompt plan_trip was never "
                                             r"fetched with .* 1 recorded argument sets"):
            offline.prompt("beyond-plan_trip", from_city="Lima", to_city="Paris")


def test_a_tools_only_recording_offers_no_resources(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    _record_geo(path)
    with tb.Bench() as bench:
        bench.connect("rec", tb.serve_recording(path))
        with pytest.raises(tb.Refused, match="does not offer resources"):
            bench.resources("rec")
        assert recording_mod.describe(recording_mod.read_recording(path))["reads"] == 0


def test_hostile_recorded_reads_are_refused_not_served(tmp_path: Path) -> None:
    from toolbench.demo import beyond

    path = tmp_path / "beyond.sqlite"
    with tb.Bench(journal=path) as live:
        live.connect("beyond", beyond.create())
        live.read("beyond", "beyond://readme")
        live.prompt("beyond-welcome")
    db = sqlite3.connect(path)
    db.execute("UPDATE calls SET content = ? WHERE kind = 'resource'",
               (json.dumps([{"type": "resource", "resource": {"no": "uri"}}]),))
    db.execute("UPDATE calls SET content = ? WHERE kind = 'prompt'",
               (json.dumps([{"role": "user", "content": {"type": "text",
                                                         "text": "<script>x</script>"}}]),))
    db.commit()
    db.close()
    with tb.Bench() as offline:
        offline.connect("beyond", tb.serve_recording(path))
        with pytest.raises(tb.Refused, match="the recorded read of 'beyond://readme' in the "
                                             "recording of 'beyond' is not valid"):
            offline.read("beyond", "beyond://readme")
        shown = offline.prompt("beyond-welcome")  # markup comes back as recorded: data
        assert shown.text is not None and "<script>x</script>" in shown.text
        assert "&lt;script&gt;" in shown._repr_html_()
