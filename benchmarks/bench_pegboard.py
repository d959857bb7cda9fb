"""PegBoard: cost of registering services, and of looking names up once they are registered.

Registers ``services x tools`` through in-process ToolClients (a small double: no I/O, so
the figures are the pegboard's own), then looks names up in a random order. A plain dict
lookup is measured alongside as the floor, so the pegboard's overhead is visible.

    python -m benchmarks.bench_pegboard            # 100 services x 100 tools, 1,000,000 lookups
    python -m benchmarks.bench_pegboard --quick    # small, a few seconds
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

import anyio

from toolbench._core.client import Result, ToolSpec
from toolbench._core.errors import Unreachable
from toolbench._core.ids import Destination, Provenance, ToolId
from toolbench._routing.pegboard import PegBoard


class Listing:
    """An in-process ToolClient for one server with a fixed tool list."""

    def __init__(self, server: str, tools: list[str]) -> None:
        self.server = server
        self.specs = [ToolSpec(t, f"{t} on {server}", {"type": "object"}) for t in tools]

    def servers(self) -> Iterable[str]:
        return [self.server]

    def destination(self, tool: ToolId) -> Destination:
        return Destination.LOCAL

    async def list_tools(self, server: str) -> list[ToolSpec]:
        return list(self.specs)

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],
                   provenance: Provenance | None = None) -> Result:
        return Result([{"type": "text", "text": tool.tool}], tool=tool)


def _per_op_ns(total_ns: int, ops: int) -> float:
    return total_ns / max(ops, 1)


def run(quick: bool = False) -> dict[str, Any]:
    services, per_service, lookups = (20, 50, 100_000) if quick else (100, 100, 1_000_000)
    # Half the tool names are shared by every server, so related()/same_named() have work.
    tool_names = [f"tool_{i:03d}" if i % 2 else f"shared_{i:03d}" for i in range(per_service)]
    clients = [Listing(f"server{s:03d}", tool_names) for s in range(services)]
    pb = PegBoard()
    add_ns: list[int] = []

    async def register() -> None:
        for client in clients:
            started = time.perf_counter_ns()
            await pb.add_service(client.server, client)
            add_ns.append(time.perf_counter_ns() - started)

    anyio.run(register)
    assert pb.tool_count() == services * per_service

    names = pb.list_all_tools()
    rng = random.Random(42)
    order = [names[rng.randrange(len(names))] for _ in range(lookups)]

    get_tool = pb.get_tool
    started = time.perf_counter_ns()
    for name in order:
        get_tool(name)
    get_tool_ns = time.perf_counter_ns() - started

    route = pb.get_tool_route
    started = time.perf_counter_ns()
    for name in order:
        route(name)
    route_ns = time.perf_counter_ns() - started

    floor = {n: pb.get_tool(n) for n in names}
    started = time.perf_counter_ns()
    for name in order:
        floor[name]
    dict_ns = time.perf_counter_ns() - started

    groups = [order[i:i + 10] for i in range(0, min(lookups, 100_000), 10)]
    started = time.perf_counter_ns()
    for group in groups:
        pb.select_tools(group)
    select_ns = time.perf_counter_ns() - started

    related_sample = order[: min(lookups, 20_000)]
    started = time.perf_counter_ns()
    for name in related_sample:
        pb.related(name)
    related_ns = time.perf_counter_ns() - started

    started = time.perf_counter_ns()
    misses = 20 if quick else 100
    for i in range(misses):
        with contextlib.suppress(Unreachable):
            pb.get_tool(f"server{i % services:03d}-tool_99{i}")
    miss_ns = time.perf_counter_ns() - started

    # Lookups while another thread keeps refreshing services (copy-on-write swaps).
    stop = threading.Event()
    refreshes = 0

    def churn() -> None:
        nonlocal refreshes

        async def loop() -> None:
            nonlocal refreshes
            while not stop.is_set():
                await pb.refresh(clients[refreshes % services].server)
                refreshes += 1

        anyio.run(loop)

    writer = threading.Thread(target=churn, daemon=True)
    writer.start()
    contended = order[: min(lookups, 200_000)]
    started = time.perf_counter_ns()
    for name in contended:
        get_tool(name)
    contended_ns = time.perf_counter_ns() - started
    stop.set()
    writer.join(30)

    half = len(add_ns) // 2
    return {
        "services": services,
        "tools_per_service": per_service,
        "tools": pb.tool_count(),
        "lookups": lookups,
        "get_tool_ns": round(_per_op_ns(get_tool_ns, lookups), 1),
        "get_tool_route_ns": round(_per_op_ns(route_ns, lookups), 1),
        "dict_floor_ns": round(_per_op_ns(dict_ns, lookups), 1),
        "select_tools_10_us": round(_per_op_ns(select_ns, len(groups)) / 1000, 2),
        "related_us": round(_per_op_ns(related_ns, len(related_sample)) / 1000, 2),
        "unknown_name_with_suggestions_ms": round(_per_op_ns(miss_ns, misses) / 1e6, 3),
        "get_tool_during_refresh_churn_ns": round(_per_op_ns(contended_ns, len(contended)), 1),
        "refreshes_during_churn": refreshes,
        "add_service_ms_mean": round(statistics.fmean(add_ns) / 1e6, 3),
        "add_service_ms_first_half": round(statistics.fmean(add_ns[:half]) / 1e6, 3),
        "add_service_ms_second_half": round(statistics.fmean(add_ns[half:]) / 1e6, 3),
        "registration_us_per_tool": round(sum(add_ns) / pb.tool_count() / 1000, 2),
        "registration_total_s": round(sum(add_ns) / 1e9, 3),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small run, a few seconds")
    args = parser.parse_args(argv)
    print(json.dumps(run(quick=args.quick), indent=2))


if __name__ == "__main__":
    main()
