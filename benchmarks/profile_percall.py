"""Where a call's microseconds go: py-spy samples, sorted into the call's layers.

    python -m benchmarks.profile_percall inproc       # sync Bench.call, in-process MCPServer
    python -m benchmarks.profile_percall map          # Bench.map of 3,000 calls, fast server
    python -m benchmarks.profile_percall stdio        # sync Bench.call, the SDK's stdio server
    python -m benchmarks.profile_percall stdio_fast   # sync Bench.call, the stdlib fast server
    python -m benchmarks.profile_percall sdk_inproc   # the raw SDK doing the same, to set
    python -m benchmarks.profile_percall sdk_map      #   its own layers beside toolbench's
    python -m benchmarks.profile_percall sdk_stdio    #   (sdk_stdio: the stdlib fast server)
    python -m benchmarks.profile_percall real_map     # Bench.map of 3,000 echo calls to
    python -m benchmarks.profile_percall sdk_real_map #   server-everything (npm), and the SDK's
    ... [--journal] [--seconds 15] [--gil] [--repo /path/to/an/exported/commit]

It runs a workload under ``py-spy record --threads --format raw`` (py-spy is in the ``bench``
extra; /work/main/.venv/bin must be on PATH), then charges every sample to the innermost frame
that belongs to a layer (the rules below, leaf to root; the first frame that matches any rule
decides), and scales the shares by the workload's measured process CPU time per call.
``--gil`` samples only the thread that holds the GIL. ``--journal`` gives the bench a journal
(``Bench(journal=<a temporary file>.sqlite)``), so its intent and outcome costs show.

The layers are issue 35's: argument check; pegboard and router; journal intent (and the
journal's writer thread, which commits intents and outcomes together, on a line of its own);
the hop (both threads' wake-ups); the SDK (client side: everything under ``mcp/``, with the
pydantic and anyio work it calls); the toolbench stdio transport; the record; the outcome;
McpClient's own envelope (``toolbench/_transports/mcp/``: calls.py, tracking.py, ...); the
bench's own (calls/calling.py, faces.py); the asyncio loop. py-spy prints paths relative to
``sys.path`` (``mcp/client/session.py``, ``toolbench/_bench/calls/calling.py``): the SDK is
matched as a path *starting* ``mcp/`` (or ``site-packages/mcp/``), so
``toolbench/_transports/mcp/...`` is never counted as the SDK. Library frames with no rule of
their own (anyio, pydantic, json) are charged to the first caller up the stack that has one.

Caveats: leaf frames blocked in C (``select``, a lock's acquire, a queue's get, ``waitpid``)
are set aside: py-spy counts some of them as active here, but they spend no CPU; the CPU a
thread spends waking up inside one is therefore not charged to the hop but spread over all
layers in proportion (the last line says how much CPU the charged samples fall short of).
The untimed warm-up's samples on the main thread are dropped (its frames are under
``warm_up``), but samples of other threads and of tasks (the loop thread, the journal's
writer, the SDK's ``map`` tasks) are not told apart from the timed steps': one step of the
same work against ``--seconds`` of them, so the shares barely move, but the charged samples
can exceed what the timed CPU gives. Samples a thread spends in ``select`` count toward "asyncio
loop" when py-spy judges the thread active. The "Per-call cost" section of BENCHMARKS.md
quotes this script's output.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

SDK_PATH = r"(^|site-packages/)mcp/"
"""The SDK's files, never toolbench's ``toolbench/_transports/mcp/``."""

OTHER_TB = "other toolbench"
FALLBACK = {OTHER_TB, "the driver's own loop (not a layer)"}
"""Layers charged only when no other rule matches anywhere up the stack (a journal's
``IntentLog.append`` belongs to the intent or the outcome that called it)."""

RULES: list[tuple[str, str | None, str | None]] = [
    # (layer, regex on the function's name, regex on its file's path): either matching is a hit;
    # for one frame, the rules are tried in this order.
    ("server side (the SDK's MCPServer, in process)",
     r"DirectDispatcher\._dispatch_request|modern_on_request|ServerRunner|InMemoryTransport",
     r"(^|site-packages/)mcp/server/"),
    ("output check (validate_output)", r"_check_output$|^validate_output$", None),
    ("argument check (validate_arguments, check_arguments)",
     r"^validate_arguments$|^check_arguments$", r"^toolbench/_core/(schema/|arguments\.py)"),
    ("record (make_record, call id, timestamp)",
     r"^make_record$|^new_call_id$|^utcnow$|^_record$", r"^toolbench/_bench/journal/record\.py"),
    ("outcome (RecordStore.append + journal outcome)",
     r"RecordStore\.(append|_index)$|Journal\.outcome$|^outcome_line$", None),
    ("journal intent (RecordStore.intent, Journal.intent, intent log)",
     r"RecordStore\.intent$|Journal\.intent$|^intent_line$", None),
    ("journal intent: the writer thread (SQLite commits of intents and outcomes)",
     r"^JournalWriter\.", r"^toolbench/_bench/journal/(writer|sqlite_pages|codec)\.py"),
    ("provenance", r"_provenance$|^Provenance\.|^_cell_number$|^provenance_of$", None),
    ("pegboard and router (name resolution + ToolRouter)",
     r"Calls\.resolve$|PegBoard|ToolRouter|^call_client$|^takes_timeout$",
     r"^toolbench/_routing/"),
    ("CapacityLimiter (the SDK peer pays it too)", r"CapacityLimiter", None),
    ("toolbench stdio transport", None, r"^toolbench/_transports/wire/"),
    ("the SDK (client side: Client, ClientSession, streams, with its pydantic)", None, SDK_PATH),
    ("McpClient's own envelope (toolbench/_transports/mcp/: calls.py, tracking.py, ...)", None,
     r"^toolbench/_transports/mcp/"),
    ("the hop to the loop and back (both threads' wake-ups)",
     r"^_Hop\.|_signal_when_done|run_coroutine_threadsafe|_chain_future|call_soon_threadsafe|"
     r"_write_to_self|_read_from_self|^SharedLoop\.run$|^wait_in_slices$|^sync_face$|"
     r"Future\.result$|Event\.wait$|Condition\.wait$|Lock\.acquire$", None),
    ("async face on the loop (SharedLoop.arun)", r"^SharedLoop\.arun$|^async_face$", None),
    ("map machinery (run_jobs, bind, frame)", r"^run_jobs$|_batch|Bench\._map$|^frame$",
     r"^toolbench/_bench/many/"),
    ("the bench's own (calls/calling.py, faces.py, bench.py)", None,
     r"^toolbench/_bench/(calls/|bench\.py)"),
    (OTHER_TB, None, r"^toolbench/"),
    ("pipe I/O (asyncio's streams and pipe transports: os.read/os.write to the child)", None,
     r"^asyncio/(unix_events|streams)\.py"),
    ("asyncio loop itself (scheduling, select)",
     r"BaseEventLoop|Handle\._run|_run_once|select", r"^asyncio/|^selectors\.py"),
    ("the driver's own loop (not a layer)", None, r"driver\.py$"),
]

WAITS = re.compile(
    r"^(EpollSelector\.select|PollSelector\.select|SelectSelector\.select|_do_waitpid|_worker|"
    r"wait_in_slices|Condition\.wait|Event\.wait|Thread\.join|_wait_for_tstate_lock|"
    r"Queue\.get|SimpleQueue\.get|JournalWriter\._run) \((selectors|asyncio/unix_events|"
    r"concurrent/futures/thread|toolbench/_loop|threading|queue|"
    r"toolbench/_bench/journal/writer)\.py")
"""Leaf frames that are a thread blocked in C (epoll, a lock, a queue, waitpid): py-spy counts
some of them as active here, but they spend no CPU. Set aside, never charged to a layer."""
WAITING = "waiting (blocked in select, a lock, a queue; set aside, not charged)"

WORKLOADS = ("inproc", "map", "stdio", "stdio_fast", "sdk_inproc", "sdk_map", "sdk_stdio",
             "real_map", "sdk_real_map")

DRIVER = r'''
import json, os, sys, time
ARGS = json.loads(@ARGS@)
sys.path.insert(0, ARGS["repo"])
import jsonschema.validators  # imported before any thread races to it (older checkouts)
from benchmarks import common
what, secs = ARGS["what"], ARGS["secs"]
FAST = [sys.executable, os.path.join(ARGS["repo"], "benchmarks", "servers", "fast_server.py"),
        "--name", "fast"]
REAL = what.endswith("real_map")
if REAL:  # server-everything's echo (npm; tests/servers/everything.py finds it)
    sys.path.insert(0, os.path.join(ARGS["here"], "tests"))
    from servers import everything
    FAST = everything.stdio_command()
TOOL, ARG = ("echo", "message") if REAL else ("work", "x")


def check(value, want):
    if value != want:
        raise RuntimeError(f"a profiled call answered {value!r}, not {want!r}")


def report(n, wall, cpu):
    print("RESULT", n, wall / n * 1e6, cpu / n * 1e6, flush=True)


def toolbench():
    from toolbench import Bench
    b = Bench(journal=ARGS["journal"]) if ARGS["journal"] else Bench()
    if what in ("map", "real_map"):
        work = [{ARG: i if not REAL else f"m{i}"} for i in range(3000)]

        def step():
            df = b.map("s-" + TOOL, work, concurrency=8, progress=False)
            check(bool(df["ok"].all()), True)
            if not REAL:
                check(df["structured"].iloc[-1], {"result": 3000})
        per = 3000
    else:
        def step():
            for i in range(100):
                check(b.call("s-add", {"a": i, "b": 2}).structured, {"result": i + 2})
        per = 100

    def warm_up():
        target = {"map": FAST, "stdio_fast": FAST, "real_map": FAST,
                  "inproc": common.inprocess_server("x"),
                  "stdio": common.server_argv(0)}[what]
        b.connect("s", target)
        step()
    warm_up()
    end, n = time.time() + secs, 0
    wall, cpu = time.perf_counter(), time.process_time()
    while time.time() < end:
        step()
        n += per
    report(n, time.perf_counter() - wall, time.process_time() - cpu)
    b.close()


def sdk():
    import anyio
    from mcp import Client, StdioServerParameters, stdio_client

    async def main():
        if what == "sdk_inproc":
            target = common.inprocess_server("x")
        else:
            errlog = open(os.devnull, "w")
            target = stdio_client(StdioServerParameters(command=FAST[0], args=FAST[1:]),
                                  errlog=errlog)
        async with Client(target) as client:
            if what in ("sdk_map", "sdk_real_map"):
                async def step():
                    limiter, out = anyio.CapacityLimiter(8), [None] * 3000

                    async def one(i):
                        async with limiter:
                            out[i] = await client.call_tool(
                                TOOL, {ARG: i if not REAL else f"m{i}"})
                    async with anyio.create_task_group() as tg:
                        for i in range(3000):
                            tg.start_soon(one, i)
                    for i, r in enumerate(out):
                        check(r.is_error, False)
                        if not REAL:
                            check(r.structured_content, {"result": i + 1})
                per = 3000
            else:
                async def step():
                    for i in range(100):
                        r = await client.call_tool("add", {"a": i, "b": 2})
                        check((r.is_error, r.structured_content), (False, {"result": i + 2}))
                per = 100

            async def warm_up():
                await step()
            await warm_up()
            end, n = time.time() + secs, 0
            wall, cpu = time.perf_counter(), time.process_time()
            while time.time() < end:
                await step()
                n += per
            report(n, time.perf_counter() - wall, time.process_time() - cpu)

    anyio.run(main)


sdk() if what.startswith("sdk_") else toolbench()
'''


def _frame(frame: str) -> tuple[str, str]:
    """``"Calls.invoke (toolbench/_bench/calls/calling.py:120)"`` -> (function, path)."""
    func, _, rest = frame.partition(" (")
    return func, rest.rsplit(":", 1)[0].rstrip(")")


def breakdown(raw: Path) -> tuple[collections.Counter[str], int]:
    rules = [(layer, re.compile(f) if f else None, re.compile(p) if p else None)
             for layer, f, p in RULES]
    specific = [r for r in rules if r[0] not in FALLBACK]
    fallback = [r for r in rules if r[0] in FALLBACK]
    layers: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if "warm-up" in frames[0] or "preload" in frames[0] or "_find_and_load" in stack:
            continue  # one-off imports, not calls
        if "warm_up (" in stack:
            continue  # the driver's untimed connect and first step
        n = int(count)
        if len(frames) < 2 or WAITS.search(frames[-1]):
            layers[WAITING] += n
            continue
        total += n
        parsed = [_frame(frame) for frame in reversed(frames[1:])]
        layers[_layer(parsed, specific) or _layer(parsed, fallback) or "other"] += n
    return layers, total


def _layer(frames: list[tuple[str, str]],
           rules: list[tuple[str, re.Pattern[str] | None, re.Pattern[str] | None]]) -> str | None:
    """The layer of the innermost frame (leaf first) that one of ``rules`` matches."""
    for func, path in frames:
        for layer, f, p in rules:
            if (f is not None and f.search(func)) or (p is not None and p.search(path)):
                return layer
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=WORKLOADS)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=int, default=400, help="samples per second")
    parser.add_argument("--gil", action="store_true", help="sample the GIL holder only")
    parser.add_argument("--journal", action="store_true",
                        help="the bench keeps a journal (a temporary SQLite file)")
    parser.add_argument("--raw", default="", help="keep py-spy's raw samples in this file")
    parser.add_argument("--repo", default=str(REPO),
                        help="the checkout to profile (a before/after: an exported commit)")
    args = parser.parse_args()
    if args.journal and args.workload.startswith("sdk_"):
        parser.error("--journal is toolbench's; the SDK's workloads keep none")
    with tempfile.TemporaryDirectory() as tmp:
        script, raw = Path(tmp) / "driver.py", Path(tmp) / "raw.txt"
        settings = {"repo": args.repo, "here": str(REPO), "what": args.workload,
                    "secs": args.seconds,
                    "journal": str(Path(tmp) / "journal.sqlite") if args.journal else None}
        script.write_text(DRIVER.replace("@ARGS@", repr(json.dumps(settings))))
        cmd = ["py-spy", "record", "--threads", "--format", "raw", "-o", str(raw),
               "-r", str(args.rate), *(["--gil"] if args.gil else []), "--",
               sys.executable, str(script)]
        started = time.time()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 120)
        lines = [x for x in out.stdout.splitlines() if x.startswith("RESULT")]
        if out.returncode != 0 or not lines:
            sys.exit(f"the profiled run failed ({out.returncode}):\n{out.stdout[-2000:]}"
                     f"\n{out.stderr[-3000:]}")
        _, calls, wall_us, cpu_us = lines[-1].split()
        layers, total = breakdown(raw)
        if args.raw:
            Path(args.raw).write_text(raw.read_text())
    waiting = layers.pop(WAITING, 0)
    print(json.dumps({
        "workload": args.workload, "journal": args.journal, "calls": int(calls),
        "wall_us_per_call": round(float(wall_us), 1), "cpu_us_per_call": round(float(cpu_us), 1),
        "samples": total, "waiting_samples_set_aside": waiting,
        # What the timed span's CPU would give at --rate (not --gil): far fewer charged samples
        # than this means py-spy fell behind; far more, that some waiting went uncaught.
        "samples_expected_from_cpu": round(int(calls) * float(cpu_us) / 1e6 * args.rate),
        "took_s": round(time.time() - started, 1)}))
    for layer, n in layers.most_common():
        print(f"{n / total * 100:5.1f}%  {n / total * float(cpu_us):7.1f} µs CPU/call  {layer}")
    expected = int(calls) * float(cpu_us) / 1e6 * args.rate
    if not args.gil and expected and total < expected:
        print(f"(charged {total} samples against {expected:.0f} the timed CPU gives at "
              f"{args.rate}/s: {1 - total / expected:.0%} of the CPU is spread over the layers "
              "in proportion; wake-ups inside set-aside waits are the likely part)")
    elif not args.gil and expected:
        print(f"(charged {total} samples, more than the {expected:.0f} the timed CPU gives at "
              f"{args.rate}/s: the warm-up's samples off the main thread, the same work, are "
              "in; so may be waiting py-spy took for running)")


if __name__ == "__main__":
    main()
