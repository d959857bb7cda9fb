"""The 2026-07-28 cache hints (``ttlMs``, ``cacheScope``) honoured for listings and reads.

Against a real HTTP server (``servers/cache_hints_http.py``, which counts what reaches it)
and an in-process SDK server with ``cache_hints``; the cache's own rules (eras, sign-ins)
as a unit.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

import pandas as pd
import pytest
from mcp.server import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from servers.cache_hints_http import serve_in_thread

import toolbench as tb
from toolbench._transports.mcp.methods import hints as _hints

FRESH = {"*": {"ttlMs": 60_000, "cacheScope": "private"}}
BASELINE = ("resources/list", "resources/templates/list", "prompts/list")


def _connected(bench: tb.Bench, name: str, server: Any) -> None:
    """Connect, and wait (bounded) for the bench's background baseline of the other kinds,
    so the counts a test compares are its own."""
    bench.connect(name, server.url)
    deadline = time.monotonic() + 10
    while not all(server.count(m) for m in BASELINE) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(server.count(m) for m in BASELINE)


def test_a_listing_and_a_read_within_their_freshness_cost_no_wire_call() -> None:
    with serve_in_thread(FRESH) as server, tb.Bench() as bench:
        _connected(bench, "h", server)
        assert bench.servers.iloc[0]["protocol"] == "2026-07-28"
        bench.resources()
        bench.prompts()
        bench.resource_templates()
        listed = {m: server.count(m) for m in ("resources/list", "prompts/list",
                                                "resources/templates/list", "tools/list")}
        for _ in range(3):
            assert list(bench.resources()["uri"]) == ["memo://note"]
            assert list(bench.prompts()["prompt"]) == ["greet"]
            assert list(bench.resource_templates()["uri"]) == ["memo://{key}"]
        assert bench.read("h", "memo://note").text == "read 1"
        assert bench.read("h", "memo://note").text == "read 1"  # served: no second read
        assert bench.read("h", "memo://other").text == "read 2"  # another URI: sent
        counted = {m: server.count(m) for m in listed}
        assert counted == listed  # not one more listing reached the server
        assert server.count("resources/read") == 2
        assert list(bench.records["kind"]).count("resource") == 3  # a served read is a record


def test_ttl_zero_and_no_hint_are_never_cached() -> None:
    hints = {"resources/list": {"ttlMs": 0, "cacheScope": "public"},
             "resources/read": {}, "*": {"ttlMs": 60_000, "cacheScope": "public"}}
    with serve_in_thread(hints) as server, tb.Bench() as bench:
        _connected(bench, "h", server)
        before = server.count("resources/list")
        bench.resources()
        bench.resources()
        assert server.count("resources/list") == before + 2
        assert [bench.read("h", "memo://n").text for _ in range(2)] == ["read 1", "read 2"]


def test_a_stale_listing_is_fetched_again() -> None:
    with serve_in_thread({"*": {"ttlMs": 200, "cacheScope": "private"}}) as server, \
            tb.Bench() as bench:
        _connected(bench, "h", server)
        bench.prompts()
        before = server.count("prompts/list")
        time.sleep(0.3)  # past the 200 ms the server allowed
        bench.prompts()
        assert server.count("prompts/list") == before + 1


def test_the_catalog_says_until_when_a_server_s_tools_are_fresh() -> None:
    with serve_in_thread({"tools/list": {"ttlMs": 60_000, "cacheScope": "public"}}) as fresh, \
            serve_in_thread({"tools/list": {"ttlMs": 0, "cacheScope": "public"}}) as stale, \
            tb.Bench() as bench:
        started = pd.Timestamp.now(tz="UTC")
        bench.connect("f", fresh.url)
        bench.connect("s", stale.url)
        catalog = bench.catalog().set_index("server")
        assert "fresh_until" in catalog.columns
        until = catalog.loc["f", "fresh_until"]
        assert started + pd.Timedelta(seconds=59) < until <= started + pd.Timedelta(seconds=61)
        assert pd.isna(catalog.loc["s", "fresh_until"])


def test_private_answers_are_not_shared_across_benches() -> None:
    with serve_in_thread(FRESH) as server, tb.Bench() as one, tb.Bench() as two:
        _connected(one, "h", server)
        _connected(two, "h", server)
        one.read("h", "memo://note")
        assert two.read("h", "memo://note").text == "read 2"  # its own read, on the wire
        assert one.read("h", "memo://note").text == "read 1"
        assert server.count("resources/read") == 2


@pytest.mark.parametrize("hint, why", [
    ({"ttlMs": -1, "cacheScope": "private"}, "ttlMs -1 is negative"),
    ({"ttlMs": 10**20, "cacheScope": "public"}, "more than a day"),
    ({"ttlMs": 60_000, "cacheScope": "everyone"}, "cacheScope 'everyone' is neither"),
    ({"ttlMs": "soon", "cacheScope": "public"}, "ttlMs 'soon' is not an integer"),
    ({"ttlMs": 1.5, "cacheScope": "public"}, "ttlMs 1.5 is not an integer"),
])
def test_a_bad_hint_is_ignored_with_a_note_never_a_failed_listing(
        hint: dict[str, Any], why: str, caplog: pytest.LogCaptureFixture) -> None:
    with serve_in_thread({"*": hint}) as server, tb.Bench() as bench, \
            caplog.at_level(logging.WARNING, "toolbench.cache"):
        _connected(bench, "h", server)
        assert list(bench.catalog()["name"]) == ["h-echo"]
        for _ in range(2):
            assert list(bench.resources()["uri"]) == ["memo://note"]
        assert [bench.read("h", "memo://x").text for _ in range(2)] == ["read 1", "read 2"]
        assert server.count("resources/read") == 2  # nothing cached on a bad hint
        notes = [w for w in bench.servers.iloc[0]["warnings"] if why in w]
        assert notes and all("ignored" in n for n in notes)
        assert len(notes) == len(set(notes))  # each said once
        assert any(why in r.getMessage() for r in caplog.records)
        assert pd.isna(bench.catalog().iloc[0]["fresh_until"])


def _counting_server() -> tuple[MCPServer, list[str]]:
    """An in-process SDK server whose lists are fresh for a minute, counting tools/list."""
    listed: list[str] = []
    server = MCPServer("grower", cache_hints={
        "tools/list": CacheHint(ttl_ms=60_000, scope="private"),
        "resources/list": CacheHint(ttl_ms=60_000, scope="private")})
    original = server.list_tools

    async def list_tools(*args: Any, **kwargs: Any) -> Any:
        listed.append("tools/list")
        return await original(*args, **kwargs)

    server.list_tools = list_tools  # type: ignore[method-assign]

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add a tool and say the list changed."""
        name = f"extra_{len(listed)}"
        server.add_tool(lambda: "extra", name=name)
        await ctx.notify_tools_changed()
        return name

    @server.resource("memo://a")
    def memo() -> str:
        return "a"

    return server, listed


def test_list_changed_refreshes_at_once_despite_the_freshness() -> None:
    server, listed = _counting_server()
    with tb.Bench() as bench:
        bench.connect("g", server)
        assert bench.catalog().iloc[0]["fresh_until"] is not None
        first = len(listed)
        name = bench.call("g-grow").text
        deadline = time.monotonic() + 10
        while f"g-{name}" not in set(bench.catalog()["name"]) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert f"g-{name}" in set(bench.catalog()["name"])
        assert len(listed) == first + 1  # the list_changed went to the wire, once


def test_an_in_process_server_s_hints_are_honoured_too() -> None:
    server, _ = _counting_server()
    calls: list[int] = []
    original = server.list_resources

    async def list_resources(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return await original(*args, **kwargs)

    server.list_resources = list_resources  # type: ignore[method-assign]
    with tb.Bench() as bench:
        bench.connect("g", server)
        bench.resources()
        before = len(calls)
        assert list(bench.resources()["uri"]) == ["memo://a"]
        assert len(calls) == before


# -- the cache's own rules -----------------------------------------------------------------
def test_an_entry_is_kept_apart_by_era_and_a_private_one_by_sign_in() -> None:
    now = [("2026-07-28", 0)]
    cache = _hints.ResponseCache("s", lambda: now[0])
    cache.put("tools/list", "", ["private"], _hints.Hint(60_000, "private"))
    cache.put("prompts/list", "", ["public"], _hints.Hint(60_000, "public"))
    assert cache.get("tools/list", "") == ["private"]
    now[0] = ("2026-07-28", 1)  # signed in again
    assert cache.get("tools/list", "") is None
    assert cache.get("prompts/list", "") == ["public"]
    now[0] = ("2025-11-25", 0)  # another protocol era: nothing at all
    assert cache.get("tools/list", "") is None
    assert cache.get("prompts/list", "") is None
    now[0] = ("2026-07-28", 0)
    served = cache.get("prompts/list", "")
    served.append("edited")
    assert cache.get("prompts/list", "") == ["public"]  # callers get copies
    cache.changed("prompts")
    assert cache.get("prompts/list", "") is None
    cache.put("resources/read", "memo://a", [1], _hints.Hint(60_000, "public"))
    assert cache.fresh_until("resources/read", "memo://a") is not None
    cache.updated("memo://a")
    assert cache.get("resources/read", "memo://a") is None
    cache.put("tools/list", "", ["y"], _hints.Hint(60_000, "public"))
    cache.changed("connected")  # a reconnect: the server may have restarted
    assert cache.get("tools/list", "") is None
    cache.put("tools/list", "", ["x"], _hints.NEVER)
    assert cache.get("tools/list", "") is None and cache.fresh_until("tools/list") is None


def test_hints_on_a_handshake_era_answer_are_not_used_and_bad_ones_are_replaced() -> None:
    raw = {"tools": [], "ttlMs": 60_000, "cacheScope": "public"}
    assert _hints.take(raw, "tools/list", False, "s") is _hints.NEVER
    notes: deque[str] = deque()
    bad = {"tools": [], "ttlMs": -5, "cacheScope": "private"}
    assert _hints.take(bad, "tools/list", True, "s", notes) is _hints.NEVER
    assert bad["ttlMs"] == 0 and bad["cacheScope"] == "private"  # the SDK's check passes
    assert _hints.take({"ttlMs": 5}, "tools/list", True, "s") is _hints.NEVER  # no scope
    assert _hints.combined([_hints.Hint(5, "public"), _hints.Hint(3, "private")]) == \
        _hints.Hint(3, "private")
    assert _hints.combined([]) is _hints.NEVER


def test_a_cache_scope_without_ttl_is_not_cached_and_a_bad_one_is_named_as_such() -> None:
    """A lone ``cacheScope`` says nothing of freshness: not cached, and no note blaming a
    ``ttlMs`` the server never sent; a bad lone scope's note names the scope."""
    notes: deque[str] = deque()
    assert _hints.take({"tools": [], "cacheScope": "public"}, "tools/list", True, "s",
                       notes) is _hints.NEVER
    assert not notes
    bad = {"tools": [], "cacheScope": "everyone"}
    assert _hints.take(bad, "tools/list", True, "s", notes) is _hints.NEVER
    (note,) = notes
    assert "cacheScope 'everyone' is neither 'public' nor 'private'" in note
    assert "ttlMs" not in note and bad["cacheScope"] == "private"


def test_a_sign_in_counts_in_the_cache_context() -> None:
    from toolbench._transports.auth.state import AuthState
    from toolbench._transports.mcp.client import McpClient

    client = McpClient("https://example.invalid/mcp", name="s", auth="oauth")
    assert client.responses.context() == (None, 0)
    assert isinstance(client._auth, AuthState)
    from mcp.shared.auth import OAuthToken
    client._auth._tokens_stored(OAuthToken(access_token="a-token", token_type="Bearer"))
    assert client.responses.context() == (None, 1)
    assert "a-token" not in repr(client.responses.context())
