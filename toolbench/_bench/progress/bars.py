"""The progress bar of long work (a batch of calls, a config's connects), or none.

A bar is a :class:`~toolbench._bench.progress.kernel_thread.KernelBar` (made and changed on
the kernel's thread); short work, or work outside a notebook without tqdm, shows nothing.
"""

from __future__ import annotations

from typing import Any, Protocol

from toolbench._bench.progress.kernel_thread import KernelBar


class Bar(Protocol):
    """What a batch's progress bar does (a :class:`KernelBar`, or nothing)."""

    def update(self, n: int = 1) -> Any: ...

    def close(self) -> Any: ...


class _NoBar:
    def update(self, n: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


AUTO_PROGRESS_FROM = 20
"""With ``progress=None``, work of this many calls (or connects) or more shows a bar."""


def progress_bar(total: int, description: str, enabled: bool | None) -> Bar:
    """A ``tqdm.auto`` bar (a widget in Lab, text on a terminal), or nothing.

    ``enabled=None`` means: show one only for long work, so short calls stay quiet.
    """
    if enabled is None:
        enabled = total >= AUTO_PROGRESS_FROM
    if not enabled or total <= 1:
        return _NoBar()
    try:
        import tqdm.auto  # noqa: F401
    except ImportError:  # tqdm comes with the lab extra; without it, no bar
        return _NoBar()
    bar: Bar = KernelBar(total, description)  # made and changed on the kernel's thread
    return bar
