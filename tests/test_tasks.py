"""Tools that run only as tasks: created, polled within the call's timeout, cancelled when
the call ends early, the task id recorded.

A hand-written stdio server (tests/servers/task_server.py) makes every step checkable; the
same call against server-everything's ``simulate-research-query`` shows it on a real server.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from servers import everything

import toolbench as tb

SERVERS = Path(__file__).resolve().parent / "servers"
TASK_SERVER = [sys.executable, str(SERVERS / "task_server.py")]

pytestmark = pytest.mark.slow


def test_a_task_tool_runs_to_completion_and_its_task_id_is_recorded() -> None:
    with tb.Bench(timeout=20) as bench:
        bench.connect("tasks", TASK_SERVER)
        result = bench.call("tasks-report", topic="tides", polls=3)
        assert result.text == "report on tides"
        assert result.task_id == "task-1"
        record = bench.records.iloc[-1]
        assert bool(record["ok"]) and record["provenance"]["task_id"] == "task-1"
        assert bench.call("tasks-cancels").text == ""  # a finished task is never cancelled


def test_a_task_that_outlives_the_timeout_is_cancelled_on_the_server() -> None:
    with tb.Bench() as bench:
        bench.connect("tasks", TASK_SERVER)
        with pytest.raises(tb.TimedOut, match=r"\(task task-1\)") as caught:
            bench.call("tasks-report", topic="forever", polls=-1, timeout=0.5)
        assert caught.value.disposition is tb.Disposition.IN_DOUBT
        assert bench.call("tasks-cancels").text == "task-1"  # tasks/cancel reached it
        assert bench.records.iloc[-2]["disposition"] == "in_doubt"
        assert bench.records.iloc[-2]["provenance"]["task_id"] == "task-1"  # kept on failure


def test_server_everything_runs_its_research_query_as_a_task() -> None:
    why_not = everything.node_missing()
    if why_not is not None:
        pytest.skip(f"server-everything needs Node.js: {why_not}")
    with tb.Bench(timeout=60, connect_timeout=60) as bench:
        bench.connect("everything", everything.stdio_command())
        result = bench.call("everything-simulate-research-query", topic="tides")
        assert "Research Report: tides" in result.text
        assert result.task_id and bench.records.iloc[-1]["provenance"]["task_id"] == (
            result.task_id)
