"""The awaitable faces no other test calls: aadd, adisconnect, acompare_prompt, amap_prompt,
acompare_read, amap_read, each awaited from a loop of the caller's own against real
in-process servers (the demo's beyond server, twice, and a ToolBox)."""

from __future__ import annotations

import asyncio

import toolbench as tb
from toolbench.demo import beyond


@tb.tool(server="box")
def twice(n: int) -> int:
    """Double it."""
    return 2 * n


async def _session() -> dict[str, object]:
    seen: dict[str, object] = {}
    with tb.Bench() as bench:
        assert await bench.aadd(tb.ToolBox(twice)) == ["box"]
        seen["added"] = (await bench.acall("box-twice", n=4)).data
        await bench.aconnect("a", beyond.create())
        await bench.aconnect("b", beyond.create())
        prompts = await bench.acompare_prompt("plan_trip", [
            {"from_city": "paris", "to_city": "lima"},
            {"from_city": "paris", "to_city": "nowhere"}], progress=False)
        seen["prompt_rows"] = sorted(zip(prompts["server"], prompts["case"], prompts["ok"],
                                         strict=True))
        mapped = await bench.amap_prompt("a-plan_trip", [{"from_city": "paris",
                                                          "to_city": "lima"}], progress=False)
        seen["mapped_prompt"] = (list(mapped["ok"]), "Lima" in mapped["text"].iloc[0])
        reads = await bench.acompare_read(["city://tokyo"], progress=False)
        seen["reads"] = sorted(zip(reads["server"], reads["ok"], strict=True))
        many = await bench.amap_read("b", ["city://tokyo", "city://atlantis"], progress=False)
        seen["many"] = list(many["ok"])
        await bench.adisconnect("box")
        seen["servers"] = sorted(bench.servers["name"])
    return seen


def test_every_async_face_works_from_the_callers_own_loop() -> None:
    seen = asyncio.run(_session())
    assert seen["added"] == {"result": 8} or seen["added"] == 8
    assert seen["prompt_rows"] == [("a", 0, True), ("a", 1, False),
                                   ("b", 0, True), ("b", 1, False)]
    assert seen["mapped_prompt"] == ([True], True)
    assert seen["reads"] == [("a", True), ("b", True)]
    assert seen["many"] == [True, False]
    assert seen["servers"] == ["a", "b"]
