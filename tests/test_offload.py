"""A big listing is worked on beside the shared loop, never on it (issue 33, DESIGN's "Bounded
work on what a server or a file sends"). Timings are in benchmarks/bench_neighbour_latency.py;
these tests check where the work runs and that its result is the same."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolbench._bench.overtime.history as history_module
import toolbench._routing.pegboard as pegboard_module
import toolbench._transports.mcp.methods.listing as listing_module
from toolbench import Bench, PinWarning, Refused
from toolbench._core.offload import OFF_LOOP_ITEMS, off_loop
from toolbench._loop import THREAD_NAME

SERVERS = Path(__file__).parent / "servers"
BIG = [sys.executable, str(SERVERS / "big_catalog_server.py")]


def _recording(where: dict[str, set[str]], name: str, fn: Callable[..., Any]) -> Any:
    def recorded(*args: Any, **kwargs: Any) -> Any:
        where.setdefault(name, set()).add(threading.current_thread().name)
        return fn(*args, **kwargs)
    return recorded


def test_small_work_stays_and_big_work_leaves_the_calling_thread() -> None:
    async def main() -> tuple[str, str]:
        def here() -> str:
            return threading.current_thread().name
        return await off_loop(here, OFF_LOOP_ITEMS - 1), await off_loop(here, OFF_LOOP_ITEMS)

    small, big = anyio.run(main)
    assert small == threading.current_thread().name
    assert big != threading.current_thread().name


@pytest.mark.slow
@pytest.mark.parametrize("pins", [False, True])
def test_a_10000_tool_listing_is_read_and_fingerprinted_off_the_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pins: bool) -> None:
    where: dict[str, set[str]] = {}
    for module, name in ((listing_module, "_read_tools"), (listing_module, "spec"),
                         (pegboard_module, "entries_for"),
                         (history_module, "fingerprint_tools")):
        monkeypatch.setattr(module, name, _recording(where, name, getattr(module, name)))
    bench = Bench(pins=str(tmp_path / "pins.json") if pins else None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert bench.connect("big", [*BIG, "--tools", "10000"], max_tools=20_000) == 10_000
        assert set(where) == {"_read_tools", "spec", "entries_for", "fingerprint_tools"}
        for name, threads in where.items():
            assert THREAD_NAME not in threads, f"{name} ran on the shared loop"
        catalog = bench.catalog()
        assert len(catalog) == 10_000
        if pins:
            assert set(bench.pins["state"]) == {"ok"} and len(bench.pins) == 10_000
        assert len(bench.snapshot("big")) == 10_000
    finally:
        bench.close()


@pytest.mark.slow
def test_a_re_list_of_10000_tools_is_pinned_and_gated_as_before(tmp_path: Path) -> None:
    """The re-list's work leaves the loop, and the changed tool is still caught and blocked."""
    bench = Bench(pins=str(tmp_path / "pins.json"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bench.connect("big", [*BIG, "--tools", "10000", "--flipper"], max_tools=20_000)
        with pytest.warns(PinWarning, match="t0") as seen:
            bench.call("big-flip")
            # The re-list runs in the background: the verdict lands on the loop first, and the
            # warning once its diff is built on the worker thread, so wait for both.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (
                    "changed" in set(bench.pins["state"])
                    and any(issubclass(w.category, PinWarning) for w in seen)):
                time.sleep(0.05)
        states = bench.pins.set_index("name")["state"]
        assert states["t0"] == "changed" and states["t1"] == "ok"
        with pytest.raises(Refused, match="t0"):
            bench.call("big-t0")
    finally:
        bench.close()


@pytest.mark.slow
def test_the_import_time_heap_is_frozen_once_the_preload_is_done() -> None:
    code = ("import gc, toolbench, toolbench._core.schema.preload as p\n"
            "b = toolbench.Bench(); p.start().result(120)\n"
            "print(gc.get_freeze_count())\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    frozen = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120)
    assert int(frozen.stdout.split()[-1]) > 10_000, frozen.stderr
    left = subprocess.run([sys.executable, "-c", code], env={**env, "TOOLBENCH_GC_FREEZE": "0"},
                          capture_output=True, text=True, timeout=120)
    assert int(left.stdout.split()[-1]) == 0, left.stderr
    assert gc.isenabled()
