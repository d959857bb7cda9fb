"""The journal with real files and real processes: what it writes, refuses, skips and survives.

Crashes (kill -9) are in test_journal_crash.py. No SQLite mock anywhere: every failure here
is produced for real (a lock held by another process, a full tmpfs, a truncated file).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolbench as tb
from toolbench._bench.journal import codec as _journal_codec
from toolbench._bench.journal import writer as _journal_writer
from toolbench._bench.journal.record import COLUMNS
from toolbench._loop import get_loop


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _box(log: list[int] | None = None, size: int = 0) -> tb.ToolBox:
    @tb.tool(server="w")
    def square(n: int) -> dict[str, Any]:
        if log is not None:
            log.append(n)
        return {"n": n, "square": n * n, "pad": "x" * size}

    @tb.tool(server="w")
    async def nap(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "rested"

    return tb.ToolBox(square, nap)


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


# -- what is written ------------------------------------------------------------------------
def test_round_trip_schema_version_and_no_intent_left(tmp_path: Path) -> None:
    journal = tmp_path / "calls.sqlite"
    with tb.Bench(journal=journal) as bench:
        bench.add(_box())
        bench.call("w-square", n=3, provenance={"run": "r1"})
        with pytest.raises(tb.Refused):
            bench.call("w-square", n="three")
        bench.map("w-square", [{"n": i} for i in range(20)], progress=False)
        before = bench.records
    assert _rows(journal, "PRAGMA application_id") == [(_journal_codec.APPLICATION_ID,)]
    assert _rows(journal, "PRAGMA user_version") == [(_journal_codec.SCHEMA_VERSION,)]
    assert _rows(journal, "SELECT count(*) FROM intents") == [(0,)]  # every one resolved
    assert _rows(journal, "SELECT count(*) FROM calls") == [(22,)]
    with tb.Bench(journal=journal) as again:
        after = again.records
    assert list(after.columns) == list(COLUMNS)
    assert sorted(after["call_id"]) == sorted(before["call_id"])
    first = after.set_index("call_id").loc[before.iloc[0]["call_id"]]
    assert first["provenance"]["run"] == "r1"
    assert first["structured"] == {"n": 3, "square": 9, "pad": ""}
    refused = after[after["error_type"] == "Refused"]
    assert list(refused["disposition"]) == ["did_not_happen"]


def test_the_intent_is_on_disk_before_the_tool_runs(tmp_path: Path) -> None:
    """The tool itself looks at the disk: its own intent must already be there.

    Intents are appended to the session's intent log (one write before sending); SQLite gets
    them, with the outcomes, on the writer thread. Whatever the tool sees is what a crash
    at that moment would leave.
    """
    journal = tmp_path / "calls.sqlite"
    seen: list[list[list[Any]]] = []

    def on_disk() -> list[list[Any]]:
        lines = [json.loads(line) for log in tmp_path.glob("calls.sqlite-intents-*")
                 for line in log.read_bytes().rstrip(b"\0").decode().splitlines()[1:]]
        committed = _rows(journal, "SELECT call_id, arguments FROM intents")
        return [[row[0], json.dumps(row[6])] for row in lines] + [list(r) for r in committed]

    @tb.tool(server="w")
    def peek(n: int) -> int:
        seen.append([row for row in on_disk() if row[1] == json.dumps({"n": n})])
        return n

    with tb.Bench(journal=journal) as bench:
        bench.add(tb.ToolBox(peek))
        bench.call("w-peek", n=7)
        call_id = bench.records.iloc[-1]["call_id"]
        bench.map("w-peek", [{"n": i} for i in range(10)], concurrency=1, progress=False)
        assert len(list(tmp_path.glob("calls.sqlite-intents-*"))) == 1
    assert seen[0][0] == [call_id, '{"n": 7}']
    assert len(seen) == 11 and all(rows for rows in seen)  # each call's intent was there
    assert _rows(journal, "SELECT count(*) FROM intents") == [(0,)]
    assert _rows(journal, "SELECT count(*) FROM calls") == [(11,)]
    assert not list(tmp_path.glob("calls.sqlite-intents-*"))  # a clean close removes it


def test_sqlite_never_runs_on_the_event_loop_thread(tmp_path: Path) -> None:
    with tb.Bench(journal=tmp_path / "calls.sqlite") as bench:
        bench.add(_box())
        journal = bench.store.journal
        assert journal is not None
        threads: set[str] = set()
        assert journal.trace(lambda _sql: threads.add(threading.current_thread().name))
        bench.call("w-square", n=1)
        bench.map("w-square", [{"n": i} for i in range(30)], progress=False)
        bench.compare("square", [{"n": 1}, {"n": 2}], progress=False)
    assert threads == {"toolbench-journal"}


# -- what is refused, untouched -------------------------------------------------------------
def _foreign(path: Path, setup: list[str]) -> None:
    db = sqlite3.connect(path)
    for sql in setup:
        db.execute(sql)
    db.commit()
    db.close()


@pytest.mark.parametrize("setup, reason", [
    (["CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
      "INSERT INTO users (name) VALUES ('ada')"], "not a toolbench journal"),
    (["CREATE TABLE calls (id INTEGER PRIMARY KEY, what TEXT)",
      "INSERT INTO calls (what) VALUES ('mine')"], "not a toolbench journal"),
    (["PRAGMA application_id = 1234", "CREATE TABLE t (x)"], "application_id 0x4d2"),
    ([f"PRAGMA application_id = {_journal_codec.APPLICATION_ID}", "PRAGMA user_version = 99",
      "CREATE TABLE calls (x)"], "newer toolbench"),
])
def test_a_database_that_is_not_a_journal_is_refused_untouched(
        tmp_path: Path, setup: list[str], reason: str) -> None:
    path = tmp_path / "app.db"
    _foreign(path, setup)
    before = _digest(path)
    with pytest.raises(ValueError, match=reason) as caught:
        tb.Bench(journal=path)
    assert str(path) in str(caught.value) and "untouched" in str(caught.value)
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]  # no -wal, no -shm
    assert _rows(path, "PRAGMA journal_mode") == [("delete",)]


def test_a_file_that_is_not_sqlite_and_a_bad_path_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.sqlite"
    text.write_text("this is not a database " * 100)
    before = _digest(text)
    with pytest.raises(ValueError, match="not a toolbench journal"):
        tb.Bench(journal=text)
    assert _digest(text) == before
    with pytest.raises(ValueError, match="does not exist"):
        tb.Bench(journal=tmp_path / "missing-dir" / "x.sqlite")
    with pytest.raises(ValueError, match="directory"):
        tb.Bench(journal=tmp_path)


def test_a_journal_from_before_schema_versions_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    cols = ", ".join(f"{c} {'INTEGER' if c == 'ok' else 'REAL' if c == 'latency_ms' else 'TEXT'}"
                     for c in COLUMNS)  # the schema toolbench wrote before versions
    _foreign(path, [
        "PRAGMA journal_mode=WAL",
        f"CREATE TABLE calls (seq INTEGER PRIMARY KEY AUTOINCREMENT, {cols})",
        "INSERT INTO calls (call_id, batch, started, server, tool, name, arguments, ok, "
        "disposition, latency_ms, content) VALUES ('c1', NULL, '2026-01-02T03:04:05+00:00', "
        "'w', 'square', 'w-square', '{\"n\": 2}', 1, 'landed', 1.5, '[]')",
    ])
    with tb.Bench(journal=path) as bench:
        assert list(bench.records["call_id"]) == ["c1"]
        bench.add(_box())
        bench.call("w-square", n=5)
    assert _rows(path, "PRAGMA user_version") == [(_journal_codec.SCHEMA_VERSION,)]
    assert _rows(path, "SELECT call_id FROM calls ORDER BY seq")[0] == ("c1",)
    assert _rows(path, "SELECT count(*) FROM calls") == [(2,)]


# -- what is skipped ------------------------------------------------------------------------
def test_damaged_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.add(_box())
        bench.map("w-square", [{"n": i} for i in range(50)], progress=False)
    db = sqlite3.connect(path)
    db.execute("UPDATE calls SET arguments = '{not json' WHERE seq = 3")
    db.execute("UPDATE calls SET started = 'yesterday' WHERE seq = 10")
    db.execute("UPDATE calls SET content = '{\"a\": 1}' WHERE seq = 20")  # not a list
    db.execute("UPDATE calls SET disposition = 'maybe' WHERE seq = 30")
    db.commit()
    db.close()
    with pytest.warns(tb.JournalWarning, match="skipped 4 damaged rows") as caught:
        bench = tb.Bench(journal=path)
    assert len(caught) == 1
    with bench:
        assert len(bench.records) == 46
        bench.add(_box())
        again = bench.map("w-square", [{"n": i} for i in range(50)], progress=False,
                          resume=True)
        assert len(again) == 50 and int(again["ok"].sum()) == 50
        assert len(bench.records) == 50  # the four unreadable ones ran again
    assert _rows(path, "SELECT count(*) FROM calls") == [(54,)]


def test_a_truncated_file_loads_what_it_can_and_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.add(_box(size=400))
        bench.map("w-square", [{"n": i} for i in range(1500)], progress=False)
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(size * 6 // 10)
    before = _digest(path)
    with pytest.warns(tb.JournalWarning, match="damaged") as caught:
        bench = tb.Bench(journal=path)
    assert "loaded" in str(caught[0].message) and "could not be read" in str(caught[0].message)
    with bench:
        loaded = len(bench.records)
        assert 750 < loaded < 1500  # the surviving 60 % of leaf pages, past the broken tree
        assert all(bench.records["ok"])
        bench.add(_box())
        with pytest.warns(tb.JournalWarning, match="1 of its 1 record is not durable"):
            result = bench.call("w-square", n=2)
        assert result.data["square"] == 4
        assert len(bench.records) == loaded + 1  # in memory all the same
        with pytest.warns(tb.JournalWarning) as closing:
            bench.close()
        assert "1 record never reached the file" in str(closing[0].message)
    assert _digest(path) == before  # nothing written into a damaged file


# -- what a journal that cannot be written does ---------------------------------------------
HOLD_LOCK = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


@contextlib.contextmanager
def _lock_held(path: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def _release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(10)


@pytest.mark.slow
def test_a_lock_held_by_another_process_costs_no_record_and_stalls_nobody(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A long lock wait makes a stalled loop unmistakable: before, SQLite's busy wait ran on
    # the shared loop and stalled every bench in the process for as long.
    monkeypatch.setattr(_journal_writer, "BUSY_S", 2.0)
    path = tmp_path / "calls.sqlite"
    ran: list[int] = []
    bench = tb.Bench(journal=path)
    other = tb.Bench()  # an unrelated bench without a journal, on the same shared loop
    try:
        bench.add(_box(ran))
        other.add(_box())
        bench.call("w-square", n=-1)
        # a call returns before its outcome commits (within ~5 ms): commit it before the lock
        assert get_loop().run(bench.store.settle, None) == 0
        with _lock_held(path) as holder:
            stop = threading.Event()
            worst: list[float] = []

            def busy_neighbour() -> None:
                while not stop.is_set():
                    started = time.perf_counter()
                    other.call("w-square", n=0)
                    worst.append(time.perf_counter() - started)

            neighbour = threading.Thread(target=busy_neighbour)
            neighbour.start()
            try:
                started = time.perf_counter()
                # Its intent goes to the intent log, which the lock does not touch: the call
                # neither waits for the lock nor knows yet that its outcome will not commit.
                result = bench.call("w-square", n=3)
                took = time.perf_counter() - started
                time.sleep(2.5)  # the writer's commit waits out BUSY_S meanwhile
            finally:
                stop.set()
                neighbour.join(30)
            assert result.data["square"] == 9 and ran[-1] == 3
            assert took < 1.8, took  # less than the lock wait; before, 5 s per write
            # The neighbour kept going: a loop held by the lock wait would show a call of 2 s
            # or more; 1 s leaves room for a loaded machine's own hiccups.
            assert len(worst) > 5 and max(worst) < 1.0, max(worst)
            with pytest.warns(tb.JournalWarning, match="database is locked") as caught:
                df = bench.map("w-square", [{"n": i} for i in range(40)], progress=False)
            assert len(caught) == 1  # one warning for the whole map
            assert "40 of its 40 records are not durable" in str(caught[0].message)
            assert list(df["ok"]) == [True] * 40
            with pytest.warns(tb.JournalWarning, match="database is locked") as caught:
                bench.call("w-square", n=4)  # a failing journal says so at once
            assert len(caught) == 1 and len(bench.records) == 43
            assert _rows(path, "SELECT count(*) FROM calls") == [(1,)]
            _release(holder)
        bench.close()  # writable again: what was kept in memory is written now, no warning
    finally:
        bench.close()
        other.close()
    assert _rows(path, "SELECT count(*) FROM calls") == [(43,)]
    with tb.Bench(journal=path) as again:
        assert sorted(again.records["call_id"]) == sorted(bench.records["call_id"])


@pytest.mark.slow
def test_a_full_disk_costs_no_record(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a 256 KB tmpfs here (needs root or CAP_SYS_ADMIN): "
                    f"{mounted.stderr.strip()}")
    try:
        path = small / "calls.sqlite"
        filler = small / "filler"
        with tb.Bench(journal=path) as bench:
            bench.add(_box(size=300))
            bench.call("w-square", n=-1)
            assert bench.history.written(10)  # the connect's snapshot, before the disk fills
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
            try:
                with contextlib.suppress(OSError):
                    while True:  # fill the disk to the last block
                        os.write(fd, b"\0" * 4096)
            finally:
                os.close(fd)
            with pytest.warns(tb.JournalWarning, match="full") as caught:
                df = bench.map("w-square", [{"n": i} for i in range(60)], progress=False)
            # pytest.warns records every warning in the block; count this journal's own (a
            # full-suite run once caught a second, unrelated warning here).
            ours = [w for w in caught if issubclass(w.category, tb.JournalWarning)
                    and str(path) in str(w.message)]
            assert len(ours) == 1, [str(w.message) for w in caught]
            assert "of its 60 records" in str(ours[0].message)
            assert int(df["ok"].sum()) == 60 and len(bench.records) == 61
            # raises as it would have, the warning aside
            with pytest.warns(tb.JournalWarning, match="full"), pytest.raises(tb.Refused):
                bench.call("w-square", n="x")
            filler.unlink()  # room again: close writes what was kept
        with tb.Bench(journal=path) as again:
            assert len(again.records) == 62
    finally:  # lazily, so a failure above (files still open) leaves no mount behind
        subprocess.run(["umount", "-l", str(small)], capture_output=True, timeout=30)


@pytest.mark.slow
def test_close_during_a_map_finishes_it_and_warns_once(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    bench = tb.Bench(journal=path)
    bench.add(_box())
    outcome: dict[str, Any] = {}

    def run_map() -> None:
        with pytest.warns(tb.JournalWarning) as caught:
            outcome["df"] = bench.map("w-nap", [{"seconds": 0.05}] * 40, concurrency=2,
                                      progress=False)
        outcome["warnings"] = [str(w.message) for w in caught]

    worker = threading.Thread(target=run_map)
    worker.start()
    deadline = time.monotonic() + 30
    while len(bench.records) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    bench.close()
    worker.join(60)
    assert not worker.is_alive()
    df = outcome["df"]
    assert len(df) == 40 and df["ok"].sum() >= 6
    assert len(outcome["warnings"]) == 1 and "closed" in outcome["warnings"][0]
    on_disk = _rows(path, "SELECT count(*) FROM calls")[0][0]
    assert on_disk >= 6 and on_disk + int(outcome["warnings"][0].split(" of its")[0]
                                          .rsplit(" ", 1)[-1]) == 40


# -- resume ---------------------------------------------------------------------------------
def test_resume_skips_in_doubt_calls_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    ran: list[float] = []

    @tb.tool(server="w")
    async def wait(seconds: float) -> float:
        ran.append(seconds)
        await anyio.sleep(seconds)
        return seconds

    cases = [{"seconds": 0.0}, {"seconds": 5.0}, {"seconds": 0.01}]
    with tb.Bench(journal=path) as bench:
        bench.add(tb.ToolBox(wait))
        first = bench.map("w-wait", cases, timeout=0.5, progress=False)
        assert list(first["disposition"]) == ["landed", "in_doubt", "landed"]
    ran.clear()
    with tb.Bench(journal=path) as bench:
        bench.add(tb.ToolBox(wait))
        again = bench.map("w-wait", cases, timeout=0.5, progress=False, resume=True)
        assert ran == []  # the timed-out call may have run: it is not silently repeated
        assert list(again["call_id"]) == list(first["call_id"])
        retried = bench.map("w-wait", cases, timeout=10, progress=False, resume=True,
                            retry_in_doubt=True)
        assert ran == [5.0]
        assert list(retried["ok"]) == [True, True, True]
        assert bench.map("w-wait", cases, progress=False, resume=True)["ok"].all()
        assert ran == [5.0]


def test_a_lone_surrogate_or_an_unsendable_argument_costs_no_record(tmp_path: Path) -> None:
    """SQLite takes UTF-8 only: one refused argument holding a lone surrogate (or a server's
    text decoded from "\\udc80") used to fail its whole commit batch, good records included."""
    box = tb.ToolBox()

    @box.tool(server="s")
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @box.tool(server="s")
    def odd() -> str:
        """Answer with a lone surrogate, as a JSON "\\udc80" escape would decode to."""
        return "half \udc80 a pair"

    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:  # filterwarnings=error: a JournalWarning fails
        bench.add(box)
        for bad in ({"text": "a\udc80b"}, {"text": object()}, {"text": float("nan")}):
            with pytest.raises(tb.Refused):
                bench.call("s-echo", bad)
        assert bench.call("s-odd").text == "half \udc80 a pair"
        assert bench.call("s-echo", text="fine").text == "fine"
    with tb.Bench(journal=path) as again:
        records = again.records
    assert len(records) == 5
    assert list(records["disposition"]) == ["did_not_happen"] * 3 + ["landed"] * 2
    assert records.iloc[0]["arguments"] == {"text": "a\udc80b"}  # kept exactly, as JSON
    assert "\\udc80" in records.iloc[3]["text"]  # the text column keeps an escape


def test_a_row_that_cannot_be_built_is_a_bug_not_a_write_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.add(_box())
        real = _journal_writer.sqlite_text

        def broken(value: Any) -> Any:
            raise KeyError("column")

        monkeypatch.setattr(_journal_writer, "sqlite_text", broken)
        with pytest.warns(tb.JournalWarning, match="could not be turned into a row.*KeyError"):
            bench.map("w-square", [{"n": 1}, {"n": 2}])
        journal = bench.store.journal
        assert journal is not None
        assert not journal.degraded  # not "retry forever": the file itself is fine
        monkeypatch.setattr(_journal_writer, "sqlite_text", real)
        bench.map("w-square", [{"n": 3}])  # later records are written
        assert len(bench.records) == 3
        with pytest.warns(tb.JournalWarning, match="2 records never reached the file"):
            bench.close()
    rows = _rows(path, "SELECT arguments FROM calls")
    assert [json.loads(r[0]) for r in rows] == [{"n": 3}]


HOLD_EXCLUSIVE = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA locking_mode=EXCLUSIVE")
db.execute("BEGIN EXCLUSIVE")
db.execute("SELECT count(*) FROM calls").fetchone()
print("locked", flush=True)
sys.stdin.readline()
"""


@pytest.mark.slow
def test_a_journal_locked_at_open_says_locked_and_by_whom(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    tb.Bench(journal=path).close()
    before = _digest(path)
    proc = subprocess.Popen([sys.executable, "-c", HOLD_EXCLUSIVE, str(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(ValueError, match=rf"is locked by process {proc.pid}\b") as info:
            tb.Bench(journal=path)
        assert "not a toolbench journal" not in str(info.value)
    finally:
        _release(proc)
        if proc.stdout is not None:
            proc.stdout.close()
    assert _digest(path) == before


def test_the_journal_and_its_wal_are_private(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.add(_box())
        bench.call("w-square", n=2)
        made = [p for p in tmp_path.iterdir() if p.name.startswith("calls.sqlite")]
        assert {p.name for p in made} >= {"calls.sqlite", "calls.sqlite-wal",
                                          "calls.sqlite-shm"}
        assert {p.name: oct(p.stat().st_mode & 0o777) for p in made} == {
            p.name: "0o600" for p in made}


def test_journal_files_deleted_while_open_warn_as_for_a_full_disk(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.add(_box())
        bench.map("w-square", [{"n": n} for n in range(5)], progress=False)
        for made in tmp_path.iterdir():  # the journal, its -wal and -shm, the intent log
            made.unlink()
        with pytest.warns(tb.JournalWarning, match="5 of its 5 records are not durable.*deleted"):
            bench.map("w-square", [{"n": n} for n in range(5, 10)], progress=False)
        assert len(bench.records) == 10  # kept in memory
        with pytest.warns(tb.JournalWarning, match="never reached the file"):
            bench.close()
