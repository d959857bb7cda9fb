"""Sharing the interpreter while a report runs: long work offers the lock to other threads
about once a millisecond.

The report runs in the caller's thread (the kernel's), and the shared loop's thread needs
the interpreter lock for every step of every call it carries. A thread that waits for the
lock gets it only when the holder blocks or the switch interval (5 ms) runs out, so a call
that needs the lock three times would wait up to 15 ms behind a report. ``time.sleep(0)``
hands the lock over at once when someone waits (and costs a system call when no one does).
Measured with a neighbour server's calls during reports of 5,000 tools (estimate, 4 paired
rounds): median 10.2 ms without the offers, 2.9 ms with them (1.3 ms alone); p99 36 → 9.5 ms;
worst 127 → 16 ms. ``benchmarks/bench_report.py`` measures it on a hostile catalog.
"""

from __future__ import annotations

import time

INTERVAL = 0.001
"""Seconds of work between two offers."""
_last = 0.0


def offer() -> None:
    """Let a thread that waits for the interpreter lock run, if a millisecond has passed
    since the last offer; about 100 ns when it has not. (Shared by every thread: a race only
    makes an offer come a little early or late.)"""
    global _last
    now = time.perf_counter()
    if now - _last >= INTERVAL:
        _last = now
        time.sleep(0)
