"""The faces over time on ``Bench``: ``snapshot``, ``pins``, ``pin`` and ``approve``.

``HistoryFaces`` holds no state: each public member keeps its signature and docstring here and
hands off to ``History`` (``history.py``) or ``PinGuard`` (``guard.py``) in one step. It may
import ``toolbench._bench.overtime`` and ``_loop``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.overtime.guard import PinGuard
    from toolbench._bench.overtime.history import History


class HistoryFaces:
    """Snapshots and pins; a face over ``History`` and its ``PinGuard``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        history: History
        guard: PinGuard

    def snapshot(self, server: str | None = None) -> pd.DataFrame:
        """What every server (or ``server``) declares now, one row per item, fingerprinted.

        Tools are as last listed (on connect, or re-listed after a change); resources,
        resource templates and prompts are listed now. With a journal, what is listed now is
        stored too, so ``tb.load_snapshot`` finds it.

        Args:
            server: only this server (default: every connected server).

        Returns:
            A snapshot frame: ``server``, ``kind`` (``tool``, ``resource``,
            ``resource_template``, ``prompt``), ``name`` (unprefixed; a resource's URI),
            ``fingerprint`` (SHA-256 of the canonical JSON of what it declares), ``taken``,
            and the declared fields. ``tb.diff(a, b)`` compares two.

        Raises:
            ValueError: no such server.

        Warns:
            ListingWarning: some servers' resources or prompts could not be listed.

        Example:
            >>> before = bench.snapshot("geo")                          # doctest: +SKIP
        """
        return get_loop().run(self.history.snapshot, server)

    async def asnapshot(self, server: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`snapshot`: the same argument, result and errors."""
        return await get_loop().arun(self.history.snapshot, server)

    @property
    def pins(self) -> pd.DataFrame:
        """One row per pinned item: ``server``, ``kind``, ``name``, ``fingerprint``,
        ``pinned`` (when), ``state`` (``ok``, ``changed``: its calls, reads or fetches are
        refused until approved, ``removed``: the server no longer lists it). Empty without
        ``pins=``."""
        return self.guard.frame()

    def pin(self) -> int:
        """Pin every item as it is listed now (changed ones included: this approves them).

        Tools as last listed; resources, templates and prompts as last listed at connect,
        re-list or reconnect (with pins or a journal) or by ``snapshot()``.

        Returns:
            How many items are pinned.

        Raises:
            ValueError: the bench has no pins file (``Bench(pins="pins.json")``).

        Example:
            >>> bench.pin()                                             # doctest: +SKIP
            12
        """
        return get_loop().run(self.history.pin)

    async def apin(self) -> int:
        """Awaitable :meth:`pin`: the same result and errors."""
        return await get_loop().arun(self.history.pin)

    def approve(self, name: str, fingerprint: str | None = None) -> str | None:
        """Accept a changed pinned item, as the user was shown it: pin it, allow its use.

        Args:
            name: a tool's pegboard name (``geo-distance``) or ``tool://`` reference; a
                changed resource's URI or template's URI template (``server/uri`` when two
                servers share it); a changed prompt's prefixed or own name.
            fingerprint: the version to approve (``bench.pins``, a snapshot or the
                PinWarning's diff show it); it must be the version listed now. Without it,
                the version the last ``PinWarning`` about the item showed is approved. A
                re-list in flight is waited for first (within the server's timeout).

        Returns:
            The item approved, as ``server/name``; ``None`` when the server changed it
            again since its last PinWarning: nothing is approved, and a new PinWarning
            shows the newer diff (approve again to accept that one).

        Raises:
            ValueError: the bench has no pins file, the tool was never listed, or
                ``fingerprint`` is not 64 hex digits or not the version listed now.
            Unreachable: no such tool.

        Example:
            >>> bench.approve("geo_precise-distance")                  # doctest: +SKIP
            'geo_precise/distance'
        """
        return get_loop().run(self.history.approve, name, fingerprint)

    async def aapprove(self, name: str, fingerprint: str | None = None) -> str | None:
        """Awaitable :meth:`approve`: the same arguments, result and errors."""
        return await get_loop().arun(self.history.approve, name, fingerprint)
