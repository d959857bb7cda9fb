"""The intent log: what reopening reads from a dead session's file, and what it leaves alone."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench._bench.journal import intent_log
from toolbench._bench.journal.intent_log import IntentLog, dead_logs, intent_line, started_text


def test_a_line_round_trips_any_value_as_ascii(tmp_path: Path) -> None:
    started = datetime(2026, 12, 3, 9, 8, 7, 654321, tzinfo=UTC)
    cycle: list[object] = []
    cycle.append(cycle)
    line = intent_line("id1", "b1", started, "s", "t", "s-t",
                       {"text": 'quote " newline \n é \udc80', "when": started}, {"cycle": cycle})
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and line.isascii()
    row = json.loads(line)
    assert row[:2] == ["id1", "b1"] and started_text(row[2]) == started.isoformat()
    assert row[6]["text"] == 'quote " newline \n é \udc80'  # a lone surrogate survives too
    assert row[6]["when"] == str(started)  # not JSON: kept as its text
    assert "_unencodable" in row[7]  # a cycle cannot be written; it is not lost either


def test_only_dead_sessions_files_with_a_toolbench_header_are_read(tmp_path: Path) -> None:
    journal = str(tmp_path / "calls.sqlite")
    live = IntentLog(journal, "live-session", os.getpid(), None)
    assert live.append(intent_line("in-flight", None, datetime.now(UTC), "s", "t", "s-t",
                                   {}, None))
    foreign = [b"[1, 2]", b'"text"', b"\xff\xfe",
               b'{"toolbench_intents": 1, "pid": 999999, "proc": null, "session": [1]}',
               b'{"toolbench_intents": 2, "pid": 999999, "proc": null, "session": "s"}']
    for i, header in enumerate(foreign):
        Path(f"{journal}-intents-foreign{i}").write_bytes(header + b"\n")
    ok = intent_line("lost", None, datetime.now(UTC), "s", "t", "s-t", {"n": 1}, None)
    Path(f"{journal}-intents-dead").write_bytes(
        b'{"toolbench_intents": 1, "pid": 999999, "proc": null, "session": "dead"}\n'
        + ok + b"not json\n" + b'["torn by a full disk"')
    found = dead_logs(journal, {"live-session"})
    assert [Path(log.path).name for log in found] == ["calls.sqlite-intents-dead"]
    assert [row[0] for row in found[0].rows] == ["lost"] and found[0].damaged == 1
    # This pid, but a session that is not live (a journal of this process closed uncleanly).
    assert live.path in [log.path for log in dead_logs(journal, set())]
    live.close(remove=True)
    assert not Path(live.path).exists()
    assert len(list(tmp_path.iterdir())) == len(foreign) + 1  # nothing else was touched


HEADER = b'{"toolbench_intents": 1, "pid": 999999, "proc": null, "session": "dead"}\n'


def test_a_fifo_a_device_or_a_link_is_not_read(tmp_path: Path) -> None:
    journal = str(tmp_path / "calls.sqlite")
    os.mkfifo(f"{journal}-intents-fifo")  # opening it blocking would hang for good
    os.symlink("/dev/zero", f"{journal}-intents-zero")  # reading it whole would never end
    target = tmp_path / "elsewhere"
    target.write_bytes(HEADER)
    os.symlink(target, f"{journal}-intents-link")
    assert dead_logs(journal, set()) == []


def test_a_huge_file_is_read_up_to_the_cap(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(intent_log, "MAX_READ_BYTES", 4096)
    journal = str(tmp_path / "calls.sqlite")
    line = intent_line("x", None, datetime.now(UTC), "s", "t", "s-t", {}, None)
    Path(f"{journal}-intents-dead").write_bytes(HEADER + line * 10_000)
    (log,) = dead_logs(journal, set())
    assert 0 < len(log.rows) < 4096 // len(line) + 1 and log.damaged == 1


def test_a_forged_start_is_a_damaged_line_not_a_crash(tmp_path: Path) -> None:
    journal = tmp_path / "calls.sqlite"
    good = intent_line("good", None, datetime.now(UTC), "s", "t", "s-t", {}, None)
    forged = b'["forged", null, 1e300, "s", "t", "s-t", {}, null]\n'
    tb.Bench(journal=journal).close()  # the journal exists; a dead session's file beside it
    Path(f"{journal}-intents-dead").write_bytes(HEADER + forged + good)
    with pytest.warns(tb.JournalWarning, match="skipped 1 damaged row"):
        bench = tb.Bench(journal=journal)
    with bench:
        assert list(bench.records["call_id"]) == ["good"]


def test_the_live_file_is_new_and_ours_alone(tmp_path: Path) -> None:
    journal = str(tmp_path / "calls.sqlite")
    os.symlink(tmp_path / "victim", f"{journal}-intents-planted")
    with pytest.raises(FileExistsError):
        IntentLog(journal, "planted", os.getpid(), None)
    assert not (tmp_path / "victim").exists()
    log = IntentLog(journal, "mine", os.getpid(), None)
    assert os.stat(log.path).st_mode & 0o777 == 0o600
    log.close(remove=True)


def _dead_copy(log: IntentLog, journal: str, name: str) -> str:
    """The live file as a killed process leaves it (copied under a dead session's name)."""
    dead = f"{journal}{intent_log.SUFFIX}{name}"
    with open(log.path, "rb") as live:
        data = live.read()
    header = json.loads(data.split(b"\n", 1)[0])
    header.update(session=name, pid=1 << 30, proc=None)  # no such process
    Path(dead).write_bytes(json.dumps(header).encode() + b"\n" + data.split(b"\n", 1)[1])
    return dead


def test_a_live_file_is_allocated_ahead_and_its_unwritten_end_reads_as_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines are copied into a mapped file (no write(2): the loop keeps the GIL); what
    is allocated past them is NUL bytes, which reopening neither reads nor counts as damage,
    however many times the file grew and was emptied."""
    journal = str(tmp_path / "calls.sqlite")
    log = IntentLog(journal, "live", os.getpid(), None)
    try:
        def no_write(fd: int, data: bytes) -> int:
            raise AssertionError("an intent was written with write(2)")

        monkeypatch.setattr(intent_log.os, "write", no_write)
        line = intent_line("x" * 32, None, datetime.now(UTC), "s", "t", "s-t",
                           {"pad": "p" * 200}, None)
        count = 3 * intent_log.FIRST_BYTES // len(line)  # grows the file twice
        for i in range(count):
            assert log.append(line.replace(b"x" * 32, f"{i:032d}".encode()))
        monkeypatch.undo()
        assert os.path.getsize(log.path) > log.size  # allocated ahead
        _dead_copy(log, journal, "a")
        (found,) = dead_logs(journal, {"live"})
        assert [row[0] for row in found.rows] == [f"{i:032d}" for i in range(count)]
        assert found.damaged == 0 and not found.outcomes
        os.unlink(found.path)

        log.empty()  # all committed: none of those lines may come back as an intent
        assert log.append(intent_line("after", None, datetime.now(UTC), "s", "t", "s-t",
                                      {}, None))
        _dead_copy(log, journal, "b")
        (found,) = dead_logs(journal, {"live"})
        assert [row[0] for row in found.rows] == ["after"] and found.damaged == 0
    finally:
        log.close(remove=True)
    assert not os.path.exists(log.path)


def test_a_line_cut_short_by_a_kill_is_skipped(tmp_path: Path) -> None:
    """A kill in the middle of a copy leaves the line's first bytes and then NULs: that
    line is not read (its call never went out), the ones before it are."""
    journal = str(tmp_path / "calls.sqlite")
    log = IntentLog(journal, "live", os.getpid(), None)
    try:
        whole = intent_line("whole", None, datetime.now(UTC), "s", "t", "s-t", {}, None)
        torn = intent_line("torn", None, datetime.now(UTC), "s", "t", "s-t", {"a": 1}, None)
        assert log.append(whole) and log.append(torn[:len(torn) // 2])
        _dead_copy(log, journal, "killed")
        (found,) = dead_logs(journal, {"live"})
        assert [row[0] for row in found.rows] == ["whole"]
    finally:
        log.close(remove=True)


def test_where_the_file_cannot_be_allocated_ahead_each_line_is_one_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``posix_fallocate`` (macOS): the file is not mapped, since a page of an unallocated
    file on a full disk is a SIGBUS; lines are written one ``write(2)`` each, as before."""
    monkeypatch.delattr(intent_log.os, "posix_fallocate")
    journal = str(tmp_path / "calls.sqlite")
    log = IntentLog(journal, "live", os.getpid(), None)
    try:
        for name in ("one", "two"):
            assert log.append(intent_line(name, None, datetime.now(UTC), "s", "t", "s-t", {},
                                          None))
        assert os.path.getsize(log.path) == log.size  # nothing allocated ahead
        log.empty()
        assert log.append(intent_line("three", None, datetime.now(UTC), "s", "t", "s-t", {},
                                      None))
        _dead_copy(log, journal, "dead")
        (found,) = dead_logs(journal, {"live"})
        assert [row[0] for row in found.rows] == ["three"] and found.damaged == 0
    finally:
        log.close(remove=True)
