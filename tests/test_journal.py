"""Durability: a process killed in the middle of a map loses no recorded call."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import toolbench as tb

SCRIPT = textwrap.dedent("""
    import sys, anyio
    import toolbench as tb

    @tb.tool(server="work")
    async def slow_square(n: int) -> int:
        await anyio.sleep(0.05)
        return n * n

    bench = tb.Bench(journal=sys.argv[1])
    bench.add(tb.ToolBox(slow_square))
    print("ready", flush=True)
    bench.map("work-slow_square", [{"n": i} for i in range(400)], concurrency=2,
              progress=False, resume=True)
    print("finished", flush=True)
""")


def _count(journal: Path) -> int:
    with sqlite3.connect(journal) as db:
        return int(db.execute("SELECT COUNT(*) FROM calls WHERE ok = 1").fetchone()[0])


def test_sigkill_mid_map_loses_nothing_and_resume_finishes(tmp_path: Path) -> None:
    journal = tmp_path / "calls.sqlite"
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(journal)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if journal.exists() and _count(journal) >= 20:
                break
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    on_disk = _count(journal)
    assert 20 <= on_disk < 400, on_disk

    with tb.Bench(journal=journal) as bench:
        loaded = bench.records
        assert int(loaded["ok"].sum()) == on_disk  # everything that finished is back
        squares = {r["n"]: t for r, t in zip(loaded["arguments"], loaded["text"], strict=True)}
        assert all(int(t) == n * n for n, t in squares.items())

    done = subprocess.run([sys.executable, str(script), str(journal)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout
    with sqlite3.connect(journal) as db:
        distinct = db.execute("SELECT COUNT(DISTINCT arguments) FROM calls WHERE ok = 1")
        assert distinct.fetchone()[0] == 400
        total_ok = db.execute("SELECT COUNT(*) FROM calls WHERE ok = 1").fetchone()[0]
    assert total_ok == 400  # resume re-ran only what had not succeeded
