"""A toolset's lanes, slots and locks on their own (``toolbench/_transports/toolset/lanes.py``).

tests/test_toolset.py drives the same through ``Toolset``: lanes a slow backend cannot starve,
lane functions, ``ctx.exclusive``.
"""

from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import pytest

from toolbench._core.errors import Disposition, Refused, Unreachable
from toolbench._core.ids import ToolId
from toolbench._transports.toolset.lanes import Lanes, check_cap

TID = ToolId("box", "t")
BOUND = 10.0


def test_caps_are_positive_ints_or_none() -> None:
    assert check_cap(None, "x") is None and check_cap(3, "x") == 3
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="x must be a positive int or None"):
            check_cap(bad, "x")


def test_declaring_and_choosing_a_lane() -> None:
    lanes = Lanes("box", 4)
    lanes.declare("gpu", 1)
    lanes.declare("db", None)  # a label only
    assert lanes.names() == ["db", "gpu"]
    with pytest.raises(ValueError, match="already declared on toolset 'box'"):
        lanes.declare("gpu", 2)
    with pytest.raises(ValueError, match="non-empty string"):
        lanes.declare("", 1)
    lanes.check_choice("t", "gpu")
    lanes.check_choice("t", lambda data: "gpu")
    with pytest.raises(ValueError, match=r"lane 'cpu' is not declared.*declared: \['db', 'gpu'\]"):
        lanes.check_choice("t", "cpu")
    with pytest.raises(TypeError, match="lane must be a declared lane name"):
        lanes.check_choice("t", 3)  # type: ignore[arg-type]
    assert lanes.choose("t", "gpu", {}, TID) == "gpu"
    assert lanes.choose("t", lambda data: data.get("on"), {"on": "db"}, TID) == "db"
    assert lanes.choose("t", lambda data: None, {}, TID) is None


def test_a_lane_function_that_fails_or_names_no_lane_is_refused() -> None:
    lanes = Lanes("box", None)
    lanes.declare("gpu", 1)
    with pytest.raises(Refused, match=r"raised ZeroDivisionError.*nothing ran") as info:
        lanes.choose("t", lambda data: str(1 / 0), {}, TID)
    assert info.value.tool == TID
    with pytest.raises(Refused, match="chose 'tpu', which is not a declared lane"):
        lanes.choose("t", lambda data: "tpu", {}, TID)


def test_a_full_lane_holds_no_slot_and_a_timeout_there_did_not_happen() -> None:
    async def main() -> tuple[Unreachable, list[str]]:
        lanes = Lanes("box", 2)
        lanes.declare("slow", 1)
        ran: list[str] = []
        release = anyio.Event()

        async def hold_the_lane() -> None:
            async with lanes.admitted("s", "slow", TID, None):
                await release.wait()

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as group:
                group.start_soon(hold_the_lane)
                await anyio.sleep(0.05)
                with pytest.raises(Unreachable) as info:
                    async with lanes.admitted("s2", "slow", TID, 0.05):
                        ran.append("s2")
                async with lanes.admitted("fast", None, TID, 0.05):  # the other slot is free
                    ran.append("fast")
                assert lanes.in_flight == 1
                release.set()
        assert lanes.in_flight == 0
        return info.value, ran

    error, ran = anyio.run(main)
    assert ran == ["fast"]
    assert "waited 0.05 s for lane 'slow' and a free slot on 'box'" in error.detail
    assert error.disposition is Disposition.DID_NOT_HAPPEN


def test_exclusive_drops_a_lock_nobody_holds_or_awaits() -> None:
    async def main() -> list[object]:
        lanes = Lanes("box", None)
        order: list[str] = []
        seen: list[object] = []

        async def second() -> None:
            async with lanes.exclusive("k"):
                order.append("second")

        with anyio.fail_after(BOUND):
            async with anyio.create_task_group() as group, lanes.exclusive("k"):
                group.start_soon(second)
                await anyio.sleep(0.05)
                seen.append(lanes.locked_keys())
                order.append("first")
        assert order == ["first", "second"]
        seen.append(lanes.locked_keys())
        return seen

    assert anyio.run(main) == [["k"], []]


def test_gates_belong_to_one_loop_at_a_time() -> None:
    lanes = Lanes("box", 1)
    holding, release = threading.Event(), threading.Event()

    async def once() -> None:
        async with lanes.admitted("t", None, TID, None):
            pass

    async def hold() -> None:
        async with lanes.exclusive("k"):
            holding.set()
            await anyio.to_thread.run_sync(release.wait, 30)

    anyio.run(once)
    anyio.run(once)  # idle: it may move to a new loop
    other = threading.Thread(target=anyio.run, args=(hold,))
    other.start()
    try:
        assert holding.wait(BOUND)
        with pytest.raises(RuntimeError, match="toolset 'box' is in use on another event loop"):
            anyio.run(once)
    finally:
        release.set()
        other.join(BOUND)
    anyio.run(once)  # let go: usable again
