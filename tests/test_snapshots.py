"""Catalog snapshots: fingerprints computed at listing, stored in the journal on connect and
re-list (off the loop), read back by time; and every bad snapshot file refused clearly."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench import demo
from toolbench._bench.overtime import snapshot_store
from toolbench._bench.overtime.snapshots import (
    SNAPSHOT_COLUMNS,
    canonical_json,
    fingerprint,
    item_from_row,
    item_from_spec,
    snapshot_frame,
)
from toolbench._core.client import ToolSpec
from toolbench._loop import get_loop
from toolbench.demo import geo, geo_precise, geo_precise_v2


def test_snapshot_has_one_fingerprinted_row_per_tool() -> None:
    with tb.Bench() as bench:
        bench.connect("geo", geo.create())
        bench.connect("geo_precise", geo_precise.create())
        snap = bench.snapshot()
        catalog = bench.catalog()
    assert list(snap.columns) == list(SNAPSHOT_COLUMNS)
    assert sorted(zip(snap["server"], snap["name"], strict=True)) == sorted(
        zip(catalog["server"], catalog["tool"], strict=True))
    assert set(snap["kind"]) == {"tool"}  # the demo servers offer no resources or prompts
    row = snap[(snap["server"] == "geo") & (snap["name"] == "distance")].iloc[0]
    spec = catalog[catalog["name"] == "geo-distance"].iloc[0]
    payload = {"kind": "tool", "name": "distance", "title": spec["title"],
               "description": spec["description"], "input_schema": spec["input_schema"],
               "output_schema": spec["output_schema"], "annotations": spec["annotations"]}
    expected = hashlib.sha256(canonical_json(payload).encode()).hexdigest()
    assert row["fingerprint"] == expected
    # geo's and geo_precise's ``city`` are the same tool: the same fingerprint
    city = snap[snap["name"] == "city"]
    assert city["fingerprint"].nunique() == 1
    assert snap[snap["name"] == "distance"]["fingerprint"].nunique() == 2


def test_fingerprint_changes_with_every_declared_field() -> None:
    base = {"kind": "tool", "name": "t", "title": "T", "description": "d",
            "input_schema": {"type": "object"}, "output_schema": None, "annotations": None}
    seen = {fingerprint(base)}
    for field, value in (("name", "u"), ("title", "T2"), ("description", "d "),
                         ("input_schema", {"type": "object", "properties": {}}),
                         ("output_schema", {"type": "object"}),
                         ("annotations", {"readOnlyHint": True})):
        seen.add(fingerprint({**base, field: value}))
    assert len(seen) == 7
    assert fingerprint(dict(reversed(list(base.items())))) == fingerprint(base)  # key order


def test_snapshots_with_resources_and_prompts() -> None:
    from toolbench.demo import beyond

    with tb.Bench() as bench:
        bench.connect("beyond", beyond.create())
        snap = bench.snapshot("beyond")
    kinds = set(snap["kind"])
    assert {"tool", "resource", "resource_template", "prompt"} <= kinds
    res = snap[snap["kind"] == "resource"].iloc[0]
    assert res["name"] == res["uri"]
    assert all(len(f) == 64 for f in snap["fingerprint"])


def test_journal_stores_a_snapshot_per_connect_and_relist(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.connect("geo_precise", geo_precise.create())
        time.sleep(0.05)
        between = datetime.now(UTC)
        time.sleep(0.05)
        bench.disconnect("geo_precise")
        bench.connect("geo_precise", geo_precise_v2.create())  # a restart, changed
        get_loop().run(bench.pegboard.refresh, "geo_precise")  # a re-list
        bench.call("geo_precise-distance", from_city="London", to_city="Paris")
    db = sqlite3.connect(path)
    causes = [c for (c,) in db.execute("SELECT cause FROM snapshots WHERE kind = 'tool' "
                                       "ORDER BY seq")]
    others = sorted(db.execute("SELECT kind, cause FROM snapshots WHERE kind != 'tool'"))
    db.close()
    assert causes == ["connect", "connect", "relist"]
    # Each connect lists the other kinds too (with a journal); a tool re-list does not.
    assert others == sorted([(k, "connect") for k in ("prompt", "resource",
                                                      "resource_template")] * 2)
    latest = tb.load_snapshot(path)
    old = tb.load_snapshot(path, when=between)
    old_iso = tb.load_snapshot(path, when=between.isoformat())
    assert list(old["fingerprint"]) == list(old_iso["fingerprint"])
    new_distance = latest[latest["name"] == "distance"].iloc[0]
    old_distance = old[old["name"] == "distance"].iloc[0]
    assert "units" in new_distance["input_schema"]["properties"]
    assert "unit" in old_distance["input_schema"]["properties"]
    with pytest.raises(ValueError, match="not an ISO 8601"):
        tb.load_snapshot(path, when="last tuesday")
    # the journal itself is as readable as before: its record loads back
    with tb.Bench(journal=path) as again:
        assert len(again.records) == 1


def test_snapshot_writes_never_run_on_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               ) -> None:
    threads: list[str] = []
    real = snapshot_store.SnapshotWriter._write

    def spy(self: snapshot_store.SnapshotWriter, *args: object) -> None:
        import threading

        threads.append(threading.current_thread().name)
        real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot_store.SnapshotWriter, "_write", spy)
    with tb.Bench(journal=tmp_path / "j.sqlite") as bench:
        bench.connect("geo", geo.create())
    assert threads and all(t.startswith("toolbench-snapshots") for t in threads)


# -- bad snapshot files -------------------------------------------------------------------------
@pytest.fixture
def journal(tmp_path: Path) -> Path:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.connect("geo", geo.create())
    return path


def test_symlink_is_refused(journal: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.sqlite"
    link.symlink_to(journal)
    with pytest.raises(ValueError, match="symbolic link"):
        tb.load_snapshot(link)


def test_fifo_and_folder_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        tb.load_snapshot(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        tb.load_snapshot(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        tb.load_snapshot(tmp_path / "missing.sqlite")


def test_corrupt_and_foreign_files_are_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(os.urandom(5000))
    with pytest.raises(ValueError, match="not a toolbench journal"):
        tb.load_snapshot(garbage)
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.close()
    with pytest.raises(ValueError, match="not a toolbench journal"):
        tb.load_snapshot(other)


def test_journal_without_snapshots(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path):
        pass
    with pytest.raises(ValueError, match="holds no catalog snapshots"):
        tb.load_snapshot(path)


def test_newer_versions_are_refused(journal: Path) -> None:
    db = sqlite3.connect(journal)
    db.execute("UPDATE snapshots SET format = 99")
    db.commit()
    db.close()
    with pytest.raises(ValueError, match="format 99, written by a newer toolbench"):
        tb.load_snapshot(journal)
    db = sqlite3.connect(journal)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    with pytest.raises(ValueError, match="newer toolbench"):
        tb.load_snapshot(journal)


def test_huge_snapshot_is_refused(journal: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshot_store, "MAX_ITEMS_BYTES", 100)
    with pytest.raises(ValueError, match="the most read back is 100"):
        tb.load_snapshot(journal)


def test_damaged_rows_are_skipped_and_counted(journal: Path) -> None:
    db = sqlite3.connect(journal)
    db.execute("INSERT INTO snapshots (taken, server, kind, cause, format, items) "
               "VALUES (?, 'broken', 'tool', 'connect', 1, '[{not json')",
               (datetime.now(UTC).isoformat(),))
    db.execute("INSERT INTO snapshots (taken, server, kind, cause, format, items) "
               "VALUES ('yesterday-ish', 'bad', 'tool', 'connect', 1, '[]')")
    db.commit()
    db.close()
    with pytest.warns(tb.JournalWarning, match="skipped 2 damaged snapshot rows"):
        snap = tb.load_snapshot(journal)
    assert set(snap["server"]) == {"geo"}


def test_a_failing_snapshot_write_warns_and_loses_no_record(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            ) -> None:
    def broken(self: object, *args: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(snapshot_store.SnapshotWriter, "_write", broken)
    path = tmp_path / "j.sqlite"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tb.Bench(journal=path) as bench:
            bench.connect("geo", geo.create())
            bench.call("geo-distance", from_city="London", to_city="Paris")
    told = [str(w.message) for w in caught if issubclass(w.category, tb.JournalWarning)]
    assert any("snapshot could not be stored" in t and "disk I/O error" in t for t in told)
    with tb.Bench(journal=path) as again:
        assert len(again.records) == 1


@pytest.mark.slow
def test_a_restarted_stdio_server_is_a_new_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    env = demo.python_path_env()
    with tb.Bench(journal=path) as bench:
        bench.connect("geo_precise", [sys.executable, "-m", "toolbench.demo.geo_precise"],
                      env=env)
        before = bench.snapshot("geo_precise")
        bench.disconnect("geo_precise")
        bench.connect("geo_precise", [sys.executable, "-m", "toolbench.demo.geo_precise_v2"],
                      env=env)
        after = bench.snapshot("geo_precise")
    changes = tb.diff(before, after)
    assert sorted(changes["field"]) == ["description", "input_schema"]
    assert "parameter removed: unit; parameter added: units" in set(changes["detail"])
    stored = tb.load_snapshot(path)
    assert json.dumps(stored[stored["name"] == "distance"].iloc[0]["input_schema"]).count(
        "units") == 1


def test_a_connect_stores_every_kind_in_the_journal(tmp_path: Path) -> None:
    from toolbench.demo import beyond

    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.connect("beyond", beyond.create())
        live = bench.snapshot("beyond")
    stored = tb.load_snapshot(path)  # what the connect stored (and snapshot() again)
    assert set(stored["kind"]) == {"tool", "resource", "resource_template", "prompt"}
    assert sorted(zip(stored["kind"], stored["name"], stored["fingerprint"], strict=True)) \
        == sorted(zip(live["kind"], live["name"], live["fingerprint"], strict=True))
    db = sqlite3.connect(path)
    rows = db.execute("SELECT kind, cause, items FROM snapshots WHERE cause = 'connect'")
    at_connect = {kind: len(json.loads(items)) for kind, _, items in rows}
    db.close()
    assert set(at_connect) == {"tool", "resource", "resource_template", "prompt"}
    assert at_connect["prompt"] == len(live[live["kind"] == "prompt"]) >= 2
    assert at_connect["resource"] == len(live[live["kind"] == "resource"]) >= 4


def test_without_journal_or_pins_a_connect_lists_tools_only() -> None:
    from toolbench.demo import beyond

    with tb.Bench() as bench:
        bench.connect("beyond", beyond.create())
        assert bench.history.kinds.idle()


@pytest.mark.slow
def test_a_reconnect_stores_every_kind_as_it_came_back(tmp_path: Path) -> None:
    import signal

    version = tmp_path / "version"
    version.write_text("1")
    server = Path(__file__).parent / "servers" / "changing_catalog_server.py"
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path, timeout=20) as bench:
        bench.connect("ch", [sys.executable, str(server), str(version)])
        pid = int(bench.call("ch-pid").text)
        between = datetime.now(UTC)
        version.write_text("2")
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while bench.servers.set_index("name").loc["ch", "status"] != "lost":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        bench.call("ch-pid")  # reconnects; the reconnect re-lists every kind
        while _taken(bench, "ch", "prompt") < between:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    db = sqlite3.connect(path)
    causes = sorted(db.execute("SELECT kind, cause FROM snapshots"))
    db.close()
    kinds = ("prompt", "resource", "resource_template", "tool")
    assert causes == sorted([(k, c) for k in kinds for c in ("connect", "relist")])
    old, new = tb.load_snapshot(path, when=between), tb.load_snapshot(path)
    for snap, v in ((old, "1"), (new, "2")):
        described = dict(zip(snap["name"], snap["description"], strict=True))
        assert described["note://a"] == f"a note (version {v})"
        assert described["city://{name}"] == f"a city (version {v})"
        assert described["greet"] == f"greet someone (version {v})"
    changes = tb.diff(old, new)
    assert sorted(zip(changes["change"], changes["kind"], changes["name"], strict=True)) == [
        ("changed", "prompt", "greet"), ("changed", "resource", "note://a"),
        ("changed", "resource_template", "city://{name}")]


def _taken(bench: tb.Bench, server: str, kind: str) -> datetime:
    """When ``kind`` of ``server`` was last listed (it was listed at connect)."""
    found = bench.history.kind_listing(server, kind)
    assert found is not None, f"{kind} of {server} was never listed"
    return found[0]


# -- execution and _meta.ui are fingerprinted (issue 33) ------------------------------------
def _spec(**extra: Any) -> ToolSpec:
    return ToolSpec("distance", "How far.", {"type": "object", "properties": {
        "a": {"type": "number"}}}, None, {"readOnlyHint": True}, "Distance", **extra)


def test_fingerprint_covers_execution_and_meta_ui() -> None:
    plain = item_from_spec(_spec())["fingerprint"]
    seen = {plain}
    for extra in ({"execution": {"taskSupport": "optional"}},
                  {"execution": {"taskSupport": "required"}},
                  {"meta": {"ui": {"resourceUri": "ui://a/view"}}},
                  {"meta": {"ui": {"resourceUri": "ui://b/view"}}},
                  {"meta": {"ui": {"resourceUri": "ui://a/view", "visibility": ["app"]}}},
                  {"meta": {"ui/resourceUri": "ui://a/view"}}):
        item = item_from_spec(_spec(**extra))
        seen.add(item["fingerprint"])
    assert len(seen) == 7
    # the rest of _meta is not what a model or a user relies on: it does not count
    other = item_from_spec(_spec(meta={"progressToken": 1, "note": "x"}))
    assert other["fingerprint"] == plain
    item = item_from_spec(_spec(execution={"taskSupport": "required"},
                                meta={"ui": {"resourceUri": "ui://a/view"}, "x": 1}))
    assert item["execution"] == {"taskSupport": "required"}
    assert item["ui"] == {"ui": {"resourceUri": "ui://a/view"}}


def test_fingerprints_of_items_without_them_are_unchanged() -> None:
    """Pins made before execution and _meta.ui counted stay valid for items without them."""
    assert item_from_spec(_spec())["fingerprint"] == (
        "734dc96cea5b034ec16c1a0541cbdb9efdfbb01ad6a3a22d0a38e8ac101405d8")
    assert item_from_spec(_spec(execution={"taskSupport": "forbidden"}, meta={"other": 1}),
                          )["fingerprint"] == (
        "734dc96cea5b034ec16c1a0541cbdb9efdfbb01ad6a3a22d0a38e8ac101405d8")
    assert item_from_row("resource", {"uri": "note://a", "name": "a", "title": "A",
                                      "description": "d", "mime_type": "text/plain"},
                         )["fingerprint"] == (
        "a332a06c5b68d08fbd9525499bf872235a2899694f446a32c068fae0becb68af")
    assert item_from_row("prompt", {"prompt": "greet", "description": "d",
                                    "arguments": [{"name": "who"}]})["fingerprint"] == (
        "631bd739df83796c1017ef55bf62e1c61316362dcb2863246138a8941f0db6f9")


def test_a_change_of_execution_or_ui_is_a_diff_row() -> None:
    now = datetime.now(UTC)
    old = item_from_spec(_spec(execution={"taskSupport": "optional"}))
    new = item_from_spec(_spec(execution={"taskSupport": "required"},
                               meta={"ui": {"resourceUri": "ui://a/view"}}))
    changed = tb.diff(snapshot_frame([("s", now, old)]), snapshot_frame([("s", now, new)]))
    assert set(changed["field"]) == {"execution", "ui"}


def test_a_pin_from_before_execution_and_ui_counted_is_told_apart() -> None:
    from toolbench._bench.overtime.snapshots import pinned_before_execution_and_ui

    new = item_from_spec(_spec(execution={"taskSupport": "optional"},
                               meta={"ui": {"resourceUri": "ui://a/view"}}))
    old_item = {k: v for k, v in new.items() if k not in ("execution", "ui", "fingerprint")}
    old_pin = {"fingerprint": fingerprint(old_item), "item": {**old_item}}
    assert old_pin["fingerprint"] != new["fingerprint"]  # it looks changed...
    assert pinned_before_execution_and_ui(old_pin, new)  # ...but only the new fields count
    reworded = {**old_pin, "fingerprint": fingerprint({**old_item, "description": "Far."})}
    assert not pinned_before_execution_and_ui(reworded, new)  # a real change stays one
    current = {"fingerprint": "x", "item": dict(new)}  # a pin made now holds the keys
    assert not pinned_before_execution_and_ui(current, new)
    assert not pinned_before_execution_and_ui({"fingerprint": "x"}, new)  # no item kept


def test_a_pin_from_before_the_view_html_counted_is_told_apart() -> None:
    from toolbench._bench.overtime.snapshots import pinned_before_view_hash

    spec = _spec(meta={"ui": {"resourceUri": "ui://a/view"}})
    old = item_from_spec(spec)  # as a toolbench without view hashes made it
    new = item_from_spec(spec, view={"sha256": "ab" * 32})
    assert new["ui"]["view"] == {"sha256": "ab" * 32}
    assert old["fingerprint"] != new["fingerprint"]  # it looks changed...
    assert pinned_before_view_hash({"fingerprint": old["fingerprint"]}, new)  # ...it is not
    other = item_from_spec(spec, view={"error": "resources/read failed: TimedOut"})
    assert other["fingerprint"] != new["fingerprint"]  # an unreadable view is a change
    assert not pinned_before_view_hash({"fingerprint": new["fingerprint"]}, other)
    reworded = {**old, "description": "Far."}
    reworded["fingerprint"] = fingerprint(reworded)
    assert not pinned_before_view_hash({"fingerprint": reworded["fingerprint"]}, new)
    assert not pinned_before_view_hash({"fingerprint": old["fingerprint"]}, old)  # no view
    plain = item_from_spec(_spec(), view={"sha256": "ab" * 32})  # no view declared: no state
    assert plain["ui"] is None and plain["fingerprint"] == item_from_spec(_spec())["fingerprint"]
