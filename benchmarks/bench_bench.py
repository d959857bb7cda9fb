"""The Bench's own costs: a call against the SDK's, a 10,000-tool catalog, 100,000 records.

1. ``Bench.call`` against ``mcp.Client.call_tool`` on the same in-process server, recording
   included, without and with a journal (the targets set for it: ≤ 1.2 and ≤ 1.3). Both modes:
   ``auto`` is how ``Bench.connect(name, MCPServer)`` connects (direct dispatch, no JSON-RPC);
   ``legacy`` is the JSON-RPC wire path, on both sides (the bench gets an McpClient subclass).
2. A catalog of 10,000 tools (20 servers x 500) as a DataFrame and as HTML, against plain
   pandas building the same rows (the floor).
3. Recording 100,000 calls: building records, ``RecordStore.append`` in memory and with a
   SQLite journal, and the records DataFrame: µs per record.

    python -m benchmarks.bench_bench [--quick]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from benchmarks import common
from toolbench import Bench
from toolbench._bench.journal.journal import Journal
from toolbench._bench.journal.record import frame, make_record
from toolbench._bench.journal.store import RecordStore
from toolbench._core.client import Result, ToolSpec
from toolbench._core.ids import Destination, Provenance, ToolId
from toolbench._notebook.views.display import html_table
from toolbench._transports.mcp.client import McpClient

W_CALL = "Bench.call vs mcp.Client.call_tool, in process ({mode})"
W_CPU = "CPU time per call (all threads), in process ({mode})"
W_CATALOG = "5. catalog of {n:,} tools"
W_RECORD = "6. recording {n:,} calls"


SDK = "mcp.Client.call_tool (SDK, floor)"


# -- 1. a call against the SDK's --------------------------------------------------------------
Clock = tuple[float, float]
"""(wall seconds, process CPU seconds): CPU time is what a busy shared machine distorts least."""


def _clock() -> Clock:
    return time.perf_counter(), time.process_time()


def _since(start: Clock) -> Clock:
    return time.perf_counter() - start[0], time.process_time() - start[1]


def _sdk_round(server: Any, mode: str, calls: int) -> Clock:
    async def main() -> Clock:
        async with Client(server, mode=mode) as client:
            await client.call_tool("add", {"a": 0, "b": 0})
            started = _clock()
            for i in range(calls):
                await client.call_tool("add", {"a": i, "b": 2})
            return _since(started)

    return anyio.run(main)


def _bench_round(bench: Bench, name: str, calls: int) -> Clock:
    started = _clock()
    for i in range(calls):
        bench.call(name, {"a": i, "b": 2})
    return _since(started)


def _bench_on_loop_round(bench: Bench, name: str, calls: int) -> Clock:
    async def body() -> Clock:
        started = _clock()
        for i in range(calls):
            await bench.acall(name, {"a": i, "b": 2})
        return _since(started)

    from toolbench._loop import get_loop

    return get_loop().run(body)


def call_overhead(figures: common.Figures, quick: bool) -> None:
    rounds = common.rounds_for(quick)
    calls = 100 if quick else 1000
    server = common.inprocess_server("inproc")
    for mode in ("auto", "legacy"):
        w, wc = W_CALL.format(mode=mode), W_CPU.format(mode=mode)
        common.progress(f"{w}: {rounds} rounds x {calls} calls")
        with tempfile.TemporaryDirectory() as tmp:
            plain, journaled = Bench(), Bench(journal=Path(tmp) / "calls.sqlite")
            try:
                for bench in (plain, journaled):
                    target: Any = server if mode == "auto" else McpClient(
                        server, name="s", protocol_mode="legacy")
                    bench.connect("s", target)
                    bench.call("s-add", {"a": 0, "b": 0})
                subjects: list[tuple[str, Any]] = [
                    (SDK, partial(_sdk_round, server, mode, calls)),
                    ("toolbench Bench.call", partial(_bench_round, plain, "s-add", calls)),
                    ("toolbench Bench.call + journal",
                     partial(_bench_round, journaled, "s-add", calls)),
                    ("toolbench Bench.acall on its loop",
                     partial(_bench_on_loop_round, plain, "s-add", calls)),
                ]
                for _ in range(rounds):
                    for subject, fn in subjects:
                        wall, cpu = fn()
                        figures.add(w, subject, "µs/call", common.per_call_us(wall, calls))
                        figures.add(wc, subject, "µs CPU/call", common.per_call_us(cpu, calls))
            finally:
                plain.close()
                journaled.close()
        for where, clock in ((w, "wall"), (wc, "CPU")):
            figures.ratio(f"Bench.call / SDK call_tool, in process, {mode}, {clock}", where,
                          "toolbench Bench.call", SDK, 1.2)
            figures.ratio(f"Bench.call + journal / SDK call_tool, in process, {mode}, {clock}",
                          where, "toolbench Bench.call + journal", SDK, 1.3)
            figures.ratio(f"Bench.acall on loop / SDK call_tool, in process, {mode}, {clock}",
                          where, "toolbench Bench.acall on its loop", SDK)


# -- 2. a big catalog -------------------------------------------------------------------------
class Listing:
    """An in-process ToolClient that only lists tools: the catalog's cost is the bench's own."""

    def __init__(self, server: str, count: int) -> None:
        self.server = server
        self.specs = [
            ToolSpec(
                f"tool_{i:04d}", f"Tool {i} of {server}: does <thing> number {i} " * 3,
                {"type": "object", "properties": {"query": {"type": "string"},
                                                  "limit": {"type": "integer"}},
                 "required": ["query"]},
                title=f"Tool {i}",
            )
            for i in range(count)
        ]

    def servers(self) -> Iterable[str]:
        return [self.server]

    def destination(self, tool: ToolId) -> Destination:
        return Destination.LOCAL

    async def list_tools(self, server: str) -> list[ToolSpec]:
        return list(self.specs)

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],
                   provenance: Provenance | None = None) -> Result:
        return Result([{"type": "text", "text": "ok"}], tool=tool)


def _plain_rows(listings: list[Listing]) -> list[dict[str, Any]]:
    return [{"name": f"{lst.server}-{s.name}", "server": lst.server, "tool": s.name,
             "title": s.title, "description": s.description, "parameters": s.parameters,
             "required": s.required, "input_schema": s.input_schema,
             "output_schema": s.output_schema, "annotations": s.annotations,
             "destination": "local"}
            for lst in listings for s in lst.specs]


def _catalog_round(figures: common.Figures, w: str, listings: list[Listing]) -> None:
    import pandas as pd

    with Bench() as bench:
        started = time.perf_counter()
        for lst in listings:
            bench.connect(lst.server, lst)
        figures.add(w, "toolbench connect (pegboard registration)", "ms",
                    (time.perf_counter() - started) * 1e3)
        started = time.perf_counter()
        df = bench.catalog()
        figures.add(w, CATALOG, "ms", (time.perf_counter() - started) * 1e3)
        assert len(df) == sum(len(lst.specs) for lst in listings)
        figures.add(w, "toolbench html_table(catalog), 50-row cap", "ms",
                    common.timed(lambda: html_table(df)) * 1e3)
        figures.add(w, HTML_ALL, "ms",
                    common.timed(lambda: html_table(df, max_rows=len(df))) * 1e3)
    started = time.perf_counter()
    plain = pd.DataFrame(_plain_rows(listings))
    figures.add(w, PANDAS, "ms", (time.perf_counter() - started) * 1e3)
    figures.add(w, PANDAS_HTML, "ms", common.timed(lambda: plain.to_html()) * 1e3)


CATALOG = "toolbench bench.catalog() -> DataFrame"
HTML_ALL = "toolbench html_table(catalog), every row"
PANDAS = "pandas DataFrame(list of dicts) (floor)"
PANDAS_HTML = "pandas DataFrame.to_html(), every row (reference)"


def catalog(figures: common.Figures, quick: bool) -> None:
    servers, per = (10, 100) if quick else (20, 500)
    w = W_CATALOG.format(n=servers * per)
    rounds = common.rounds_for(quick)
    common.progress(f"{w}: {rounds} rounds")
    listings = [Listing(name, per) for name in common.names("srv", servers)]
    for _ in range(rounds):
        _catalog_round(figures, w, listings)
    figures.ratio("catalog() / plain pandas DataFrame", w, CATALOG, PANDAS)
    figures.ratio("html_table every row / pandas to_html", w, HTML_ALL, PANDAS_HTML)


# -- 3. many records --------------------------------------------------------------------------
def _records(n: int) -> list[Any]:
    started = datetime.now(UTC)
    result = Result([{"type": "text", "text": "3"}], {"result": 3}, False, 0.001,
                    ToolId("srv", "add"))
    return [make_record(call_id=f"{i:032x}", batch=None, started=started, server="srv",
                        tool="add", name="srv-add", arguments={"a": i, "b": 2}, latency_s=0.001,
                        provenance={"cell": 7}, result=result) for i in range(n)]


def _recording_round(figures: common.Figures, w: str, n: int) -> None:
    us = "µs/record"
    started = time.perf_counter()
    records = _records(n)
    figures.add(w, "make_record (a result folded into a row)", us,
                (time.perf_counter() - started) / n * 1e6)

    def append_all(store: RecordStore) -> float:
        started = time.perf_counter()
        for record in records:
            store.append(record)
        return (time.perf_counter() - started) / n * 1e6

    store = RecordStore()
    figures.add(w, "RecordStore.append, in memory", us, append_all(store))
    figures.add(w, "frame() -> records DataFrame", us,
                common.timed(lambda: frame(store.snapshot())) / n * 1e6)
    with tempfile.TemporaryDirectory() as tmp:
        journaled = RecordStore(Journal(Path(tmp) / "j.sqlite"))
        try:
            # Appending hands the record to the journal's writer thread; closing waits until
            # every one is committed, so both count (group commit writes them in batches).
            started = time.perf_counter()
            for record in records:
                journaled.append(record)
            journaled.close()
            figures.add(w, "RecordStore.append + SQLite journal (WAL), until committed", us,
                        (time.perf_counter() - started) / n * 1e6)
        finally:
            journaled.close()
        figures.add(w, "Journal load (reopening the file)", us, common.timed(
            lambda: RecordStore(Journal(Path(tmp) / "j.sqlite")).close()) / n * 1e6)


def recording(figures: common.Figures, quick: bool) -> None:
    n = 5_000 if quick else 100_000
    w = W_RECORD.format(n=n)
    rounds = common.rounds_for(quick, full=3)
    common.progress(f"{w}: {rounds} rounds")
    for _ in range(rounds):
        _recording_round(figures, w, n)


def run(quick: bool = False) -> dict[str, Any]:
    figures = common.Figures()
    call_overhead(figures, quick)
    catalog(figures, quick)
    recording(figures, quick)
    return figures.as_dict()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small and fast (a smoke test)")
    print(json.dumps(run(parser.parse_args().quick), indent=1, default=str))
