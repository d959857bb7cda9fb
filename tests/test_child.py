"""``toolbench lab``'s child ends with it: a real JupyterLab, a real kernel, real signals.

The command runs in a session of its own (as under a supervisor or a closed terminal), with
stdin not a terminal; the whole process tree is taken from psutil before the signal, and
every process of it must be gone after, whatever stopped the command.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest

from toolbench import _child

START_S = 180.0
"""JupyterLab starts in a few seconds; under a loaded CI machine it may take much longer."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def api(port: int, path: str, method: str = "GET") -> Any:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=b"{}" if method == "POST" else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read() or b"null")


def start_lab(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(folder / "runtime"),
           "JUPYTER_CONFIG_DIR": str(folder / "config")}
    log = (folder / "lab.log").open("wb")
    command = [sys.executable, "-m", "toolbench", "lab", "--no-browser", f"--port={port}",
               "--ServerApp.port_retries=0", "--IdentityProvider.token=",
               "--ServerApp.disable_check_xsrf=True"]
    proc = subprocess.Popen(command, cwd=folder, env=env, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    deadline = time.monotonic() + START_S
    while True:
        try:
            api(port, "/api/status")
            return proc, port
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError("JupyterLab did not start:\n"
                                     + (folder / "lab.log").read_text(errors="replace")) from exc
            time.sleep(0.5)


def _command_lines(processes: list[psutil.Process]) -> list[str]:
    """Lab starts short helpers of its own; one that has exited but is not yet reaped (a
    zombie) has no command line left to read, and is no process left behind either."""
    lines = []
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):  # ZombieProcess is one of these
            lines.append(" ".join(process.cmdline()))
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "SIGINT", "SIGKILL"])
def test_stopping_toolbench_lab_leaves_no_process_behind(tmp_path: Path, how: str) -> None:
    proc, port = start_lab(tmp_path)
    tree: list[psutil.Process] = []
    try:
        kernel = api(port, "/api/kernels", "POST")  # a kernel: JupyterLab's own child
        tree = psutil.Process(proc.pid).children(recursive=True)
        commands = _command_lines(tree)
        assert any("-m jupyterlab" in c for c in commands), commands
        assert any(kernel["id"] in c for c in commands), commands  # the kernel's connection file
        os.kill(proc.pid, getattr(signal, how))
        code = proc.wait(timeout=60)
        if how in ("SIGTERM", "SIGHUP"):  # passed on, and reported as a shell would
            assert code == 128 + getattr(signal, how), code
        _, alive = psutil.wait_procs(tree, timeout=60)
        assert not alive, _command_lines(alive)
    finally:  # never leave one running, even when the test fails
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for leftover in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                leftover.kill()


def test_the_death_signal_is_asked_for_on_linux_only() -> None:
    made = _child.die_with_parent()
    assert (made is not None) == sys.platform.startswith("linux")


@pytest.mark.slow
def test_a_child_killed_by_a_signal_is_reported_as_128_plus_the_signal(tmp_path: Path) -> None:
    code = _child.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), "
                       "signal.SIGKILL)"], cwd=str(tmp_path))
    assert code == 128 + signal.SIGKILL
    assert _child.run([sys.executable, "-c", "raise SystemExit(7)"]) == 7


@pytest.mark.slow
def test_a_child_that_ignores_the_signal_is_killed_after_the_grace(
        tmp_path: Path) -> None:
    # The command itself (a Python running _child.run) gets SIGTERM; its child ignores it.
    script = ("import signal, sys\nfrom toolbench import _child\n_child.GRACE_S = 1.0\n"
              "sys.exit(_child.run([sys.executable, '-c', 'import signal, time; "
              "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); "
              "time.sleep(600)']))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"1"
        tree = psutil.Process(proc.pid).children(recursive=True)
        assert tree
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
        assert time.monotonic() - started >= 0.9  # it waited for the grace first
        _, alive = psutil.wait_procs(tree, timeout=10)
        assert not alive
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
