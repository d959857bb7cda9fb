"""``map(..., cluster=client)`` on a real LocalCluster of worker processes, real stdio servers.

Every test makes its own cluster (2 worker processes) and closes it, so no worker or stdio
child outlives it (the autouse fixture in conftest checks the whole process tree).
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

import toolbench as tb

distributed = pytest.importorskip("distributed")

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("dask_resource_tracker")]

HERE = Path(__file__).parent
CPU_SERVER = str(HERE / "servers" / "cpu_server.py")
SECRET = "s3cr3t-value-for-the-cluster-test"


def _connect(bench: tb.Bench, log: Path | None = None) -> None:
    env = {"TOOLBENCH_TEST_SECRET": SECRET}
    if log is not None:
        env["TOOLBENCH_CALL_LOG"] = str(log)
    bench.connect("cpu", [sys.executable, CPU_SERVER], env=env)


def _log(log: Path) -> list[tuple[int, int]]:
    """(case, server pid) of every call that ran, in order (a torn last line is skipped)."""
    text = log.read_text() if log.exists() else ""
    return [(int(parts[0]), int(parts[1])) for parts in map(str.split, text.splitlines())
            if len(parts) == 2]


def _ran(log: Path) -> collections.Counter[int]:
    return collections.Counter(i for i, _ in _log(log))


def _wait_for(predicate: Any, bound: float, what: str) -> None:
    deadline = time.monotonic() + bound
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {bound} s")
        time.sleep(0.05)


def test_import_toolbench_does_not_import_dask() -> None:
    code = "import sys, toolbench; print(sorted(m for m in sys.modules if m.split('.')[0] in " \
           "('dask', 'distributed', 'toolbench._bench.many.cluster')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.timeout(600)
def test_same_records_as_local_and_secrets_stay_in_messages(dask_client: Any) -> None:
    cases = [{"i": i, "ms": 0} for i in range(2000)]
    with tb.Bench() as bench:
        _connect(bench)
        local = bench.map("cpu-burn", cases, progress=False)
        remote = bench.map("cpu-burn", cases, cluster=dask_client, progress=False, concurrency=4)
        assert remote["ok"].all(), remote[~remote["ok"]][["error_type", "error"]].head()
        assert len(remote) == len(local) == 2000
        # the same argument sets and answers (apart from which process answered)
        assert _answers(remote) == _answers(local) == {(i, i) for i in range(2000)}
        assert list(remote["arguments"]) == cases  # in case order, like a local map
        assert remote["call_id"].is_unique and remote["batch"].nunique() == 1
        assert set(remote["name"]) == {"cpu-burn"}
        assert [p["case"] for p in remote["provenance"]] == list(range(2000))
        # the answers came from the workers' own servers, not the driver's
        driver_pid = local["structured"].iloc[0]["pid"]
        remote_pids = {s["pid"] for s in remote["structured"]}
        assert driver_pid not in remote_pids and len(remote_pids) == 2
        assert len(bench.records) == 4000
        # the env (a secret) reached the workers' servers ...
        lens = bench.map("cpu-secret_len", [{}] * 4, cluster=dask_client, progress=False)
        assert list(lens["structured"].map(lambda s: s["result"])) == [len(SECRET)] * 4
        # ... inside Dask's messages only: not in a key, a task name, an event or a log line
        seen = dask_client.run_on_scheduler(_scheduler_names)
        assert any(k.startswith("toolbench-map-burn-") for k in seen), seen[:5]
        logs = [dask_client.get_scheduler_logs(), dask_client.get_worker_logs(),
                dask_client.get_events(), dask_client.run_on_scheduler(_scheduler_names)]
        assert SECRET not in repr(logs)
        # and a server that cannot travel is refused by name, before anything ships
        with pytest.raises(TypeError, match=r"dask\.distributed\.Client"):
            bench.map("cpu-burn", cases[:2], cluster="tcp://127.0.0.1:1")
    with tb.Bench() as bench:
        bench.add(tb.ToolBox(twice))
        with pytest.raises(ValueError, match=r"server 'box' \(toolbox\) cannot run on a Dask"):
            bench.map("box-twice", [{"x": 1}], cluster=dask_client)


def _answers(df: Any) -> set[tuple[int, int]]:
    return {(row.arguments["i"], row.structured["i"]) for row in df.itertuples()}


@tb.tool(server="box")
def twice(x: int) -> int:
    """Twice x."""
    return 2 * x


def _scheduler_names(dask_scheduler: Any) -> list[str]:
    """Every task key and task group/prefix name the scheduler still knows of."""
    names = [str(entry[0]) for entry in dask_scheduler.transition_log]
    names += [str(k) for k in dask_scheduler.tasks]
    names += [str(k) for k in dask_scheduler.task_prefixes]
    names += [str(k) for k in dask_scheduler.task_groups]
    return names


def _worker_pids(client: Any) -> dict[str, int]:
    return dict(client.run(os.getpid))


def _server_pids(df: Any) -> set[int]:
    return {s["pid"] for s in df["structured"] if isinstance(s, dict) and "pid" in s}


@pytest.mark.timeout(600)
def test_a_killed_worker_leaves_only_its_unreported_calls_in_doubt(
        dask_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolbench._bench.many import cluster as _cluster

    # One partition per worker: the victim is surely mid-partition when it dies.
    monkeypatch.setattr(_cluster, "PARTITIONS_PER_THREAD", 1)
    log = tmp_path / "calls.log"
    cases = [{"i": i, "ms": 10} for i in range(600)]
    journal = tmp_path / "calls.sqlite"
    result: dict[str, Any] = {}
    with tb.Bench(journal=journal) as bench:
        _connect(bench, log)
        bench.map("cpu-burn", [{"i": -1, "ms": 0}], cluster=dask_client, progress=False)  # warm up
        pids = _worker_pids(dask_client)

        def run() -> None:
            try:
                result["df"] = bench.map("cpu-burn", cases, cluster=dask_client, progress=False,
                                         concurrency=4)
            except BaseException as exc:  # the assertion below shows it
                result["error"] = exc

        thread = threading.Thread(target=run)
        thread.start()

        # Dask may run both partitions on one worker, one after the other: the victim is
        # the worker whose server ran the latest call, so it is surely mid-partition.
        _wait_for(lambda: sum(1 for i, _ in _log(log) if i >= 0) >= 60, 240, "calls running")
        server = _log(log)[-1][1]
        victim = psutil.Process(server).ppid()
        assert victim in pids.values()
        os.kill(victim, signal.SIGKILL)
        thread.join(480)
        assert not thread.is_alive(), "the map did not finish after a worker was killed"
        assert "error" not in result, result.get("error")
        df = result["df"]
    ran = _ran(log)
    assert len(df) == 600 and sorted(a["i"] for a in df["arguments"]) == list(range(600))
    assert max(ran.values()) == 1, [i for i, n in ran.items() if n > 1]  # nothing ran twice
    doubt = df[df["disposition"] == "in_doubt"]
    landed = df[df["ok"]]
    assert len(doubt) + len(landed) == 600, df[~df["ok"]]["error"].head()
    # In doubt: exactly the victim's calls (none reported: its one partition died), plus at
    # most the few granted to it and not yet begun (concurrency 4).
    on_victim = {i for i, pid in _log(log) if pid == server and i >= 0}
    doubted = {a["i"] for a in doubt["arguments"]}
    assert on_victim <= doubted and len(doubted - on_victim) <= 4, (len(on_victim), len(doubted))
    assert set(doubt["error_type"]) == {"TimedOut"}
    assert all("lost before reporting" in e for e in doubt["error"])
    for row in landed.itertuples():  # every answer came from a call that ran, once
        assert ran[row.arguments["i"]] == 1
    # the rest of the job ran on the other workers, the rest of the victim's own partition
    # included; nothing the victim's server answered was reported
    assert server not in _server_pids(landed)
    half = range(0, 300) if max(on_victim) < 300 else range(300, 600)
    assert any(a["i"] in half for a in landed["arguments"])
    # the journal holds exactly what the driver holds: nothing left as an open intent
    with tb.Bench(journal=journal) as again:
        records = again.records
    assert len(records) == len(df) + 1
    reopened = records[records["batch"] == df["batch"].iloc[0]]
    assert sorted(reopened["call_id"]) == sorted(df["call_id"])
    assert (reopened["disposition"] == "in_doubt").sum() == len(doubt)


DRIVER = textwrap.dedent("""
    import sys
    import toolbench as tb
    from distributed import Client, LocalCluster

    if __name__ == "__main__":
        journal, log, server, secret = sys.argv[1:5]
        cluster = LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                               dashboard_address=":0")
        client = Client(cluster)
        bench = tb.Bench(journal=journal)
        bench.connect("cpu", [sys.executable, server],
                      env={"TOOLBENCH_CALL_LOG": log, "TOOLBENCH_TEST_SECRET": secret})
        print("ready", flush=True)
        bench.map("cpu-burn", [{"i": i, "ms": 20} for i in range(400)], cluster=client,
                  progress=False, concurrency=4)
        print("finished", flush=True)
""")


@pytest.mark.timeout(600)
def test_a_killed_driver_resumes_without_running_anything_twice(dask_client: Any,
                                                                 tmp_path: Path) -> None:
    log, journal = tmp_path / "calls.log", tmp_path / "calls.sqlite"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    errors = tmp_path / "driver.err"
    with errors.open("wb") as stderr:
        driver = subprocess.Popen([sys.executable, str(script), str(journal), str(log),
                                   CPU_SERVER, SECRET], stdout=subprocess.DEVNULL, stderr=stderr)

    def running() -> bool:
        if driver.poll() is not None:
            tail = errors.read_text(errors="replace")[-3000:]
            raise AssertionError(f"the driver ended by itself ({driver.returncode}): {tail}")
        return sum(_ran(log).values()) >= 100

    try:
        _wait_for(running, 300, "the driver's calls")
        tree = psutil.Process(driver.pid).children(recursive=True)
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
        _, alive = psutil.wait_procs(tree, timeout=60)  # workers and servers follow it
        assert not alive, [p.cmdline() for p in alive]
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(30)
    first = _ran(log)
    assert 100 <= sum(first.values()) < 400  # killed mid-job
    cases = [{"i": i, "ms": 20} for i in range(400)]
    with tb.Bench(journal=journal) as bench:
        before = bench.records
        doubt = set(before[before["disposition"] == "in_doubt"]["arguments"].map(
            lambda a: a["i"]))
        landed = set(before[before["ok"]]["arguments"].map(lambda a: a["i"]))
        # every call that ran is either recorded or in doubt: none can run again
        assert set(first) <= doubt | landed
        _connect(bench, log)
        df = bench.map("cpu-burn", cases, cluster=dask_client, progress=False, resume=True)
    ran = _ran(log)
    assert max(ran.values()) == 1, [i for i, n in ran.items() if n > 1]
    assert len(df) == 400
    assert set(df[df["disposition"] == "in_doubt"]["arguments"].map(lambda a: a["i"])) == doubt
    assert df[df["disposition"] != "in_doubt"]["ok"].all()
    assert set(ran) == set(range(400)) - (doubt - set(first))


@pytest.mark.timeout(300)
def test_no_child_outlives_the_cluster(tmp_path: Path) -> None:
    cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)
    try:
        with tb.Bench() as bench:
            _connect(bench)
            df = bench.map("cpu-burn", [{"i": i, "ms": 1} for i in range(40)], cluster=client,
                           progress=False)
            servers = _server_pids(df)
            workers = set(_worker_pids(client).values())
            assert len(servers) == 2 and not servers & workers
            for pid in servers:  # each server is a child of a worker process
                assert psutil.Process(pid).ppid() in workers
    finally:
        client.close()
        cluster.close()
    procs = []
    for pid in servers | workers:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs(procs, timeout=30)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.timeout(300)
def test_an_interrupt_cancels_what_has_not_started(dask_client: Any, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    cases = [{"i": i, "ms": 20} for i in range(1000)]
    with tb.Bench() as bench:
        _connect(bench, log)
        bench.map("cpu-burn", [{"i": -1, "ms": 0}], cluster=dask_client, progress=False)

        async def interrupted() -> None:
            task = asyncio.ensure_future(bench.amap("cpu-burn", cases, cluster=dask_client,
                                                    progress=False, concurrency=2))
            while sum(_ran(log).values()) < 40:
                await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(interrupted())
        # the async face returns at once; the job records its granted calls as it winds down
        _wait_for(lambda: len(bench.records) > 1 and _count_stable(log), 60, "the wind-down")
        records = bench.records
        job = records[records["batch"] != records["batch"].iloc[0]]
        # calls granted but not reported are in doubt; what never started has no record
        assert len(job) < 1000
        assert set(job["disposition"]) <= {"in_doubt", "landed"}
        # nothing more starts: the call log stops growing, well short of the job
        _wait_for(lambda: _count_stable(log), 60, "calls to stop")
        assert sum(_ran(log).values()) < 1000
        assert set(_ran(log)) - {-1} <= set(job["arguments"].map(lambda a: a["i"]))
        _wait_for(lambda: not dask_client.run_on_scheduler(_live_map_tasks), 60, "tasks to go")


def _count_stable(log: Path) -> bool:
    before = sum(_ran(log).values())
    time.sleep(1.5)
    return sum(_ran(log).values()) == before


def _live_map_tasks(dask_scheduler: Any) -> list[str]:
    return [str(k) for k in dask_scheduler.tasks if str(k).startswith("toolbench-map-")]


NAMED_SERVER = str(HERE / "servers" / "secret_named_server.py")


@pytest.mark.timeout(300)
def test_a_tool_named_after_a_secret_keeps_it_out_of_keys_records_and_journal(
        tmp_path: Path) -> None:
    """Task keys are built from the tool's name as records show it (redacted), and a resumed
    cluster map still recognises what ran: nothing runs twice (a thread LocalCluster, so the
    scheduler's own state can be read whole)."""
    log, journal = tmp_path / "calls.log", tmp_path / "calls.sqlite"
    name = f"named-get-{SECRET}"
    env = {"TOOLBENCH_TEST_SECRET": SECRET, "TOOLBENCH_CALL_LOG": str(log)}
    cluster = distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)
    try:
        with tb.Bench(journal=journal) as bench:
            bench.connect("named", [sys.executable, NAMED_SERVER], env=env)
            first = bench.map(name, [{"i": i} for i in range(6)], cluster=client,
                              progress=False)
            assert first["ok"].all(), first[["error_type", "error"]]
            assert set(first["tool"]) == {"get-[redacted]"}
        with tb.Bench(journal=journal) as bench:  # a new bench on the same file
            bench.connect("named", [sys.executable, NAMED_SERVER], env=env)
            again = bench.map(name, [{"i": i} for i in range(8)], cluster=client,
                              progress=False, resume=True)
            shown = repr(bench.records.to_dict("records"))
        names = client.run_on_scheduler(_scheduler_names)
        assert any(k.startswith("toolbench-map-get_redacted_-") for k in names), names[:5]
        logs = [names, client.get_scheduler_logs(), client.get_worker_logs(),
                client.get_events()]
    finally:
        client.close()
        cluster.close()
    assert again["ok"].all() and list(again["call_id"][:6]) == list(first["call_id"])
    assert sorted(_logged(log)) == list(range(8))  # 0-5 once, then only 6 and 7
    for where, text in (("scheduler", repr(logs)), ("records", shown)):
        assert SECRET.lower() not in text.lower(), where
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.suffix != ".log")
    assert SECRET.lower().encode() not in on_disk.lower()


def _logged(log: Path) -> list[int]:
    return [int(line) for line in log.read_text().split()]
