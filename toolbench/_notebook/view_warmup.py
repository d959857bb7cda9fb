"""The first MCP App view at once (issue 46): ready the kernel and the page before it.

A cold first view paid, beyond a warm one, anywidget's import in the kernel (130-550 ms)
and, in the browser, starting the process a sandboxed frame runs in (BENCHMARKS.md, "Issue
46: the first view at once"). So when the first server whose tools declare a ``ui://`` view
connects (``Apps`` calls the warmer registered here, on toolbench's loop), a daemon thread
imports the view's module and makes one :class:`~toolbench._notebook.apps.view.ViewWarmUp`,
a widget that is never displayed: its comm has the page load ``view.js`` and keep one
hidden, empty sandboxed frame.

What it must never do: raise (every step is under ``except Exception``), show anything (no
display; the frame is hidden and holds an empty document of toolbench's own), run where no
front end can be (a plain Python process, or IPython without a kernel: nothing happens,
not even the import), run twice in one kernel, or take anything a server sent (only the
fact that a view exists counts; nothing is fetched).
"""

from __future__ import annotations

import threading
from typing import Any, Final

from toolbench._bench.progress.kernel_thread import running_kernel

THREAD_NAME: Final = "toolbench-view-warm-up"


class WarmUp:
    """Once per process: the state of the view warm-up, and the widget it keeps."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.state = "cold"
        """``cold`` (not asked), ``no front end`` (asked where none can be), ``warming``,
        ``warm``, or ``failed: <exception type>``."""
        self.widget: Any = None
        """The ``ViewWarmUp`` made (kept: closing it would remove the page's warm frame)."""
        self.done = threading.Event()
        """Set once the warm-up has ended (made, failed or skipped)."""

    def __call__(self) -> None:
        """Start the warm-up if it never started: returns at once, never raises."""
        try:
            with self._lock:
                if self.state != "cold":
                    return
                if running_kernel() is None:  # no front end for a widget's comm
                    self.state = "no front end"
                    self.done.set()
                    return
                self.state = "warming"
            threading.Thread(target=self._warm, name=THREAD_NAME, daemon=True).start()
        except Exception as exc:  # a thread that cannot start: the first view pays, as before
            self.state = f"failed: {type(exc).__name__}"
            self.done.set()

    def _warm(self) -> None:
        try:
            from toolbench._notebook.apps.view import ViewWarmUp

            self.widget = ViewWarmUp()
            self.state = "warm"
        except Exception as exc:  # no anywidget, a closed kernel: nothing is lost
            self.state = f"failed: {type(exc).__name__}"
        finally:
            self.done.set()



warm_views = WarmUp()
"""The warmer ``toolbench._notebook.bench`` registers (``register_view_warmer``)."""
