"""run_jobs: the caps hold, results keep the order of the cases, and a failure is a row."""

from __future__ import annotations

import anyio

import toolbench as tb


def _box(seen: dict[str, int]) -> tb.ToolBox:
    @tb.tool(server="w")
    async def nap(n: int) -> int:
        seen["now"] += 1
        seen["peak"] = max(seen["peak"], seen["now"])
        try:
            await anyio.sleep(0.01 if n % 3 else 0.02)  # uneven, so finishing order differs
            if n == 7:
                raise ValueError("seven fails")
            return n
        finally:
            seen["now"] -= 1

    return tb.ToolBox(nap)


def test_map_keeps_its_concurrency_cap_and_the_order_of_cases() -> None:
    for cap in (1, 3, 8):
        seen = {"now": 0, "peak": 0}
        with tb.Bench() as bench:
            bench.add(_box(seen))
            df = bench.map("w-nap", [{"n": i} for i in range(40)], concurrency=cap,
                           progress=False)
        assert seen["peak"] == cap, (cap, seen)
        assert [a["n"] for a in df["arguments"]] == list(range(40))
        assert list(df["ok"]) == [i != 7 for i in range(40)]
        assert df.iloc[7]["error_type"] == "ToolFailed"


def test_more_workers_than_cases_runs_each_case_once() -> None:
    seen = {"now": 0, "peak": 0}
    with tb.Bench() as bench:
        bench.add(_box(seen))
        df = bench.map("w-nap", [{"n": 1}, {"n": 2}], concurrency=8, progress=False)
        assert list(df["structured"].map(lambda s: s["result"])) == [1, 2]
        assert len(bench.records) == 2 and seen["peak"] == 2
