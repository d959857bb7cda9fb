"""Retries that cannot double a call, and rates (toolbench/_bench/calls/retry.py).

In process: a scripted ToolClient fails as told, so each disposition is tried with retries:
only ``Unreachable`` (did_not_happen) is tried again; ``in_doubt`` and ``landed`` never are.
Against the HTTP demo server, see tests/test_limited.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

import toolbench as tb
from toolbench._bench.calls.retry import (
    BACKOFF_BASE_S,
    MIN_ATTEMPT_S,
    check_max_retry_wait,
    check_retries,
    retry_wait,
    room_for_attempt,
)
from toolbench._core.errors import Refused, TimedOut, ToolFailed, Unreachable
from toolbench._core.ids import Destination, Provenance, ToolId
from toolbench._core.rates import TokenBucket, parse_rate


class Scripted:
    """A ToolClient whose calls fail as its script says, then answer."""

    def __init__(self, name: str, script: Iterable[BaseException | None]) -> None:
        self.name = name
        self.script = list(script)
        self.sent: list[dict[str, Any]] = []

    def servers(self) -> Iterable[str]:
        return [self.name]

    def destination(self, tool: ToolId) -> Destination:
        return Destination.LOCAL

    async def list_tools(self, server: str) -> list[tb.ToolSpec]:
        return [tb.ToolSpec("work", input_schema={"type": "object", "properties": {
            "n": {"type": "integer"}}})]

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],
                   provenance: Provenance | None = None, *,
                   timeout: float | None = None) -> tb.Result:
        self.sent.append(dict(arguments))
        step = self.script.pop(0) if self.script else None
        if step is not None:
            raise step
        return tb.Result([{"type": "text", "text": f"ok {arguments.get('n')}"}], tool=tool)


def busy(wait: float | None = 0.01) -> Unreachable:
    error = Unreachable("server answered HTTP 429 Too Many Requests; it ran nothing")
    error.retry_after = wait
    return error


def test_a_busy_answer_is_retried_and_every_attempt_is_a_record() -> None:
    client = Scripted("s", [busy(), busy(), None])
    with tb.Bench() as bench:
        bench.connect("s", client)
        result = bench.call("s-work", n=1, retries=3)
        assert result.text == "ok 1"
        records = bench.records
    assert len(client.sent) == 3
    assert list(records["attempts"]) == [1, 2, 3]
    assert list(records["disposition"]) == ["did_not_happen", "did_not_happen", "landed"]
    assert len(set(records["call_id"])) == 3  # each attempt is its own journaled call
    last = records.iloc[-1]["provenance"]
    assert last["attempt"] == 3
    assert [r["wait_ms"] for r in last["retried"]] == [10.0, 10.0]  # Retry-After honoured
    assert [r["error_type"] for r in last["retried"]] == ["Unreachable", "Unreachable"]
    assert records.iloc[0]["provenance"]["retry_wait_ms"] == 10.0


@pytest.mark.parametrize("failure", [
    TimedOut("sent; no answer"),  # in_doubt: it may have run
    ToolFailed("the tool reported an error"),  # landed: it ran
    Refused("bad arguments"),  # did not happen, but would be refused again
])
def test_a_call_that_may_have_run_or_would_fail_again_is_never_retried(
        failure: tb.ToolError) -> None:
    client = Scripted("s", [failure, None])
    with tb.Bench() as bench:
        bench.connect("s", client)
        with pytest.raises(type(failure)):
            bench.call("s-work", n=1, retries=5)
        assert len(bench.records) == 1 and bench.records.iloc[0]["attempts"] == 1
    assert len(client.sent) == 1


def test_without_retries_nothing_is_retried() -> None:
    client = Scripted("s", [busy(), None])
    with tb.Bench() as bench:
        bench.connect("s", client)
        with pytest.raises(Unreachable, match="429"):
            bench.call("s-work", n=1)
    assert len(client.sent) == 1


def test_retries_end_within_the_calls_timeout_with_the_attempts_counted() -> None:
    # The server asks for 0.3 s each time; a 1 s timeout has room for a few tries only.
    client = Scripted("s", [busy(0.3)] * 100)
    with tb.Bench() as bench:
        bench.connect("s", client)
        with pytest.raises(Unreachable) as caught:
            bench.call("s-work", n=1, retries=50, timeout=1.0)
        attempts = int(bench.records.iloc[-1]["attempts"])
    assert 2 <= attempts <= 4 and len(client.sent) == attempts
    assert f"after {attempts} attempts" in caught.value.detail


def test_no_retry_is_sent_without_room_left_for_its_answer() -> None:
    # After a 0.35 s wait, 0.05 s of the 0.4 s timeout would be left: under MIN_ATTEMPT_S,
    # so the call ends as the first attempt's Unreachable (known not to have happened)
    # rather than a second attempt sent to time out in doubt.
    client = Scripted("s", [busy(0.35), None])
    with tb.Bench() as bench:
        bench.connect("s", client)
        with pytest.raises(Unreachable, match="429"):
            bench.call("s-work", n=1, retries=5, timeout=0.4)
        assert int(bench.records.iloc[-1]["attempts"]) == 1
    assert len(client.sent) == 1


def test_the_checkers_first_load_is_outside_the_retries_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Under load the one-time import took longer than the call's timeout, and a first map
    # with retries made one attempt per case: the deadline was set before the wait.
    import types

    import toolbench._bench.calls.calling as calling

    loaded = asyncio.Event()

    async def slow_wait() -> None:
        await asyncio.sleep(0.6)
        loaded.set()

    monkeypatch.setattr(calling, "_preload", types.SimpleNamespace(
        ready=loaded.is_set, wait=slow_wait))
    client = Scripted("s", [busy(0.05), busy(0.05), None])
    with tb.Bench() as bench:
        bench.connect("s", client)
        assert bench.call("s-work", n=1, retries=5, timeout=0.5).text == "ok 1"
        assert int(bench.records.iloc[-1]["attempts"]) == 3


def test_room_for_an_attempt_is_twice_the_failed_one_and_never_under_the_floor() -> None:
    assert room_for_attempt(0.0) == MIN_ATTEMPT_S
    assert room_for_attempt(0.3) == pytest.approx(0.6)


def test_a_long_retry_after_is_capped_by_max_retry_wait() -> None:
    client = Scripted("s", [busy(3600.0), None])
    with tb.Bench() as bench:
        bench.connect("s", client)
        bench.call("s-work", n=1, retries=1, max_retry_wait=0.05)
        assert bench.records.iloc[-1]["provenance"]["retried"][0]["wait_ms"] == 50.0


def test_map_retries_each_case_and_returns_one_row_per_case() -> None:
    client = Scripted("s", [busy(), None, busy(), None, None])
    with tb.Bench() as bench:
        bench.connect("s", client)
        df = bench.map("s-work", [{"n": i} for i in range(3)], concurrency=1, retries=2,
                       progress=False)
        assert list(df["ok"]) == [True, True, True] and list(df["attempts"]) == [2, 2, 1]
        assert len(bench.records) == 5
        compared = bench.compare("work", n=7, retries=2)
        assert bool(compared.iloc[0]["ok"])


@pytest.mark.parametrize("value", [-1, 1.5, "2", True, None])
def test_bad_retries_are_refused_naming_the_value_and_the_rule(value: object) -> None:
    with pytest.raises(ValueError, match=rf"invalid retries {value!r}: a whole number, 0 or"):
        check_retries(value)
    with tb.Bench() as bench:
        bench.connect("s", Scripted("s", []))
        with pytest.raises(ValueError, match="invalid retries"):
            bench.call("s-work", n=1, retries=value)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="invalid retries"):
            bench.map("s-work", [{"n": 1}], retries=value)  # type: ignore[arg-type]
        assert len(bench.records) == 0


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "60"])
def test_bad_max_retry_wait_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="invalid max_retry_wait"):
        check_max_retry_wait(value)


def test_backoff_is_jittered_below_a_doubling_ceiling_and_capped() -> None:
    no_hint = Unreachable("connection refused")
    for attempt in (1, 2, 3, 4):
        waits = [retry_wait(no_hint, attempt, 60.0) for _ in range(200)]
        assert all(0.0 <= w <= BACKOFF_BASE_S * 2 ** (attempt - 1) for w in waits)
        assert len(set(waits)) > 100  # jittered, not one value for every caller
    assert all(retry_wait(no_hint, 30, 2.0) <= 2.0 for _ in range(50))


# -- rates ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "per_second"), [
    ("10/s", 10.0), ("600/min", 10.0), ("1.5/sec", 1.5), ("36/hour", 0.01), (" 4 / s ", 4.0),
])
def test_a_rate_reads_per_second_and_per_minute(text: str, per_second: float) -> None:
    rate = parse_rate(text)
    assert rate is not None and rate.per_second == pytest.approx(per_second)


@pytest.mark.parametrize("value", ["fast", "0/s", "-1/s", "10", "10/fortnight", 10, "nan/s"])
def test_a_bad_rate_is_refused_naming_the_value_and_the_rule(value: object) -> None:
    with pytest.raises(ValueError, match=r'invalid rate .*: a rate is a text "N/s"'):
        parse_rate(value)
    with tb.Bench() as bench:
        with pytest.raises(ValueError, match="invalid rate"):
            bench.connect("s", Scripted("s", []), rate=value)  # type: ignore[typeddict-item]
        assert "s" not in list(bench.servers["name"])
        bench.connect("t", Scripted("t", []))
        with pytest.raises(ValueError, match="invalid rate"):
            bench.map("t-work", [{"n": 1}], rate=value)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="invalid rate"):
            bench.compare("work", n=1, rate=value)  # type: ignore[arg-type]


def test_a_bucket_gives_turns_in_order_and_none_past_the_deadline() -> None:
    bucket = TokenBucket(parse_rate("10/s"))  # type: ignore[arg-type]
    assert bucket.reserve(100.0, 101.0) == 0.0
    assert bucket.reserve(100.0, 101.0) == pytest.approx(0.1)
    assert bucket.reserve(100.05, 101.0) == pytest.approx(0.15)
    assert bucket.reserve(100.0, 100.1) is None  # its turn (100.3) is after its deadline
    assert bucket.reserve(100.0, 101.0) == pytest.approx(0.3)  # the refused one took none


def test_a_rate_on_connect_paces_the_server_and_records_the_wait() -> None:
    with tb.Bench() as bench:
        bench.connect("slow", Scripted("slow", []), rate="20/s")
        bench.connect("free", Scripted("free", []))
        df = bench.compare("work", [{"n": i} for i in range(6)])
        records = bench.records.set_index("call_id").loc[list(df["call_id"])]
    assert all(df["ok"]) and len(df) == 12
    slow, free = records[records["server"] == "slow"], records[records["server"] == "free"]
    assert slow["queued_ms"].sum() > 0  # five of six waited for their turn
    assert free["queued_ms"].isna().all()  # a neighbour without a rate never queues


def test_a_rate_whose_turn_comes_after_the_timeout_is_not_sent() -> None:
    client = Scripted("s", [])
    with tb.Bench() as bench:
        bench.connect("s", client, rate="1/min")
        bench.call("s-work", n=0)
        with pytest.raises(Unreachable, match="paced at 1/min"):
            bench.call("s-work", n=1, timeout=0.5)
        assert bench.records.iloc[-1]["disposition"] == "did_not_happen"
    assert client.sent == [{"n": 0}]


def test_a_rate_in_a_configs_toolbench_key(tmp_path: Any) -> None:
    from toolbench._bench.servers.config import ConfigError, parse

    good = {"mcpServers": {"w": {"url": "http://127.0.0.1:9/mcp",
                                 "toolbench": {"rate": "600/min"}}}}
    assert parse(good).servers[0].options["rate"] == "600/min"
    for bad, where in (({"rate": "fast"}, "toolbench.rate"), ({"rate": "1/s", "burst": 2},
                       "toolbench.burst"), ("10/s", "toolbench")):
        config = {"mcpServers": {"w": {"url": "http://127.0.0.1:9/mcp", "toolbench": bad}}}
        with pytest.raises(ConfigError, match=where):
            parse(config)


def test_a_rate_never_holds_the_loop_or_a_neighbours_calls() -> None:
    async def main() -> list[str]:
        finished: list[str] = []
        async with tb.Bench() as bench:
            await bench.aconnect("slow", Scripted("slow", []), rate="2/s")
            await bench.aconnect("free", Scripted("free", []))

            async def paced() -> None:
                await bench.amap("slow-work", [{"n": i} for i in range(4)], progress=False)
                finished.append("paced map")

            async def neighbour() -> None:
                await asyncio.sleep(0.05)  # the map is waiting for its turns by now
                for n in range(3):
                    await bench.acall("free-work", n=n)
                finished.append("neighbour")

            await asyncio.gather(paced(), neighbour())
        return finished

    # The paced map needs 1.5 s of turns; the neighbour's three calls do not wait for them.
    assert asyncio.run(main()) == ["neighbour", "paced map"]


def test_a_journal_keeps_every_attempt_with_its_wait_and_the_last_ones_history(
        tmp_path: Any) -> None:
    path = tmp_path / "calls.sqlite"
    with tb.Bench(journal=path) as bench:
        bench.connect("s", Scripted("s", [busy(), busy(0.02), None]))
        bench.call("s-work", n=1, retries=3)
        before = bench.records
    with tb.Bench(journal=path) as again:
        after = again.records
    assert list(after["call_id"]) == list(before["call_id"])
    assert list(after["attempts"]) == [1, 2, 3]
    assert [p.get("retry_wait_ms") for p in after["provenance"]] == [10.0, 20.0, None]
    assert [r["wait_ms"] for r in after.iloc[-1]["provenance"]["retried"]] == [10.0, 20.0]
    assert after["queued_ms"].isna().all()


def test_a_cluster_map_refuses_retries_and_rates_it_cannot_keep() -> None:
    with tb.Bench() as bench:
        bench.connect("s", Scripted("s", []), rate="5/s")
        bench.connect("t", Scripted("t", []))
        cluster: Any = object()  # refused before the cluster is looked at
        for name, options in (("s-work", {}), ("t-work", {"retries": 1}),
                              ("t-work", {"rate": "1/s"})):
            with pytest.raises(ValueError, match=r"map\(cluster=\.\.\.\) takes no retries="):
                bench.map(name, [{"n": 1}], cluster=cluster, **options)
        assert len(bench.records) == 0
