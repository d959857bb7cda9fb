"""What the journal costs a call and a map, now and as it was before the intent log.

All against the zero-latency in-process server, so the journal's cost is not hidden behind
a tool's latency:

1. One ``Bench.call`` at a time, without a journal, with the journal (intent committed
   before the call is sent, outcome committed behind it), and with the journal as it was
   before (one autocommit INSERT on the event loop, after the call, no intent). Calls of the
   three subjects are interleaved one by one, so a busy machine weighs on all alike; the
   figure is the median call, and the cost is the median of the paired differences.
2. CPU time per call (all threads) for the same three, in separate runs.
3. ``Bench.map`` throughput (calls/s, concurrency 8) for the same three; map rounds
   interleaved.

Goals: a journaled map keeps at least 90 % of the throughput of the same map
without a journal; a journaled call adds at most 60 µs.

    python -m benchmarks.bench_journal [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import common
from toolbench import Bench
from toolbench._bench.calls.calling import Calls
from toolbench._bench.journal.journal import Journal
from toolbench._bench.journal.record import COLUMNS, Record
from toolbench._bench.journal.store import RecordStore

W_CALL = "8. one Bench.call, in process, zero-latency server"
W_ADDED = "8. journal cost added to one Bench.call (paired)"
W_CPU = "8. CPU time per Bench.call (all threads)"
W_MAP = "8. Bench.map throughput, in process, zero-latency server, concurrency 8"
W_MAP_KEPT = "8. Bench.map throughput kept with a journal (same round, paired)"
PLAIN = "toolbench, no journal"
AFTER = "toolbench + journal (intent before, outcome behind)"
BEFORE = "toolbench + journal as before the intent log (INSERT on the loop)"
SUBJECTS = (PLAIN, AFTER, BEFORE)


class BeforeStore(RecordStore):
    """The journal before the intent log, kept to measure against: one autocommit INSERT per
    record, on whatever thread appends (the event loop), no intent, no writer thread."""

    _JSON = frozenset({"arguments", "structured", "content", "provenance"})
    _INSERT = (f"INSERT INTO calls ({', '.join(COLUMNS)}) "
               f"VALUES ({', '.join('?' * len(COLUMNS))})")

    def __init__(self, path: Path) -> None:
        super().__init__(None)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        kind = {"ok": "INTEGER", "latency_ms": "REAL"}
        cols = ", ".join(f"{c} {kind.get(c, 'TEXT')}" for c in COLUMNS)
        self._db.execute(f"CREATE TABLE IF NOT EXISTS calls (seq INTEGER PRIMARY KEY "
                         f"AUTOINCREMENT, {cols})")
        self._write_lock = threading.Lock()

    def append(self, record: Record, tag: str | None = None) -> None:
        row = tuple(
            (None if getattr(record, c) is None
             else json.dumps(getattr(record, c), ensure_ascii=False, default=str))
            if c in self._JSON
            else record.started.isoformat() if c == "started"
            else getattr(record, c)
            for c in COLUMNS
        )
        with self._write_lock:
            self._db.execute(self._INSERT, row)  # autocommit: durable once this returns
        super().append(record, tag)

    def close(self) -> int:
        self._db.close()
        return 0

    async def aclose(self) -> int:
        return self.close()


class _BeforeBench(Bench):
    """A bench whose calls record into the store as it was before (one subclass, so the
    bench's own collaborators are built as usual and only the calls' store differs)."""

    def __init__(self, store: RecordStore) -> None:
        super().__init__()
        self.calls = Calls(self.connections, self.guard, store, self.router, self.pegboard)


def _benches(tmp: Path) -> dict[str, Bench]:
    server = common.inprocess_server("inproc")
    benches = {PLAIN: Bench(), AFTER: Bench(journal=tmp / "after.sqlite")}
    benches[BEFORE] = _BeforeBench(BeforeStore(tmp / "before.sqlite"))
    for bench in benches.values():
        bench.connect("s", server)
        bench.call("s-add", {"a": 0, "b": 0})
    return benches


def _calls(figures: common.Figures, benches: dict[str, Bench], calls: int) -> None:
    """One round: every subject's calls interleaved one by one, order rotating."""
    took: dict[str, list[float]] = {s: [] for s in SUBJECTS}
    for i in range(calls):
        order = SUBJECTS[i % 3:] + SUBJECTS[:i % 3]
        for subject in order:
            started = time.perf_counter()
            benches[subject].call("s-add", {"a": i, "b": 2})
            took[subject].append(time.perf_counter() - started)
    for subject in SUBJECTS:
        figures.add(W_CALL, subject, "µs/call", statistics.median(took[subject]) * 1e6)
    for subject in (AFTER, BEFORE):
        paired = [j - p for p, j in zip(took[PLAIN], took[subject], strict=True)]
        figures.add(W_ADDED, subject, "µs/call", statistics.median(paired) * 1e6,
                    note="target ≤ 60 µs" if subject == AFTER else "")


def _cpu(figures: common.Figures, benches: dict[str, Bench], calls: int) -> None:
    for subject in SUBJECTS:
        bench = benches[subject]
        started = time.process_time()
        for i in range(calls):
            bench.call("s-add", {"a": i, "b": 2})
        figures.add(W_CPU, subject, "µs CPU/call",
                    common.per_call_us(time.process_time() - started, calls))


def _maps(figures: common.Figures, benches: dict[str, Bench], cases: int,
          round_no: int) -> None:
    """One round of maps, one per subject; who goes first rotates (the first map of a round
    used to pay for the collection of the garbage the rounds before it left)."""
    args = [{"a": i, "b": 2} for i in range(cases)]
    rate: dict[str, float] = {}
    for subject in SUBJECTS[round_no % 3:] + SUBJECTS[:round_no % 3]:
        started = time.perf_counter()
        df = benches[subject].map("s-add", args, concurrency=8, progress=False)
        elapsed = time.perf_counter() - started
        assert bool(df["ok"].all()) and len(df) == cases
        rate[subject] = cases / elapsed
        figures.add(W_MAP, subject, "calls/s", rate[subject])
    # The same round's maps side by side: a drifting load weighs on the pair alike.
    for subject in (AFTER, BEFORE):
        figures.add(W_MAP_KEPT, subject, "× unjournaled", rate[subject] / rate[PLAIN],
                    note="goal ≥ 0.9" if subject == AFTER else "")


def _check_durable(tmp: Path, benches: dict[str, Bench]) -> None:
    """Measured honestly: the journaled bench's records are all in its file."""
    store = benches[AFTER].store
    journal = store.journal
    assert isinstance(journal, Journal)
    benches[AFTER].close()
    db = sqlite3.connect(tmp / "after.sqlite")
    try:
        on_disk = db.execute("SELECT count(*) FROM calls").fetchone()[0]
    finally:
        db.close()
    assert on_disk == len(store), (on_disk, len(store))


def run(quick: bool = False) -> dict[str, Any]:
    figures = common.Figures()
    rounds = common.rounds_for(quick, full=7, small=2)
    calls = 200 if quick else 1000
    cases = 500 if quick else 2000
    common.progress(f"{W_CALL}: {rounds} rounds x {calls} calls x 3 subjects, interleaved")
    with tempfile.TemporaryDirectory() as tmp:
        benches = _benches(Path(tmp))
        try:
            for round_no in range(rounds):
                _calls(figures, benches, calls)
                _cpu(figures, benches, calls)
                _maps(figures, benches, cases, round_no)
            _check_durable(Path(tmp), benches)
        finally:
            for bench in benches.values():
                bench.close()
    figures.ratio("journaled map throughput / unjournaled (goal ≥ 0.9; shown inverted)",
                  W_MAP, PLAIN, AFTER, 1 / 0.9,
                  note="no-journal calls/s over journal calls/s: ≤ 1.111 means ≥ 90 %")
    figures.ratio("map, no journal / journal as before the intent log", W_MAP, PLAIN, BEFORE)
    figures.notes.append(f"{W_ADDED}: goal ≤ 60 µs for '{AFTER}'; load average at end "
                         f"{os.getloadavg() if hasattr(os, 'getloadavg') else None}")
    return figures.as_dict()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small and fast (a smoke test)")
    print(json.dumps(run(parser.parse_args().quick), indent=1, default=str))
