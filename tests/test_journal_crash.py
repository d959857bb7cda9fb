"""kill -9 in the middle of a journaled map: every call the server ran is in the journal.

The server is a real stdio child that appends each argument it executes to a log file
before answering; the bench runs in another real process, which is killed with SIGKILL at
a random point. Whatever the server logged must come back from the journal as a record,
either finished or ``in_doubt`` (its intent was committed before a byte was sent), and
``resume`` must never run an in-doubt call again unless asked to.
"""

from __future__ import annotations

import collections
import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

import toolbench as tb

pytestmark = pytest.mark.slow

SERVER = textwrap.dedent("""
    import os, sys
    import anyio
    from mcp.server.mcpserver import MCPServer

    log = sys.argv[1]
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    with open(f"{log}.pid.{os.getpid()}", "w"):
        pass
    server = MCPServer("logged")

    @server.tool()
    async def work(n: int) -> int:
        os.write(fd, f"{n}\\n".encode())  # logged the moment it executes
        await anyio.sleep(0.004)
        return n * n

    server.run("stdio")
""")

JOB = textwrap.dedent("""
    import os, sys
    import anyio
    import toolbench as tb

    journal, server, log, count, where = sys.argv[1:6]
    bench = tb.Bench(journal=journal)
    if where == "stdio":
        bench.connect("s", [sys.executable, server, log])
    else:  # the same logging tool in this very process: no child to start
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

        @tb.tool(server="s")
        async def work(n: int) -> int:
            os.write(fd, f"{n}\\n".encode())
            await anyio.sleep(0.004)
            return n * n

        bench.add(tb.ToolBox(work))
    print("ready", flush=True)
    bench.map("s-work", [{"n": i} for i in range(int(count))], concurrency=4,
              progress=False, resume=True)
    print("finished", flush=True)
    bench.close()
""")

CASES = 300


def _logged(log: Path) -> list[int]:
    if not log.exists():
        return []
    return [int(line) for line in log.read_text().splitlines() if line.strip()]


def _wait_servers_gone(log: Path) -> None:
    """The killed bench's server child ends on its own (stdin closes); wait, bounded."""
    deadline = time.monotonic() + 20
    for marker in log.parent.glob(f"{log.name}.pid.*"):
        pid = int(marker.name.rsplit(".", 1)[1])
        while time.monotonic() < deadline:
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.02)
        else:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the server child {pid} outlived its bench by 20 s")
        marker.unlink()


def _journal_state(journal: Path) -> dict[int, list[str]]:
    """n -> dispositions of its records, as a fresh bench loads them."""
    with tb.Bench(journal=journal) as bench:
        df = bench.records
    found: dict[int, list[str]] = collections.defaultdict(list)
    for args, ok, disposition in zip(df["arguments"], df["ok"], df["disposition"],
                                     strict=True):
        assert ok or disposition == "in_doubt", (args, disposition)  # nothing else fails here
        found[args["n"]].append(disposition)
    return found


@pytest.mark.timeout(300)  # ten processes start and import toolbench: slow on a busy box
def test_kill_9_at_random_points_loses_no_call_and_resume_repeats_none(tmp_path: Path) -> None:
    journal, log = tmp_path / "calls.sqlite", tmp_path / "server.log"
    server, job = tmp_path / "server.py", tmp_path / "job.py"
    server.write_text(SERVER)
    job.write_text(JOB)
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    in_doubt_seen = 0
    for rep in range(10):
        before = len(_logged(log))
        where = "stdio" if rep % 2 == 0 else "in-process"  # both kinds of server
        proc = subprocess.Popen([sys.executable, str(job), str(journal), str(server), str(log),
                                 str(CASES), where], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready", f"rep {rep} ({where}, seed {seed})"
            target = before + rng.randint(1, 25)  # a random point of this run's map
            deadline = time.monotonic() + 60
            while len(_logged(log)) < target and time.monotonic() < deadline:
                time.sleep(0.001)
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
        _wait_servers_gone(log)
        ran = collections.Counter(_logged(log))
        found = _journal_state(journal)
        missing = sorted(n for n in ran if n not in found)
        assert not missing, f"rep {rep} (seed {seed}): ran but not in the journal: {missing}"
        twice = sorted(n for n, times in ran.items() if times > 1)
        assert not twice, f"rep {rep} (seed {seed}): resume ran these again: {twice}"
        assert all(len(d) == 1 for d in found.values()), f"rep {rep}: duplicate records"
        in_doubt_seen = sum(d == ["in_doubt"] for d in found.values())
    # Four calls were in flight at nearly every kill: some intents had no outcome.
    assert in_doubt_seen > 0, f"seed {seed}: no call was ever in flight at a kill"

    # A resume in this process finishes the map and still repeats nothing in doubt...
    ran_before = collections.Counter(_logged(log))
    doubtful = {n for n, d in _journal_state(journal).items() if d == ["in_doubt"]}
    with tb.Bench(journal=journal) as bench:
        bench.connect("s", [sys.executable, str(server), str(log)])
        df = bench.map("s-work", [{"n": i} for i in range(CASES)], progress=False,
                       resume=True)
        assert len(df) == CASES
        assert {a["n"] for a, d in zip(df["arguments"], df["disposition"], strict=True)
                if d == "in_doubt"} == doubtful
        ran_after = collections.Counter(_logged(log))
        assert all(ran_after[n] == ran_before[n] for n in doubtful)
        assert all(times == 1 for times in ran_after.values())
        assert set(ran_after) | doubtful == set(range(CASES))
        # ...until asked: then exactly the in-doubt ones run again.
        retried = bench.map("s-work", [{"n": i} for i in range(CASES)], progress=False,
                            resume=True, retry_in_doubt=True)
        assert retried["ok"].all()
        ran_last = collections.Counter(_logged(log))
        assert {n for n in ran_last if ran_last[n] != ran_after[n]} == doubtful


ONE_CALL = textwrap.dedent("""
    import sys, anyio
    import toolbench as tb

    @tb.tool(server="w")
    async def hang(label: str) -> str:
        print("in flight", flush=True)
        await anyio.sleep(3600)
        return label

    bench = tb.Bench(journal=sys.argv[1])
    bench.add(tb.ToolBox(hang))
    bench.call("w-hang", label='first "\u00e9"\\n')  # quotes, UTF-8, a newline
""")


def test_a_call_in_flight_at_kill_9_comes_back_in_doubt(tmp_path: Path) -> None:
    journal, script = tmp_path / "calls.sqlite", tmp_path / "one.py"
    script.write_text(ONE_CALL)
    proc = subprocess.Popen([sys.executable, str(script), str(journal)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "in flight"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    # The intent was in the session's intent log (one write before sending), not in SQLite.
    (log,) = tmp_path.glob("calls.sqlite-intents-*")
    assert "first" in log.read_text() and _count(journal, "intents") == 0
    with tb.Bench(journal=journal) as bench:
        df = bench.records
        assert len(df) == 1
        row = df.iloc[0]
        assert (row["ok"], row["disposition"], row["error_type"]) == (False, "in_doubt",
                                                                     "TimedOut")
        assert "process ended while the call was in flight" in row["error"]
        assert f"pid {proc.pid}" in row["error"]
        assert row["arguments"] == {"label": 'first "\u00e9"\n'} and row["name"] == "w-hang"
    assert not log.exists()  # its orphan is a committed in_doubt row now
    assert _count(journal, "calls") == 1
    with tb.Bench(journal=journal) as again:  # converted once, on disk: not twice
        assert len(again.records) == 1


def _count(journal: Path, table: str) -> int:
    with contextlib.closing(sqlite3.connect(journal)) as db:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


RETURNED = textwrap.dedent("""
    import os, signal, sys
    import toolbench as tb

    @tb.tool(server="w")
    def square(n: int) -> dict:
        if n < 0:
            raise ValueError(f"negative {n}")
        return {"square": n * n, "note": 'quotes "\u00e9"'}

    bench = tb.Bench(journal=sys.argv[1])
    bench.add(tb.ToolBox(square))
    count = int(sys.argv[2])
    for n in range(count):
        try:
            bench.call("w-square", n=-n if n % 3 == 2 else n)
        except tb.ToolFailed:
            pass
    os.kill(os.getpid(), signal.SIGKILL)  # the very instant the last call returned
""")


@pytest.mark.timeout(400)
def test_a_call_that_returned_keeps_its_answer_after_kill_9(tmp_path: Path) -> None:
    script = tmp_path / "returned.py"
    script.write_text(RETURNED)
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    for rep in range(20):
        journal = tmp_path / f"calls-{rep}.sqlite"
        count = rng.randint(1, 6)
        proc = subprocess.run([sys.executable, str(script), str(journal), str(count)],
                              timeout=120, capture_output=True, text=True)
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        with tb.Bench(journal=journal) as bench:
            df = bench.records
        assert len(df) == count, f"rep {rep} (seed {seed}): {len(df)} of {count} records"
        for n, row in enumerate(df.itertuples()):
            assert row.disposition == "landed", f"rep {rep} (seed {seed}): call {n} {row}"
            if n % 3 == 2:
                assert row.error_type == "ToolFailed" and f"negative {-n}" in row.error
            else:
                assert row.ok and row.structured == {"square": n * n, "note": 'quotes "é"'}
        with contextlib.closing(sqlite3.connect(journal)) as db:  # and now in SQLite too
            assert db.execute("SELECT count(*) FROM calls").fetchone()[0] == count
            assert db.execute("SELECT count(*) FROM intents").fetchone()[0] == 0


MAP_KILLED = textwrap.dedent("""
    import os, signal, sys
    import toolbench as tb

    kill_at = int(sys.argv[2])

    @tb.tool(server="w")
    def square(n: int) -> int:
        if n == kill_at:  # every case before it has returned: concurrency 1, in order
            os.kill(os.getpid(), signal.SIGKILL)
        return n * n

    bench = tb.Bench(journal=sys.argv[1])
    bench.add(tb.ToolBox(square))
    bench.map("w-square", [{"n": n} for n in range(kill_at + 5)], concurrency=1,
              progress=False)
""")


@pytest.mark.timeout(300)
def test_a_maps_finished_calls_keep_their_answers_after_kill_9(tmp_path: Path) -> None:
    """DESIGN: nothing recorded is lost if the kernel dies, in the middle of a map too. The
    map's commit to SQLite comes when the writer gets to it (while a map keeps the loop busy,
    about once per 1,000 calls); every finished case is in the intent log at once."""
    script = tmp_path / "map_killed.py"
    script.write_text(MAP_KILLED)
    for kill_at in (1, 40, 300):
        journal = tmp_path / f"calls-{kill_at}.sqlite"
        proc = subprocess.run([sys.executable, str(script), str(journal), str(kill_at)],
                              timeout=120, capture_output=True, text=True)
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        with tb.Bench(journal=journal) as bench:
            df = bench.records
        by_case = {row.arguments["n"]: row for row in df.itertuples()}
        assert sorted(by_case) == list(range(kill_at + 1)), sorted(by_case)
        for n in range(kill_at):
            row = by_case[n]
            assert (row.disposition, row.ok, row.structured) == (
                "landed", True, {"result": n * n}), f"kill at {kill_at}: case {n} {row}"
        assert by_case[kill_at].disposition == "in_doubt"  # in flight when it died
