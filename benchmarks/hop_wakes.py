"""When a synchronous call's hop loses its time: the two wake-ups, against how long each
thread slept (BENCHMARKS.md, "Per-call cost").

    python -m benchmarks.hop_wakes [--calls 1500]

``SharedLoop.run`` around a coroutine that does a fixed amount of Python work on the loop
thread. Timestamps taken around ``run`` in the caller and at the coroutine's start and end
on the loop thread give, per call:

* caller -> loop: from the caller entering ``run`` to the work starting on the loop (the
  loop thread's wake-up; it slept while the caller handled the previous result);
* loop -> caller: from the work's end to ``run`` returning in the caller (the caller's
  wake-up, after sleeping through the whole call).

On a VM whose idle vCPUs halt at once (this machine boots with
``haltpoll.guest_halt_poll_ns=0``), a wake-up is a trip through the hypervisor, and both
grow with the length of the call; the SDK awaited in one thread pays neither.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.bench_sweep import _loops_for, _work
from toolbench._loop import get_loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1500)
    calls = parser.parse_args().calls
    loop = get_loop()
    marks: dict[str, int] = {}
    print("work on the loop   caller->loop   loop->caller   (µs, medians)")
    for us in (0, 25, 50, 100, 200, 400, 800):
        loops = _loops_for(us)

        async def work(loops: int = loops) -> None:
            marks["start"] = time.perf_counter_ns()
            _work(loops)
            marks["end"] = time.perf_counter_ns()

        there, back = [], []
        for _ in range(calls):
            sent = time.perf_counter_ns()
            loop.run(work)
            returned = time.perf_counter_ns()
            there.append((marks["start"] - sent) / 1e3)
            back.append((returned - marks["end"]) / 1e3)
        print(f"{us:10d} µs     {statistics.median(there):9.1f}      "
              f"{statistics.median(back):9.1f}")


if __name__ == "__main__":
    main()
