"""Answering a widget message the way the kernel does, while a cell is busy.

``ask.py``'s cell-side pump runs the kernel's comm handlers itself while a synchronous
``bench.call`` blocks the main thread. Running the handler is not enough: ipywidgets 8's front
end throttles each widget. After it sends an ``update`` it buffers every further change of
that widget until an IOPub ``status: idle`` arrives whose parent is that update, and it matches
the kernel's ``echo_update`` to the update through the echo's ``parent_header``. A handler
run without those left the first keystroke in the kernel and the rest in the browser: "Lima"
reached the server as "L", and a corrected value never left the page.

So :class:`KernelPump` answers each comm message as ipykernel's ``dispatch_shell`` does: the
kernel's shell parent set to the message while its handler runs (the echo is parented to
it), ``status: busy`` before and ``status: idle`` after (both parented to it), then the cell's
own parent (and the kernel's fallback context) restored so the cell's later output still
lands in the cell.

An *awaiting* cell (``await bench.acall(...)``) needs no pump: ipykernel 7 dispatches comm
messages itself while a cell awaits, but it does so ``concurrent=True``, which publishes no
busy/idle at all (checked with ipykernel 7.4), so the same throttle kept the first change
only. :func:`answer_comm_status` wraps the kernel's ``dispatch_shell`` to add the missing
busy/idle around a concurrent comm message, parented to it; everything else passes through.

Both fail safe: a kernel without these methods gets :class:`PumpUnavailable` (the blocking
call then says to use ``await bench.acall``), and the wrapper is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import sys
from typing import Any

logger = logging.getLogger(__name__)

MAX_EVENTS = 50
"""Shell messages handled per pump slice (each is one widget update or click)."""
COMM_TYPES = frozenset({"comm_open", "comm_msg", "comm_close"})
KERNEL_NEEDS = ("set_parent", "get_parent", "_publish_status", "_get_shell_context_var",
                "_shell_parent_ident")
"""What the pump uses of ipykernel's ``Kernel`` (7.x) to answer as ``dispatch_shell`` does."""
_WRAPPED = "_toolbench_comm_status"


class PumpUnavailable(RuntimeError):
    """This kernel's message plumbing is not what the pump knows how to read."""


def _flush_output() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.flush()


class KernelPump:
    """Handles the kernel's pending widget messages while the main thread is busy in a cell.

    ipykernel 7 receives shell messages on its shell-channel thread and passes the main
    shell's to the main thread through an inproc socket, read by a ``ZMQStream`` on the main
    event loop; without that thread, the shell socket's own stream. Both are read here
    directly, without waiting: a comm message is answered now (see the module docstring),
    any other message is given back to the kernel's event loop, in order, so the kernel runs
    it after this cell exactly as it would have.
    """

    def __init__(self, kernel: Any) -> None:
        try:
            channel = getattr(kernel, "shell_channel_thread", None)
            if channel is not None:
                pair = channel.manager._shell_channel_to_main
                self.stream, self.socket = pair.to_stream, pair.to_socket
            else:
                self.stream = kernel.shell_stream
                self.socket = self.stream.socket
            self.callback = self.stream._recv_callback
            self.session, self.handlers = kernel.session, kernel.shell_handlers
            self.io_loop = kernel.io_loop
            self._tasks: set[asyncio.Future[Any]] = set()
        except AttributeError as exc:
            raise PumpUnavailable(f"this kernel ({type(kernel).__name__}) has no shell "
                                  f"stream the pump can read: {exc}") from exc
        if self.stream is None or self.callback is None or self.session is None:
            raise PumpUnavailable("the kernel's shell stream is not set up yet")
        missing = [name for name in KERNEL_NEEDS if not hasattr(kernel, name)]
        if missing:
            raise PumpUnavailable(f"this kernel ({type(kernel).__name__}) cannot answer a "
                                  f"widget message as ipykernel does: no {', '.join(missing)}")
        self.kernel = kernel

    def __call__(self, limit: int = MAX_EVENTS) -> int:
        """Handle up to ``limit`` pending messages; returns how many were read."""
        import zmq

        count = 0
        while count < limit:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            count += 1
            handled = False
            try:
                handled = self._comm(frames)
            except Exception:
                logger.debug("a widget message failed in the pump", exc_info=True)
                handled = True  # as the kernel would: it logs a failing handler and goes on
            finally:
                if not handled:  # also on KeyboardInterrupt: nothing read is ever lost
                    self.io_loop.add_callback(self._redeliver, frames)
        return count

    def _comm(self, frames: list[Any]) -> bool:
        """Answer a comm message now, as ``dispatch_shell`` would; False for any other."""
        idents, rest = self.session.feed_identities(frames, copy=False)
        header = self.session.deserialize(rest, content=False, copy=False)["header"]
        kind = header.get("msg_type")
        if kind not in COMM_TYPES or kind not in self.handlers:
            return False
        message = self.session.deserialize(rest, content=True, copy=False)
        kernel = self.kernel
        cell_parent = kernel.get_parent("shell")  # the running cell's execute_request
        cell_ident = kernel._get_shell_context_var(kernel._shell_parent_ident)
        fallback = getattr(kernel, "_shell_context", None)
        kernel.set_parent(idents, message, channel="shell")
        try:
            kernel._publish_status("busy", "shell")  # parented to the message, as above
            try:
                self.handlers[kind](self.stream, idents, message)
            finally:
                _flush_output()
                kernel._publish_status("idle", "shell")  # the front end sends what it held
        finally:
            kernel.set_parent(cell_ident, cell_parent, channel="shell")
            if fallback is not None:  # set_parent replaced it with a copy of this context
                kernel._shell_context = fallback
        return True

    def _redeliver(self, frames: list[Any]) -> None:
        """Give a message back to the kernel's own handler, as its stream would have."""
        result = self.callback(frames)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            task = asyncio.ensure_future(result)
            self._tasks.add(task)  # asyncio keeps only weak references to tasks
            task.add_done_callback(self._tasks.discard)


def answer_comm_status(kernel: Any) -> bool:
    """Have ``kernel`` publish busy/idle for a comm message it dispatches while a cell awaits.

    Wraps ``kernel.dispatch_shell`` once (main thread, before the messages come). Returns
    whether the wrapper is in place; a kernel whose ``dispatch_shell`` has no ``concurrent``
    parameter (not ipykernel 7) is left alone.
    """
    original = getattr(kernel, "dispatch_shell", None)
    session = getattr(kernel, "session", None)
    if original is None or session is None or not hasattr(kernel, "_publish_status"):
        return False
    if getattr(original, _WRAPPED, False):
        return True
    try:
        if "concurrent" not in inspect.signature(original).parameters:
            return False
    except (TypeError, ValueError):
        return False

    def comm_header(frames: Any) -> dict[str, Any] | None:
        try:  # the header only: a content=False read records no signature (no replay check)
            _idents, rest = session.feed_identities(frames, copy=False)
            header = session.deserialize(rest, content=False, copy=False)["header"]
        except Exception:
            return None
        return header if header.get("msg_type") in COMM_TYPES else None

    async def dispatch_shell(msg: Any, /, subshell_id: str | None = None, *,
                             concurrent: bool = False) -> Any:
        header = comm_header(msg) if concurrent else None
        if header is not None:
            kernel._publish_status("busy", "shell", parent={"header": header})
        try:
            return await original(msg, subshell_id=subshell_id, concurrent=concurrent)
        finally:
            if header is not None:
                _flush_output()
                kernel._publish_status("idle", "shell", parent={"header": header})

    setattr(dispatch_shell, _WRAPPED, True)
    kernel.dispatch_shell = dispatch_shell
    return True
