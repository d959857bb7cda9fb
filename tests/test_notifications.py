"""Log messages and progress from servers: ``bench.logs``, ``call(..., progress=)``, caps.

Against the bundled ``beyond`` demo server (in process, and over a real stdio child) and
small in-process servers that flood.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer

import toolbench as tb
from toolbench._transports import notifications as _notifications
from toolbench.demo import beyond


def _bench(**options: Any) -> tb.Bench:
    bench = tb.Bench(**options)
    bench.connect("beyond", beyond.create())
    return bench


def test_progress_reaches_the_function_and_the_logs_under_the_calls_id() -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    with _bench() as bench:
        result = bench.call("beyond-countdown", steps=4, delay_ms=5,
                            progress=lambda p, t, m: seen.append((p, t, m)))
        assert result.text == "counted 4 steps"
        assert seen == [(n, 4, f"step {n} of 4") for n in range(1, 5)]
        logs = bench.logs
        call_id = bench.records["call_id"].iloc[-1]
        rows = logs[logs["kind"] == "progress"]
        assert list(rows["message"]) == [f"step {n} of 4" for n in range(1, 5)]
        assert set(rows["call_id"]) == {call_id}
        assert rows["data"].iloc[-1] == {"progress": 4, "total": 4}


def test_progress_is_a_reserved_keyword_never_a_tool_argument() -> None:
    """The bug: ``progress=fn`` went to the server as an argument and was recorded in doubt."""
    server = MCPServer("strict")

    @server.tool()
    def echo(text: str) -> str:
        return text

    with tb.Bench() as bench:
        bench.connect("strict", server)
        assert bench.call("strict-echo", text="hi", progress=lambda *a: None).text == "hi"
        assert bench.call("strict-echo", {"text": "yo"}, progress=False).text == "yo"
        assert bool(bench.records["ok"].all())


def test_a_bad_progress_value_is_refused_naming_it_before_anything_is_sent() -> None:
    with _bench() as bench, pytest.raises(TypeError, match=r"progress must be .* not 'bar'"):
        bench.call("beyond-countdown", steps=1, progress="bar")
    with _bench() as bench:
        with pytest.raises(TypeError):
            bench.call("beyond-countdown", steps=1, progress=3)
        assert len(bench.records) == 0


def test_a_progress_function_that_raises_is_logged_and_the_call_still_succeeds() -> None:
    def broken(progress: float, total: float | None, message: str | None) -> None:
        raise RuntimeError("my bar broke")

    with _bench() as bench:
        assert bench.call("beyond-countdown", steps=2, delay_ms=0,
                          progress=broken).text == "counted 2 steps"
        errors = bench.logs[bench.logs["level"] == "error"]
        assert len(errors) == 2
        assert "RuntimeError: my bar broke" in errors["message"].iloc[0]


def test_log_messages_land_in_logs_at_the_level_asked_for() -> None:
    with _bench(log_level="debug") as bench:
        bench.call("beyond-chatty")
        logs = bench.logs[bench.logs["kind"] == "log"]
        assert list(logs["level"]) == ["debug", "info", "notice", "warning", "error", "info"]
        assert logs["message"].iloc[0] == "debug message from chatty"
        assert logs["data"].iloc[-1] == {"event": "structured", "cities": 5}
        assert list(bench.logs.columns) == list(_notifications_columns())
    with _bench(log_level="warning") as bench:
        bench.call("beyond-chatty")
        assert list(bench.logs["level"]) == ["warning", "error"]
    with _bench(log_level=None) as bench:
        bench.call("beyond-chatty")
        assert len(bench.logs) == 0


def _notifications_columns() -> tuple[str, ...]:
    return ("time", "server", "kind", "level", "logger", "message", "data", "call_id")


def test_a_bad_log_level_is_refused_naming_the_value_and_the_levels() -> None:
    with pytest.raises(ValueError, match=r"invalid log_level 'loud': one of debug, info"):
        tb.Bench(log_level="loud")  # type: ignore[arg-type]


def test_a_log_flood_is_capped_per_server_and_long_messages_are_cut() -> None:
    server = MCPServer("flood")

    @server.tool()
    async def flood(ctx: Context, count: int, size: int) -> str:
        for index in range(count):
            with warnings.catch_warnings():  # the SDK deprecates logging as of 2026-07-28
                warnings.simplefilter("ignore")
                sending = ctx.session.send_log_message(
                    level="info", data=f"<b>{index}</b>" + "x" * size, logger="flood",
                    related_request_id=ctx.request_id)
            await sending
        return "done"

    with tb.Bench(log_level="info") as bench:
        bench.connect("flood", server)
        bench.connect("beyond", beyond.create())
        bench.call("flood-flood", count=_notifications.PER_SERVER + 300, size=10)
        bench.call("beyond-chatty")
        bench.call("flood-flood", count=1, size=50_000)
        logs = bench.logs
        flood = logs[logs["server"] == "flood"]
        assert len(flood) == _notifications.PER_SERVER  # the oldest went first
        assert flood["message"].iloc[0] == "<b>301</b>" + "x" * 10  # kept raw; escaped when shown
        assert len(flood["message"].iloc[-1]) <= _notifications.MESSAGE_CHARS
        assert len(logs[logs["server"] == "beyond"]) == 5  # the neighbour's history is intact


@pytest.mark.slow
def test_logs_and_progress_arrive_from_a_stdio_child() -> None:
    seen: list[float] = []
    with tb.Bench(log_level="info") as bench:
        bench.connect("beyond", [sys.executable, "-m", "toolbench.demo.beyond"])
        bench.call("beyond-countdown", steps=3, delay_ms=5,
                   progress=lambda p, t, m: seen.append(p))
        bench.call("beyond-chatty")
        logs = bench.logs
        assert seen == [1, 2, 3]
        assert list(logs[logs["kind"] == "progress"]["message"]) == [
            f"step {n} of 3" for n in (1, 2, 3)]
        assert "error message from chatty" in set(logs["message"])
        assert "debug message from chatty" not in set(logs["message"])


def test_a_calls_bar_is_made_on_the_first_update_and_follows_the_server() -> None:
    from toolbench._bench.progress.progress import BAR_INTERVAL_S, ProgressBar, progress_shown

    bar = ProgressBar("call beyond-countdown")
    bar.close()  # never updated: nothing was made, nothing to close
    assert bar.kernel_bar.drawn is None
    bar = ProgressBar("call beyond-countdown")
    for step in range(1, 10_001):  # a server sending many updates: counted, redrawn rarely
        bar(step, 10_000, f"<b>step {step}</b>")
    made = bar.kernel_bar.drawn  # no kernel here: the tqdm bar is drawn where it is updated
    assert made is not None and made.n == 10_000 and made.total == 10_000
    assert made.mininterval == BAR_INTERVAL_S
    assert "&lt;" not in made.postfix and "step 10000" in made.postfix  # text, not HTML
    bar.close()
    assert progress_shown(False, "x") is None
    assert isinstance(progress_shown(True, "x"), ProgressBar)
    assert progress_shown(None, "x") is None  # no kernel here: no bar outside a notebook


@pytest.mark.parametrize("total", [4, None])
def test_a_calls_bar_shows_steps_and_time_but_no_rate(capsys: pytest.CaptureFixture[str],
                                                      total: int | None) -> None:
    # One call's steps are the server's units: a rate of them ("2.5 it/s") says nothing.
    from toolbench._bench.progress.progress import ProgressBar

    bar = ProgressBar("call beyond-countdown")
    for step in range(1, 5):
        bar(step, total, f"step {step}")
    bar.kernel_bar.drawn.refresh()  # the tqdm bar (no kernel here: drawn where it is updated)
    bar.close()
    drawn = capsys.readouterr().err
    assert "call beyond-countdown" in drawn and "4/" in drawn and "step 4" in drawn
    assert "it/s" not in drawn and "s/it" not in drawn, drawn
    assert "00:0" in drawn  # the elapsed time stays
