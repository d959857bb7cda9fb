"""A hostile MCP App (tests/servers/hostile_app.py, a real stdio child) driven through
``view.handle`` as its view would drive the host, beside a neighbour server (the ``atlas``
demo): each misdeed gets DESIGN's answer, a refused call never reaches the server, nothing is
recorded twice and nothing is lost (DESIGN.md, "MCP Apps")."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb
from toolbench._bench.apps.bridge import MAX_IN_FLIGHT, MAX_MESSAGE_BYTES

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = [sys.executable, str(ROOT / "tests" / "servers" / "hostile_app.py")]
ATLAS = [sys.executable, "-m", "toolbench.demo.atlas"]
ENV = {"PYTHONPATH": str(ROOT)}


def rpc(id_: Any, method: str, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id_ is not None:
        message["id"] = id_
    return message


def call(id_: int, name: str, **arguments: Any) -> dict[str, Any]:
    return rpc(id_, "tools/call", name=name, arguments=arguments)


@pytest.mark.slow
def test_a_hostile_view_gets_designs_answers_and_the_kernel_keeps_count() -> None:
    asyncio.run(_hostile())


async def _hostile() -> None:
    async with tb.Bench(timeout=30) as bench:
        await bench.aconnect("hostile", HOSTILE, env=ENV)
        await bench.aconnect("atlas", ATLAS, env=ENV)
        opened = await bench.acall("hostile-open_view")
        view = opened.app
        assert view is not None and view.sandbox == "allow-scripts"
        init = await view.ahandle(rpc(1, "ui/initialize", protocolVersion="2026-01-26",
                                      appInfo={"name": "h", "version": "0"},
                                      appCapabilities={}))
        assert init is not None and init["result"]["protocolVersion"]
        assert await view.ahandle(rpc(None, "ui/notifications/initialized")) is None

        # A model-only tool and another server's tool: -32602 naming tool and rule, Refused.
        model = await view.ahandle(call(2, "model_only"))
        assert model is not None and model["error"]["code"] == -32602
        assert "'model_only'" in model["error"]["message"]
        assert "visible to" in model["error"]["message"]
        other = await view.ahandle(call(3, "distance", from_city="London", to_city="Paris"))
        assert other is not None and other["error"]["code"] == -32602
        assert "'distance'" in other["error"]["message"]
        assert "own server" in other["error"]["message"]

        # A 10 MB message and malformed JSON-RPC: error replies, nothing read or called.
        big = rpc(4, "ui/message", role="user",
                  content=[{"type": "text", "text": "x" * (10 * 1024 * 1024)}])
        answer = await view.ahandle(big)
        assert answer is not None and answer["error"]["code"] == -32600
        assert f"{MAX_MESSAGE_BYTES:,}" in answer["error"]["message"]
        assert len(view.messages) == 0
        for junk in ("not json-rpc", {"jsonrpc": "1.0", "id": 5, "method": "ping"},
                     {"jsonrpc": "2.0", "id": 6, "method": 7}):
            reply = await view.ahandle(junk)
            assert reply is None or reply["error"]["code"] == -32600, (junk, reply)

        # The flood: 3 × the in-flight cap of slow app-only calls at once, while a neighbour
        # call on another server goes through; each refusal is an error reply, never a hang.
        flood = [view.ahandle(call(100 + i, "tick", delay_ms=200))
                 for i in range(3 * MAX_IN_FLIGHT)]
        neighbour = bench.acall("atlas-distance", from_city="London", to_city="Paris")
        *replies, near = await asyncio.gather(*flood, neighbour)
        assert near.data == {"result": 343.557}
        done = [r for r in replies if r is not None and "result" in r]
        refused = [r for r in replies if r is not None and "error" in r]
        assert len(done) + len(refused) == 3 * MAX_IN_FLIGHT
        assert len(done) >= MAX_IN_FLIGHT and all("in flight" in r["error"]["message"]
                                                  for r in refused)

        # What reached the server: every answered tick, and never model_only.
        asked = (await bench.acall("hostile-asked")).data
        assert asked.get("model_only", 0) == 0
        assert asked["tick"] == len(done)

        # Nothing twice, nothing lost: one record per answered call, one Refused per refusal
        # by visibility or server, each with the view's provenance.
        records = bench.records
        from_view = records[records["provenance"].map(
            lambda p: isinstance(p, dict) and "app" in p)]
        assert from_view["call_id"].is_unique
        ticks = from_view[from_view["tool"] == "tick"]
        assert len(ticks) == len(done) and bool(ticks["ok"].all())
        refusals = from_view[from_view["tool"].isin(["model_only", "distance"])]
        assert len(refusals) == 2 and not refusals["ok"].any()
        assert all(p["app"] == {"uri": "ui://hostile/view.html", "opened_by": opened.call_id}
                   for p in from_view["provenance"])

        # Teardown that the view never answers: bounded by 2 s, then later requests refused.
        started = asyncio.get_running_loop().time()
        await bench.aclose()
        assert asyncio.get_running_loop().time() - started < 10
        late = await view.ahandle(rpc(999, "ping"))
        assert late is not None and "torn down" in late["error"]["message"]


@pytest.mark.slow
def test_bad_views_give_rows_and_warnings_naming_value_and_rule() -> None:
    with tb.Bench(timeout=30) as bench:
        bench.connect("hostile", HOSTILE, env={**ENV, "HOSTILE_BIG_BYTES": "300000"},
                      max_message_bytes=200_000)
        cat = bench.catalog().set_index("tool")
        warned = cat.loc["bad_scheme", "warnings"]
        assert any("https://evil.example.com/view.html" in w and "ui://" in w for w in warned)
        assert not isinstance(cat.loc["bad_scheme", "ui"], str)
        rows = bench.apps().set_index("tool")
        assert "text/html" in rows.loc["wrong_mime", "error"]
        assert "text/html;profile=mcp-app" in rows.loc["wrong_mime", "error"]
        assert "200,000" in rows.loc["too_big", "error"]
        assert "ui://hostile/missing.html" in rows.loc["missing", "error"]
        for tool in ("wrong_mime", "too_big", "missing"):
            assert rows.loc[tool, "csp"] is None
            assert bench.call(f"hostile-{tool}").app is None
        csp = rows.loc["bad_csp", "csp"]
        assert rows.loc["bad_csp", "error"] is None
        assert "https://good.example.com" in csp
        for bad in ("plain.example.com", "unsafe-eval", "quoted", "a.example.com",
                    "b.example.com", "c.example.com"):
            assert bad not in csp, (bad, csp)
        assert " * " not in csp and not csp.rstrip(";").endswith("*")
        view = bench.call("hostile-bad_csp").app
        assert view is not None and view.csp == csp
        noted = " ".join(view.warnings)
        for value in ("'*'", "http://plain.example.com", "unsafe-eval", "quoted.example.com",
                      "script-src *", "https://b.example.com https://c.example.com"):
            assert value in noted, (value, noted)
