"""Widgets change on the kernel's thread: a progress bar's state, handed over from the loop.

A bar's updates come from the shared loop's thread (a server's progress, a map's finished
calls), but an ipywidget must be created and changed on the kernel's own thread, where
its comm messages belong. So a :class:`KernelBar` only records its state on the loop's
thread (a few attribute writes) and marks itself dirty; the kernel's thread applies the
latest state: every slice while a cell waits in a synchronous call (``_loop``'s slice work),
and through the kernel's ``io_loop`` while the kernel is free (an awaiting cell). Updates
coalesce: however many arrive, at most one pending sync per bar, so the hand-over is bounded.
Outside a kernel there is no widget, and a bar is drawn where it is updated.

**Which cell shows it.** The bar is made inside the context captured when the call started
(the calling cell's), so it shows under the cell that called.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
from typing import Any

from toolbench import _loop

_dirty: dict[int, KernelBar] = {}
_lock = threading.Lock()
_scheduled = False


def running_kernel() -> Any | None:
    """The ipykernel kernel of this process, if it is one (its shell is a ZMQ shell)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
    except Exception:
        return None
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return None
    return getattr(shell, "kernel", None)


def drain() -> None:
    """Apply every dirty bar's latest state; on the kernel's main thread only."""
    global _scheduled
    if threading.current_thread() is not threading.main_thread():
        return
    with _lock:
        bars = list(_dirty.values())
        _dirty.clear()
        _scheduled = False
    for bar in bars:
        bar.sync()


_loop.add_slice_work(drain)


class KernelBar:
    """A ``tqdm.auto`` bar made and changed on the kernel's thread (see the module doc).

    The tqdm-like face the bench uses: ``update``, ``total``, ``n``, ``set_postfix_str``,
    ``close``. ``lazy``: made on the first update, not at once (a call's bar).
    """

    def __init__(self, total: float | None, label: str, *, interval: float = 0.1,
                 lazy: bool = False, bar_format: str | None = None) -> None:
        self._format = bar_format
        self.total = total
        self.n: float = 0
        self.label = label
        self._interval = interval
        self._postfix: str | None = None
        self._closed = False
        self._bar: Any = None
        self._broken = False
        self._wanted = not lazy
        self._context = contextvars.copy_context()  # the calling cell's, for the display
        self._shell = running_kernel()
        if not lazy:
            self._changed()

    @property
    def drawn(self) -> Any:
        """The tqdm bar once made (read it), else None."""
        return self._bar

    def update(self, step: float = 1) -> None:
        self.n += step
        self._wanted = True
        self._changed()

    def show(self, done: float, total: float | None, message: str | None) -> None:
        """A server's progress update: where it is, out of what, and what it says."""
        if total is not None:
            self.total = total
        if message:
            self._postfix = message
        self.n = max(self.n, done)
        self._wanted = True
        self._changed()

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self._postfix = text
        self._changed()

    def close(self) -> None:
        self._closed = True
        self._changed()

    def _changed(self) -> None:
        global _scheduled
        if self._shell is None or threading.current_thread() is threading.main_thread():
            self.sync()  # no kernel (a terminal), or already on its thread
            return
        with _lock:
            _dirty[id(self)] = self
            if _scheduled:
                return
            _scheduled = True
        io_loop = getattr(self._shell, "io_loop", None)
        if io_loop is not None:
            # The kernel may be going away; a waiting cell's slices still drain.
            with contextlib.suppress(Exception):
                io_loop.add_callback(drain)

    def sync(self) -> None:
        """Bring the widget up to this state (the kernel's thread, or with no kernel)."""
        if self._broken or not self._wanted:
            return
        try:
            bar = self._bar
            if bar is None:
                if self._closed and self.n == 0 and self._postfix is None:
                    return
                from tqdm.auto import tqdm

                options = {} if self._format is None else {"bar_format": self._format}
                bar = self._bar = self._context.run(tqdm, total=self.total, desc=self.label,
                                                    leave=True, mininterval=self._interval,
                                                    **options)
            if bar.disable:
                return
            if self.total != bar.total:
                bar.total = self.total
            if self._postfix is not None:
                bar.set_postfix_str(self._postfix, refresh=False)
            step = self.n - bar.n
            if step > 0:
                bar.update(step)
            if self._closed:
                bar.close()
                self._broken = True  # nothing more to show
        except Exception:  # display never raises; without tqdm, no bar
            self._broken = True
