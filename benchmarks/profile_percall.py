"""Where a toolbench call's microseconds go: py-spy samples, sorted into the call's layers.

    python -m benchmarks.profile_percall inproc     # synchronous Bench.call, in-process MCPServer
    python -m benchmarks.profile_percall map        # Bench.map of 3,000 calls on the fast server
    python -m benchmarks.profile_percall stdio      # synchronous Bench.call, the SDK's stdio server

It runs a workload under ``py-spy record --threads --format raw`` (CPU samples: idle threads
are not sampled; ``py-spy`` is in the ``bench`` extra), then charges every sample to the
innermost frame that belongs to a layer (the rules below, leaf to root), and scales the
shares by the workload's measured CPU time per call. ``--gil`` samples only the thread that
holds the GIL. The "Per-call cost" section of BENCHMARKS.md quotes its output.
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

RULES = [  # (layer, regex on "function (file"), checked from the leaf up; the first match wins
    ("server side (the SDK's MCPServer, in process)",
     r"DirectDispatcher\._dispatch_request|modern_on_request|ServerRunner|InMemoryTransport"),
    ("output check (validate_output)", r"McpClient\._check_output|validate_output"),
    ("argument check (validate_arguments)", r"^validate_arguments|^_errors \(toolbench"),
    ("check_arguments (JSON-ness walk)", r"^check_arguments"),
    ("record: make_record", r"^make_record"),
    ("record: RecordStore.append/intent", r"RecordStore\.(append|intent)"),
    ("call id + timestamp", r"^new_call_id|^utcnow|^uuid4"),
    ("provenance", r"Bench\._provenance|Provenance\.|_cell_number"),
    ("resolve the name (pegboard)", r"Calls\.resolve|naming|PegBoard"),
    ("result conversion (McpClient._result)", r"McpClient\._result"),
    ("toolbench stdio transport + tracked streams",
     r"toolbench/_transports/wire/stdio|toolbench/_transports/mcp/errors|_Watched|_TrackedRead|_TrackedSend|ReadWrapper"),
    ("CapacityLimiter (the SDK peer pays it too)", r"CapacityLimiter"),
    ("SDK client (Client/ClientSession/dispatcher, pydantic)",
     r"Client\.call_tool|ClientSession\.|DirectDispatcher|send_request|mcp/client|mcp/shared|"
     r"mcp_types"),
    ("McpClient._call's own (timeout scope, ticket, session)",
     r"McpClient\._call|McpClient\._session|_meta \(toolbench"),
    ("router (call_client, egress)", r"ToolRouter|call_client|takes_timeout"),
    ("async face on the loop (arun)", r"SharedLoop\.arun|async_face"),
    ("Calls.invoke's own (bookkeeping)", r"Calls\.invoke"),
    ("Bench._call's own", r"Bench\._call"),
    ("map machinery (run_jobs, bind, frame)", r"run_jobs|_batch|bind\.|Bench\._map|frame \(tool"),
    ("the hop to the loop and back (both threads)",
     r"_Hop|_signal_when_done|run_coroutine_threadsafe|_chain_future|call_soon_threadsafe|"
     r"SharedLoop\.run|sync_face|Future\.result|Event\.wait \(threading|"
     r"Condition\.wait \(threading"),
    ("asyncio loop itself (scheduling, select)",
     r"BaseEventLoop|Handle\._run|_run_once|select"),
]

DRIVER = r'''
import sys, time
sys.path.insert(0, {repo!r})
import jsonschema.validators  # imported before any thread races to it (older checkouts)
from benchmarks import common
from benchmarks.bench_sweep import fast_argv
from toolbench import Bench
what, secs = {what!r}, {secs!r}
b = Bench()
if what == "map":
    b.connect("s", fast_argv())
    work = [{{"x": i}} for i in range(3000)]
    step = lambda: b.map("s-work", work, concurrency=8, progress=False)
    per = 3000
else:
    b.connect("s", common.inprocess_server("x") if what == "inproc" else common.server_argv(0))
    step = lambda: [b.call("s-add", {{"a": i, "b": 2}}) for i in range(100)]
    per = 100
step()
end, n = time.time() + secs, 0
wall, cpu = time.perf_counter(), time.process_time()
while time.time() < end:
    step(); n += per
print("RESULT", n, (time.perf_counter() - wall) / n * 1e6, (time.process_time() - cpu) / n * 1e6)
b.close()
'''


def breakdown(raw: Path) -> tuple[collections.Counter[str], int]:
    rules = [(layer, re.compile(rx)) for layer, rx in RULES]
    layers: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if "warm-up" in frames[0] or "preload" in frames[0] or "_find_and_load" in stack:
            continue  # one-off imports, not calls
        if not any(m in stack for m in ("Bench._call", "Bench._map", "_Hop", "SharedLoop.run",
                                        "BaseEventLoop")):
            continue
        n = int(count)
        total += n
        for frame in reversed(frames[1:]):
            name = frame.split(" (")[0] + " (" + frame.split(" (")[-1].split(":")[0]
            hit = next((layer for layer, rx in rules if rx.search(name)), None)
            if hit is not None:
                layers[hit] += n
                break
        else:
            layers["other"] += n
    return layers, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=("inproc", "map", "stdio"))
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=int, default=400, help="samples per second")
    parser.add_argument("--gil", action="store_true", help="sample the GIL holder only")
    parser.add_argument("--repo", default=str(REPO),
                        help="the checkout to profile (a before/after: an exported commit)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script, raw = Path(tmp) / "driver.py", Path(tmp) / "raw.txt"
        script.write_text(DRIVER.format(repo=args.repo, what=args.workload,
                                        secs=args.seconds))
        cmd = ["py-spy", "record", "--threads", "--format", "raw", "-o", str(raw),
               "-r", str(args.rate), *(["--gil"] if args.gil else []), "--",
               sys.executable, str(script)]
        started = time.time()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                             timeout=args.seconds + 120)
        line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT"))
        _, calls, wall_us, cpu_us = line.split()
        layers, total = breakdown(raw)
    print(json.dumps({"workload": args.workload, "calls": int(calls),
                      "wall_us_per_call": round(float(wall_us), 1),
                      "cpu_us_per_call": round(float(cpu_us), 1), "samples": total,
                      "took_s": round(time.time() - started, 1)}))
    for layer, n in layers.most_common():
        print(f"{n / total * 100:5.1f}%  {n / total * float(cpu_us):7.1f} µs CPU/call  {layer}")


if __name__ == "__main__":
    main()
