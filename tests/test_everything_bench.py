"""Resources, prompts, requests from servers, logs, progress and tasks through a Bench,
against the real reference server, server-everything (npm; ``.ci/run`` installs it), over
stdio and streamable HTTP: tools that appear only to a client with sampling and elicitation,
both answered by functions; a resource link followed; resources, templates and prompts; log
messages after ``toggle-simulated-logging``; progress from a long-running operation; and the
research query that runs only as a task.

The SDK-level facts these rest on are pinned in tests/test_everything.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from servers import everything

import toolbench as tb

_why_not = everything.node_missing()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(_why_not is not None, reason=f"server-everything needs Node.js: {_why_not}"),
]

ONLY_WITH_HANDLERS = {"trigger-sampling-request", "trigger-elicitation-request",
                      "trigger-url-elicitation"}


def _sample(request: Any) -> str:
    return f"sampled {len(request.messages)} message(s)"


def _elicit(request: Any) -> dict[str, Any]:
    if getattr(request, "mode", None) == "url":
        return {"action": "decline"}
    return {"action": "accept", "content": {"name": "Ada", "check": True}}


def _wait_for(condition: Callable[[], bool], seconds: float = 15.0) -> bool:
    """Poll ``condition`` (tools arrive after ``tools/list_changed``); bounded."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "stdio":
        yield everything.stdio_command()
    else:
        with everything.streamable_http() as url:
            yield url


def _tools(bench: tb.Bench) -> set[str]:
    return set(bench.catalog(server="everything")["tool"])


def test_tools_for_sampling_and_elicitation_appear_and_are_answered(target: Any) -> None:
    with tb.Bench(timeout=30, connect_timeout=60, sampling=_sample,
                  elicitation=_elicit) as bench:
        bench.connect("everything", target)
        assert _wait_for(lambda: _tools(bench) >= ONLY_WITH_HANDLERS), sorted(_tools(bench))
        sampled = bench.call("everything-trigger-sampling-request", prompt="hi", maxTokens=5)
        assert "sampled 1 message(s)" in sampled.text
        elicited = bench.call("everything-trigger-elicitation-request")
        assert "Ada" in elicited.text and "accept" in elicited.text.lower()


def test_without_handlers_those_tools_are_not_offered() -> None:
    with tb.Bench(timeout=30, connect_timeout=60) as bench:
        bench.connect("everything", everything.stdio_command())
        assert _wait_for(lambda: "get-sum" in _tools(bench))
        time.sleep(1.0)  # any late tools/list_changed has arrived
        assert not ONLY_WITH_HANDLERS & _tools(bench)
        assert len(_tools(bench)) == 13  # the count, on the pinned version
        assert "is 5" in bench.call("everything-get-sum", a=2, b=3).text


def test_resources_templates_prompts_and_a_followed_link(target: Any) -> None:
    with tb.Bench(timeout=30, connect_timeout=60) as bench:
        bench.connect("everything", target)
        resources = bench.resources()
        assert any(uri.endswith("/features.md") for uri in resources["uri"])
        assert len(bench.resource_templates()) >= 2
        linked = bench.call("everything-get-resource-links", count=2)
        links = [b for b in linked.content if b.get("type") == "resource_link"]
        assert len(links) == 2
        read = bench.read(links[0])
        assert read.uri == links[0]["uri"] and read.contents
        transcript = bench.prompt("everything-args-prompt", {"city": "Paris"})
        assert "Paris" in str(transcript.messages)
        kinds = list(bench.records["kind"])
        assert kinds == ["tool", "resource", "prompt"]


def test_simulated_logs_and_long_running_progress_arrive(target: Any) -> None:
    seen: list[float] = []
    with tb.Bench(timeout=30, connect_timeout=60, log_level="debug") as bench:
        bench.connect("everything", target)
        bench.call("everything-toggle-simulated-logging")
        assert _wait_for(lambda: bool((bench.logs["kind"] == "log").any()), 10)
        bench.call("everything-trigger-long-running-operation", duration=1, steps=4,
                   progress=lambda p, t, m: seen.append(p))
        assert seen == [1, 2, 3, 4]
        progress = bench.logs[bench.logs["kind"] == "progress"]
        assert len(progress) == 4 and progress["call_id"].nunique() == 1
        bench.call("everything-toggle-simulated-logging")  # off again


def test_the_research_query_runs_as_a_task_over_http() -> None:
    with everything.streamable_http() as url, tb.Bench(timeout=60, connect_timeout=60) as bench:
        bench.connect("everything", url)
        result = bench.call("everything-simulate-research-query", topic="tides")
        assert "Research Report: tides" in result.text
        assert bench.records.iloc[-1]["provenance"]["task_id"] == result.task_id
