"""What a call shows of its server's progress, and the ``bench.logs`` table.

Most calls report no progress, so a call's bar is made on the first update, not before;
tqdm throttles its redraws (``mininterval``), so a server sending thousands of updates costs
a counter update each, not a redraw each. Outside a notebook no bar is made at all: a
terminal's bar would interleave with the caller's own output.

**Which thread changes it.** The kernel's: updates arrive on the loop's thread and are
handed over (``kernel_thread``), since widgets change on the kernel's thread.

**Which cell shows it.** ipykernel sends output under the parent header held in a context
variable. A call's coroutine runs with its calling cell's context (the hop to the shared loop
copies it), but the SDK runs progress callbacks in its connection's receive task, whose
context is that of the cell that started the loop thread. So the call's context is captured
when the call starts, and the bar is made, and the user's function run, inside it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from toolbench._bench.progress.kernel_thread import KernelBar, running_kernel
from toolbench._core import html as _html

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._transports.notifications import Entry

LOG_COLUMNS = ("time", "server", "kind", "level", "logger", "message", "data", "call_id")
BAR_INTERVAL_S = 0.2
"""The least time between two redraws of a call's bar."""

ProgressShown = Callable[[float, float | None, str | None], None]
"""What sees a call's progress updates besides ``bench.logs``: a bar, or the user's function."""
Progress = bool | ProgressShown | None
"""``call(..., progress=)``: ``None`` a bar in a notebook, ``False`` none, or a function."""


def in_notebook() -> bool:
    """This process is a Jupyter kernel (a bar there is a widget, not terminal text): its
    IPython shell is the kernel's. Merely importing ipykernel does not make a notebook."""
    return running_kernel() is not None


BAR_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"
"""tqdm's default without the rate: one call's steps are the server's units, and "3.2 it/s" of
them says nothing (a ``map``'s bar, over calls, keeps its rate)."""


class ProgressBar:
    """One call's bar, made on its first update (on the kernel's thread, in the calling
    cell's context: :class:`~toolbench._bench.progress.kernel_thread.KernelBar`); ``close`` ends it
    (a no-op if never made)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._bar = KernelBar(None, label, interval=BAR_INTERVAL_S, lazy=True,
                              bar_format=BAR_FORMAT)

    @property
    def kernel_bar(self) -> KernelBar:
        """The bar it shows (read it; it is made on the first update)."""
        return self._bar

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self._bar.show(progress, total, _html.shorten(str(message), 60) if message else None)

    def close(self) -> None:
        self._bar.close()


def progress_shown(progress: Progress, label: str) -> ProgressShown | None:
    """What ``call(..., progress=)`` asks for, checked before anything is sent."""
    if progress is None:
        return ProgressBar(label) if in_notebook() else None
    if progress is False:
        return None
    if progress is True:
        return ProgressBar(label)
    if callable(progress):
        context = contextvars.copy_context()  # its print() goes under the calling cell
        function = progress

        def in_calling_context(done: float, total: float | None, message: str | None) -> None:
            context.run(function, done, total, message)

        return in_calling_context
    raise TypeError(f"progress must be None (a bar in a notebook), False (none), True or a "
                    f"function of (progress, total, message), not {progress!r}")


def logs_frame(entries: Iterable[Entry]) -> pd.DataFrame:
    """``bench.logs``: one row per entry, in the columns DESIGN.md names."""
    import pandas as pd

    rows = [(e.time, e.server, e.kind, e.level, e.logger, e.message, e.data, e.call_id)
            for e in entries]
    return pd.DataFrame(rows, columns=list(LOG_COLUMNS))
