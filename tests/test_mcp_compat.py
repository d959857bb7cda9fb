"""The SDK's strict 2026-07-28 result check, relaxed exactly where the spec says (SEP-2322)."""

from __future__ import annotations

import toolbench as tb
from toolbench._transports.mcp.compat import complete_by_default


def test_a_result_without_result_type_is_complete_and_nothing_else_changes() -> None:
    assert complete_by_default({"content": []}) == {"content": [], "resultType": "complete"}
    asked = {"resultType": "input_required", "inputRequests": {}}
    assert complete_by_default(asked) is asked
    assert complete_by_default(["not", "a", "result"]) == ["not", "a", "result"]


def test_a_2026_server_that_leaves_out_result_type_is_answered_not_malformed() -> None:
    """mcp 2.3.0 alone raises a ValidationError for this answer (toolbench said Malformed);
    the conformance scenario sep-2322-client-request-state checks the same thing."""
    from servers.modern_only_http_server import serve_in_thread

    with serve_in_thread(-32020) as (url, seen), tb.Bench() as bench:
        bench.connect("m", url)
        assert bench.servers.iloc[0]["protocol"] == "2026-07-28"
        assert bench.call("m-bare").text == "no resultType"
        assert bench.call("m-echo", text="hi").text == "hi"
        assert seen.count("tools/call") == 2
