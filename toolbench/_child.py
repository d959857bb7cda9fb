"""A child process that ends with the command that started it (``toolbench lab``).

``toolbench lab`` runs ``python -m jupyterlab`` as a child and waits for it. A plain
``subprocess.call`` leaves JupyterLab (and its kernels) running when the command is stopped
by a signal: a supervisor's ``SIGTERM``, a closed terminal's ``SIGHUP``, a ``kill -9``. So:

- ``SIGTERM`` and ``SIGHUP`` sent to the command are passed on to the child, which shuts
  down cleanly (JupyterLab stops its kernels); a child still running ``GRACE_S`` seconds
  later is killed. The command then exits with ``128 + signal``, as a shell reports it.
- ``SIGINT`` is passed on only when it cannot have reached the child already: a Ctrl-C in
  the terminal goes to the whole foreground process group, child included (JupyterLab then
  asks "Shutdown this Jupyter server?" itself); sending it twice would skip that question.
- A command killed outright (``SIGKILL``, or dying any other way) cannot pass anything on.
  On Linux the child asks the kernel for ``SIGTERM`` when its parent dies
  (``prctl(PR_SET_PDEATHSIG)``, set in the child between fork and exec).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

GRACE_S = 10.0
"""How long the child may take to stop after a passed-on signal before it is killed."""
PR_SET_PDEATHSIG = 1
"""``prctl`` option (linux/prctl.h): the signal a process gets when its parent dies."""
_ORPHANED_EXIT = 129
"""Exit status of a child whose parent died before it could ask for the death signal."""


def _passed_on() -> list[signal.Signals]:
    names = ("SIGTERM", "SIGHUP", "SIGINT")
    return [getattr(signal, name) for name in names if hasattr(signal, name)]


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get ``SIGTERM`` when this process dies (Linux),
    or None where that cannot be had."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def in_child() -> None:  # after fork, before exec: only a syscall and a check
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(_ORPHANED_EXIT)

    return in_child


def _terminal_sent_it_to_the_child_too() -> bool:
    """Whether a SIGINT here came from a terminal that gave it to the child as well: stdin is
    a terminal whose foreground process group is ours (the child shares it)."""
    try:
        fd = sys.stdin.fileno()
        return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
    except (AttributeError, OSError, ValueError):
        return False


class _Forwarder:
    """Signal handlers that pass a signal on to the child (or hold it until there is one)."""

    def __init__(self) -> None:
        self.child: subprocess.Popen[bytes] | None = None
        self.pending: list[int] = []
        self.stopped_by: int | None = None
        self._killer: threading.Timer | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and _terminal_sent_it_to_the_child_too():
            return
        if signum != signal.SIGINT and self.stopped_by is None:
            self.stopped_by = signum
        if self.child is None:
            self.pending.append(signum)
            return
        self._send(signum)

    def started(self, child: subprocess.Popen[bytes]) -> None:
        self.child = child
        for signum in self.pending:
            self._send(signum)
        self.pending.clear()

    def _send(self, signum: int) -> None:
        child = self.child
        if child is None or child.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)
        if signum != signal.SIGINT and self._killer is None:  # bound the child's shutdown
            self._killer = threading.Timer(GRACE_S, self._kill)
            self._killer.daemon = True
            self._killer.start()

    def _kill(self) -> None:
        child = self.child
        if child is not None and child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                child.kill()

    def done(self) -> None:
        if self._killer is not None:
            self._killer.cancel()


def run(command: Sequence[str], cwd: str | None = None) -> int:
    """Run ``command`` as a child tied to this process, and return its exit status.

    Args:
        command: the program and its arguments.
        cwd: the child's working folder (default: this one's).

    Returns:
        The child's exit status; ``128 + n`` when signal ``n`` stopped the command (it was
        passed on to the child) or killed the child.

    Raises:
        OSError: the program could not be started.
    """
    forward = _Forwarder()
    previous: dict[int, Any] = {}
    for passed in _passed_on():
        previous[passed] = signal.signal(passed, forward)
    try:
        child = subprocess.Popen(list(command), cwd=cwd, preexec_fn=die_with_parent())
        forward.started(child)
        code = child.wait()
    finally:
        forward.done()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if forward.stopped_by is not None:
        return 128 + forward.stopped_by
    return 128 - code if code < 0 else code
