"""A flooding view is bounded per view (DESIGN.md, "MCP Apps", "The bridge"; issue 43 item 6):
repeated refusals fold into few ``Refused`` records that carry their count, and queued
notifications are capped, counted and noted once. Driven without a browser, through
``view.ahandle`` and the widget's own comm handler, against tests/servers/hostile_app.py
(a real stdio child) beside the ``atlas`` demo as a neighbour."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench._bench.apps.bridge import MAX_IN_FLIGHT
from toolbench._bench.apps.guards import (
    DROPPED,
    FOLD_S,
    MAX_QUEUED_NOTIFICATIONS,
    RECORDS_BURST,
    SLOW_AFTER,
    SLOW_REPLY_S,
    Refusals,
)
from toolbench._loop import get_loop

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = [sys.executable, str(ROOT / "tests" / "servers" / "hostile_app.py")]
ATLAS = [sys.executable, "-m", "toolbench.demo.atlas"]
ENV = {"PYTHONPATH": str(ROOT)}
FLOOD = 2_000


def rpc(id_: Any, method: str, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id_ is not None:
        message["id"] = id_
    return message


async def _handshake(view: Any) -> None:
    await view.ahandle(rpc(0, "ui/initialize", protocolVersion="2026-01-26",
                           appInfo={"name": "flood", "version": "0"}, appCapabilities={}))
    await view.ahandle(rpc(None, "ui/notifications/initialized"))


def _from_view(bench: Any) -> Any:
    records = bench.records
    return records[records["provenance"].map(lambda p: isinstance(p, dict) and "app" in p)]


@pytest.mark.slow
def test_a_flood_of_made_up_tools_leaves_a_bounded_number_of_records() -> None:
    asyncio.run(_flood())


async def _flood() -> None:
    async with tb.Bench(timeout=30) as bench:
        await bench.aconnect("hostile", HOSTILE, env=ENV)
        await bench.aconnect("atlas", ATLAS, env=ENV)
        view = (await bench.acall("hostile-open_view")).app
        assert view is not None
        await _handshake(view)
        replies = []
        for start in range(0, FLOOD, MAX_IN_FLIGHT):  # as fast as the in-flight cap allows
            replies += await asyncio.gather(*(
                view.ahandle(rpc(i + 1, "tools/call", name=f"made_up_{i}", arguments={}))
                for i in range(start, min(FLOOD, start + MAX_IN_FLIGHT))))
        assert all(r is not None and r["error"]["code"] == -32602 for r in replies)
        # Every request was answered; the neighbour is answered right after the flood.
        near = await bench.acall("atlas-distance", from_city="London", to_city="Paris")
        assert near.data == {"result": 343.557}
        model = await view.ahandle(rpc(FLOOD + 1, "tools/call", name="model_only"))
        assert model is not None and model["error"]["code"] == -32602

        deadline = time.monotonic() + FOLD_S + 10  # the fold's window ends, then one record
        refused = _from_view(bench)
        while time.monotonic() < deadline and int(_repeats(refused).clip(lower=1).sum()) < FLOOD:
            await asyncio.sleep(0.05)
            refused = _from_view(bench)
        made_up = refused[refused["tool"].str.startswith("made_up_")]
        assert 2 <= len(made_up) <= RECORDS_BURST, made_up[["tool", "error"]]
        assert not made_up["ok"].any()
        # Nothing lost: a record stands for itself, a folded one for the repeats it counts.
        assert int(_repeats(made_up).clip(lower=1).sum()) == FLOOD, _repeats(made_up).tolist()
        folded = made_up[_repeats(made_up) > 0]
        assert len(folded) >= 1
        assert "folded into this record" in folded["error"].iloc[0]
        assert f"{int(_repeats(folded).iloc[0]):,} more times" in folded["error"].iloc[0]
        # A different refusal is its own record, and the server was never asked.
        assert (refused["tool"] == "model_only").sum() == 1
        asked = (await bench.acall("hostile-asked")).data
        assert not any(name.startswith("made_up") for name in asked)
        assert asked.get("model_only", 0) == 0


def _repeats(frame: Any) -> Any:
    return frame["provenance"].map(lambda p: int(p["app"].get("refused_repeats", 0)))


@pytest.mark.slow
def test_queued_notifications_are_capped_counted_and_noted_once() -> None:
    """With toolbench's loop held, the widget's comm handler queues notifications: the first
    ``MAX_QUEUED_NOTIFICATIONS`` wait, the rest are dropped and counted, and ``view.log``
    says so once when dropping starts and once, with the count, when the queue drains."""
    sent = MAX_QUEUED_NOTIFICATIONS + 136
    with tb.Bench(timeout=30) as bench:
        bench.connect("hostile", HOSTILE, env=ENV)
        view = bench.call("hostile-open_view").app
        assert view is not None
        view.handle(rpc(0, "ui/initialize", protocolVersion="2026-01-26"))
        held, release = threading.Event(), threading.Event()

        async def hold() -> None:
            held.set()
            release.wait(30)  # blocks toolbench's loop on purpose: nothing is handled

        holding = get_loop().submit(hold)
        assert held.wait(10)
        try:
            for i in range(sent):
                view._on_front(view, {"kind": "rpc", "message": rpc(
                    None, "notifications/message", level="info", logger="flood",
                    data=f"note {i}")}, None)
        finally:
            release.set()
        holding.result(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _dropped_rows(view) < 2:
            time.sleep(0.05)
        assert view.bridge.backlog.dropped_total == sent - MAX_QUEUED_NOTIFICATIONS
        rows = view.log[view.log["method"] == DROPPED]
        assert len(rows) == 2, rows
        assert "faster than they are handled" in rows["error"].iloc[0]
        assert f"{sent - MAX_QUEUED_NOTIFICATIONS:,} notifications" in rows["error"].iloc[1]
        logs = bench.logs
        kept = logs[(logs["kind"] == "app") & logs["message"].astype(str).str.startswith("note")]
        assert len(kept) == MAX_QUEUED_NOTIFICATIONS


def _dropped_rows(view: Any) -> int:
    return int((view.log["method"] == DROPPED).sum())


def test_refusals_fold_by_kind_under_a_token_bucket() -> None:
    """The fold and the bucket alone (a fake clock, no server): 100 repeats of one kind are
    one record now and one folded record at the window's end; 20 kinds at once are
    ``RECORDS_BURST`` records now, and the rest one folded record each later."""
    asyncio.run(_unit())


async def _unit() -> None:
    written: list[tuple[str, int]] = []
    now = [0.0]
    refusals = Refusals(lambda tool, _a, _w, repeats: written.append((tool, repeats)),
                        clock=lambda: now[0])
    waits = [refusals.refuse("unknown", f"t{i}", {}, "no such tool") for i in range(100)]
    assert written == [("t0", 0)]
    # A flood is slowed once it folds past SLOW_AFTER repeats: each answer then waits.
    assert waits[:SLOW_AFTER + 1] == [0.0] * (SLOW_AFTER + 1)
    assert waits[SLOW_AFTER + 1:] == [SLOW_REPLY_S] * (99 - SLOW_AFTER)
    refusals.flush("unknown")
    assert written == [("t0", 0), ("t1", 99)]
    written.clear()
    now[0] += 10  # the bucket is full again
    for i in range(20):
        refusals.refuse(f"hidden {i}", f"h{i}", {}, "not visible")
    assert written == [(f"h{i}", 0) for i in range(RECORDS_BURST)]
    refusals.flush()
    assert written[RECORDS_BURST:] == [(f"h{i}", 1) for i in range(RECORDS_BURST, 20)]
    assert refusals.refused == 120


@pytest.mark.slow
def test_a_fold_still_open_when_the_bench_closes_is_recorded_by_the_close() -> None:
    with tb.Bench(timeout=30) as bench:
        bench.connect("hostile", HOSTILE, env=ENV)
        view = bench.call("hostile-open_view").app
        assert view is not None
        view.handle(rpc(0, "ui/initialize", protocolVersion="2026-01-26"))
        for i in range(50):
            view.handle(rpc(i + 1, "tools/call", name=f"made_up_{i}"))
    made_up = _from_view(bench)
    assert int(_repeats(made_up).clip(lower=1).sum()) == 50, made_up[["tool", "error"]]
