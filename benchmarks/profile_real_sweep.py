"""Where a real server's sweep spends its time, layer by layer: cProfile on the loop's thread.

``Bench.map`` of 3,000 ``echo`` calls to server-everything (stdio, cap 8), three times, with
``cProfile`` (clock: ``time.thread_time``, so only the shared loop's own CPU) switched on
inside the shared loop's thread; and the raw SDK (``mcp.Client`` + ``CapacityLimiter(8)``, a
task per call) doing the same in its own thread. Each layer of a call is the inclusive time of
its entry function minus that of the next layer down, per call; the SDK's ``call_tool`` is the
floor both share. The transport is the stdio reader and writer tasks (per message, not inside
a call's chain), the session's read stream and what wraps it.

cProfile's own overhead is several times the work it measures on small functions (a call costs
about 3 ms of CPU under it against 0.35 ms without), so only the differences between layers
and trees mean anything, never the absolute figures.

    PYTHONPATH=/some/checkout python benchmarks/profile_real_sweep.py [tb|sdk]
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
N = 3000
REPEATS = 3

CHAIN = [  # (layer, file suffix, function): outermost first, each one's inclusive time
    ("map worker (many/batch.py worker)", "_bench/many/batch.py", "worker"),
    ("map's bound call (many/batch.py bound)", "_bench/many/batch.py", "bound"),
    ("tracing (calls/tracing.py)", "_bench/calls/tracing.py", "wrapper"),
    ("Calls.invoke (rate, retries)", "_bench/calls/calling.py", "invoke"),
    ("Calls._once (check, record, journal, pins)", "_bench/calls/calling.py", "_once"),
    ("attempt", "_bench/calls/attempt.py", "attempt"),
    ("router", "_routing/router.py", "call"),
    ("McpClient envelope (mcp/calls.py)", "_transports/mcp/calls.py", "call"),
    ("the SDK's Client.call_tool (floor)", "mcp/client/client.py", "call_tool"),
]
SDK_CHAIN = [
    ("driver's task: CapacityLimiter + task", "profile_real_sweep.py", "one"),
    ("the SDK's Client.call_tool (floor)", "mcp/client/client.py", "call_tool"),
]
TRANSPORT = [
    ("stdio reader task", ("_transports/wire/stdio.py", "mcp/client/stdio.py"), "stdout_reader"),
    ("stdio writer task", ("_transports/wire/stdio.py", "mcp/client/stdio.py"), "stdin_writer"),
    ("session's read stream: toolbench's wrappers", ("_transports/mcp/tracking.py",),
     "__anext__"),
    ("session's read stream: the SDK's (anyio)", ("anyio/abc/_streams.py",), "__anext__"),
]


def _everything() -> list[str]:
    sys.path.insert(0, str(HERE / "tests"))
    from servers import everything

    return everything.stdio_command()


def profile(which: str) -> tuple[pstats.Stats, float]:
    import anyio

    argv = _everything()
    work = [{"message": f"m{i}"} for i in range(N)]
    prof = cProfile.Profile(time.thread_time)
    cpu = 0.0
    if which == "tb":
        from toolbench import Bench
        from toolbench._loop import get_loop

        with Bench(timeout=60, connect_timeout=60) as bench:
            bench.connect("e", argv)
            bench.map("e-echo", work, concurrency=8, progress=False)

            async def on() -> None:
                prof.enable()

            async def off() -> None:
                prof.disable()

            get_loop().run(on)
            started = time.process_time()
            for _ in range(REPEATS):
                bench.map("e-echo", work, concurrency=8, progress=False)
            cpu = time.process_time() - started
            get_loop().run(off)
    else:
        from mcp import Client, StdioServerParameters, stdio_client

        async def main() -> None:
            nonlocal cpu
            params = StdioServerParameters(command=argv[0], args=argv[1:])
            with open(os.devnull, "w") as errlog:
                async with Client(stdio_client(params, errlog=errlog)) as client:
                    async def sweep() -> None:
                        limiter = anyio.CapacityLimiter(8)

                        async def one(i: int) -> None:
                            async with limiter:
                                await client.call_tool("echo", work[i])

                        async with anyio.create_task_group() as tg:
                            for i in range(N):
                                tg.start_soon(one, i)

                    await sweep()
                    prof.enable()
                    started = time.process_time()
                    for _ in range(REPEATS):
                        await sweep()
                    cpu = time.process_time() - started
                    prof.disable()

        anyio.run(main)
    return pstats.Stats(prof), cpu


def _inclusive(stats: Any, suffixes: tuple[str, ...] | str, name: str) -> float | None:
    suffixes = (suffixes,) if isinstance(suffixes, str) else suffixes
    total = None
    for (path, _, func), (_, _, _, cumulative, _) in stats.stats.items():
        if func == name and any(path.endswith(s) for s in suffixes):
            total = (total or 0.0) + cumulative
    return total


def main() -> None:
    which = sys.argv[1] if len(sys.argv) > 1 else "tb"
    stats, cpu = profile(which)
    calls = N * REPEATS
    per = 1e6 / calls
    import toolbench

    print(f"{which}: toolbench from {Path(toolbench.__file__).parent.parent}; "
          f"{cpu * per:.0f} µs of process CPU per call under cProfile")
    chain = CHAIN if which == "tb" else SDK_CHAIN
    values = [(label, _inclusive(stats, suffix, func)) for label, suffix, func in chain]
    for (label, value), (_, below) in zip(values, [*values[1:], ("", 0.0)], strict=True):
        if value is None:
            print(f"  {'—':>8}  {label}")
            continue
        own = value - (below or 0.0)
        print(f"  {own * per:8.1f}  {label}")
    for label, suffixes, func in TRANSPORT:
        value = _inclusive(stats, suffixes, func)
        if value is not None:
            print(f"  {value * per:8.1f}  {label} (per call)")
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    print(f"  {total * per:8.1f}  the loop thread's whole CPU under cProfile, per call")


if __name__ == "__main__":
    main()
