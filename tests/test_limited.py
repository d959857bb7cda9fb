"""Against the bundled rate-limited HTTP demo server (toolbench/demo/limited.py), a real
streamable HTTP server on 127.0.0.1 that counts at ``/stats`` what it received and ran.

HTTP 429 and 503 answered before the server ran anything are ``Unreachable`` naming the
status and the ``Retry-After`` (toolbench/_transports/wire/busy.py); retries gather every row
and never run a case twice; a crash mid-retry leaves what the journal says.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

import toolbench as tb
from tests.serving import limited_server, limited_stats
from toolbench._transports.wire.busy import parse_retry_after

pytestmark = pytest.mark.slow


# -- Retry-After, as the server wrote it ----------------------------------------------------
NOW = datetime(2026, 7, 28, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(("header", "seconds"), [
    ("3", 3.0), (" 120 ", 120.0), ("0.25", 0.25), ("31536000", 31536000.0),  # a year: kept
    (format_datetime(NOW + timedelta(seconds=90), usegmt=True), 90.0),
    (format_datetime(NOW - timedelta(seconds=90), usegmt=True), 0.0),  # past: at once
])
def test_a_retry_after_in_seconds_or_as_an_http_date(header: str, seconds: float) -> None:
    wait, note = parse_retry_after(header, NOW.timestamp())
    assert wait == pytest.approx(seconds) and note is None


@pytest.mark.parametrize("header", ["soon", "-5", "nan", "inf", "", "1" * 100,
                                    "Tue, 99 Foo 2026 99:99:99 GMT"])
def test_a_garbage_or_negative_retry_after_is_ignored_with_a_note(header: str) -> None:
    wait, note = parse_retry_after(header, NOW.timestamp())
    assert wait is None and note is not None and "ignored a Retry-After" in note


# -- 429 and 503 over HTTP -------------------------------------------------------------------
def test_a_429_is_unreachable_naming_the_status_and_the_wait() -> None:
    with limited_server("--forever", "--retry-after", "7") as url, tb.Bench() as bench:
        bench.connect("lim", url)
        with pytest.raises(tb.Unreachable) as caught:
            bench.call("lim-lookup", n=1)
        error = caught.value
        assert error.disposition == tb.Disposition.DID_NOT_HAPPEN
        assert "HTTP 429 Too Many Requests (Retry-After: 7 s)" in error.detail
        assert "ran nothing" in error.detail and "-32603" not in error.detail
        assert error.retry_after == 7.0
        assert limited_stats(url)["served"] == 0
        assert list(bench.servers["status"]) == ["connected"]  # a 429 drops no connection


def test_a_503_is_unreachable_and_a_retry_gathers_the_row() -> None:
    with limited_server("--unavailable-every", "2", "--retry-after", "0.05") as url, \
            tb.Bench() as bench:
        bench.connect("lim", url)
        assert bench.call("lim-lookup", n=1).structured == {"n": 1, "square": 1,
                                                             "digit_sum": 1}
        with pytest.raises(tb.Unreachable, match=r"HTTP 503 Service Unavailable"):
            bench.call("lim-lookup", n=2)
        assert bench.call("lim-lookup", n=3).structured["square"] == 9
        assert bench.call("lim-lookup", n=4, retries=2).structured["square"] == 16  # 503 first
        assert list(bench.records["attempts"]) == [1, 1, 1, 1, 2]
        stats = limited_stats(url)
    assert stats["served"] == 3 and stats["unavailable"] == 2 and stats["repeated"] == 0


def test_a_server_that_answers_429_forever_ends_each_call_within_its_timeout() -> None:
    with limited_server("--forever", "--retry-after", "0.2") as url, tb.Bench() as bench:
        bench.connect("lim", url)
        df = bench.map("lim-lookup", [{"n": i} for i in range(3)], retries=1000, timeout=1.5,
                       progress=False)
        stats = limited_stats(url)
    assert list(df["error_type"]) == ["Unreachable"] * 3
    assert set(df["disposition"]) == {"did_not_happen"}
    assert all(a >= 2 for a in df["attempts"])  # retried, and counted
    assert all(f"after {a} attempts" in e for a, e in zip(df["attempts"], df["error"],
                                                          strict=True))
    assert stats["served"] == 0 and stats["received"] == sum(df["attempts"])


def test_a_sweep_at_the_limit_gathers_every_row_and_sends_no_call_twice() -> None:
    cases = 200
    with limited_server("--rate", "50", "--burst", "5", "--unavailable-every", "40") as url, \
            tb.Bench() as bench:
        bench.connect("lim", url)
        df = bench.map("lim-lookup", [{"n": i} for i in range(cases)], rate="50/s",
                       retries=10, progress=False)
        stats = limited_stats(url)
        assert len(bench.records) == stats["received"]  # every attempt is a record
    assert len(df) == cases and bool(df["ok"].all())
    assert [s["n"] for s in df["structured"]] == list(range(cases))
    assert stats["served"] == cases and stats["distinct"] == cases
    assert stats["repeated"] == 0  # no call ran twice
    assert stats["unavailable"] >= 1 and int(df["attempts"].max()) >= 2  # 503s were retried
    assert df["queued_ms"].notna().all()  # each waited its turn (or 0 ms) under the rate


# -- a crash mid-retry, with a journal -------------------------------------------------------
JOB = textwrap.dedent("""
    import sys
    import toolbench as tb

    journal, url, count = sys.argv[1:4]
    bench = tb.Bench(journal=journal)
    bench.connect("lim", url)
    print("ready", flush=True)
    bench.map("lim-lookup", [{"n": i} for i in range(int(count))], concurrency=4,
              retries=1000, timeout=60, progress=False)
    print("finished", flush=True)
""")


def test_a_crash_mid_retry_leaves_what_the_journal_says_and_resume_repeats_only_those(
        tmp_path: Path) -> None:
    journal = tmp_path / "calls.sqlite"
    script = tmp_path / "job.py"
    script.write_text(JOB)
    cases = 12
    with limited_server("--forever", "--retry-after", "0.1") as url:
        proc = subprocess.Popen([sys.executable, str(script), str(journal), url, str(cases)],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            deadline = time.monotonic() + 60
            while limited_stats(url)["received"] < 3 * cases and time.monotonic() < deadline:
                time.sleep(0.1)  # every case has been refused, and retried, a few times
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
        assert limited_stats(url)["served"] == 0
    with limited_server("--rate", "1000", "--burst", "100") as url, \
            tb.Bench(journal=journal) as bench:
        before = bench.records
        # Every attempt that finished is did_not_happen (a 429); one in flight at the kill
        # is in doubt: its intent was on disk, its outcome not. Nothing landed.
        assert set(before["disposition"]) <= {"did_not_happen", "in_doubt"}
        assert (before["disposition"] == "did_not_happen").sum() >= 2 * cases
        doubt = {r["n"] for r in before[before["disposition"] == "in_doubt"]["arguments"]}
        assert len(doubt) <= 4  # at most one attempt per lane was in flight
        bench.connect("lim", url)
        df = bench.map("lim-lookup", [{"n": i} for i in range(cases)], resume=True,
                       progress=False)
        stats = limited_stats(url)
    # resume repeats exactly the cases that cannot have landed; the in-doubt stay as they are
    assert stats["served"] == cases - len(doubt) and stats["repeated"] == 0
    assert {r["n"] for r, ok in zip(df["arguments"], df["ok"], strict=True) if ok} == (
        set(range(cases)) - doubt)


def test_the_demo_server_emits_cache_hints_for_its_lists() -> None:
    from toolbench.demo.limited import Limits, Stats, build_server

    server = build_server(Limits(), Stats(), list_ttl_ms=5000, cache_scope="private")
    hints = server._lowlevel_server.cache_hints
    assert hints["tools/list"].ttl_ms == 5000 and hints["tools/list"].scope == "private"


def test_a_rate_from_the_configs_toolbench_key_paces_an_http_server() -> None:
    with limited_server("--rate", "20", "--burst", "5") as url, tb.Bench() as bench:
        bench.load_config({"mcpServers": {"lim": {"url": url,
                                                  "toolbench": {"rate": "20/s"}}}})
        df = bench.map("lim-lookup", [{"n": i} for i in range(30)], retries=5,
                       progress=False)
        stats = limited_stats(url)
    assert bool(df["ok"].all()) and stats["served"] == 30 and stats["repeated"] == 0
    assert df["queued_ms"].notna().all() and df["queued_ms"].max() > 0  # paced by the config


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_a_bad_retry_after_is_refused_naming_it(value: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The demo's own ``--retry-after`` is checked as its other numbers are (a negative or
    NaN one was served as the header ``-1`` or ``nan``); named before anything else."""
    from toolbench.demo import limited

    with pytest.raises(SystemExit):
        limited.main(["--retry-after", value, "--port", "-5"])
    err = capsys.readouterr().err
    assert f"--retry-after: {value}: a number of seconds, 0 or more" in err
