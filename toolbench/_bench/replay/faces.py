"""The replay's face on ``Bench``: ``replay`` and ``areplay``.

``ReplayFaces`` holds no state: each public method keeps its signature and docstring here and
hands off to ``Replays`` (``replay.py``) in one step. It may import ``toolbench._bench.replay``,
``_core`` and ``_loop``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolbench._core.ids import Provenance
from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.replay.replay import Replays


class ReplayFaces:
    """Recorded calls run again; a face over ``Replays``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        replays: Replays

    def replay(self, records: Any, against: str, *, rtol: float = 0.0, concurrency: int = 8,
               progress: bool = True, resume: bool = False, timeout: float | None = None,
               provenance: Provenance | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Run recorded tool calls again on ``against`` and mark the answers that changed.

        Args:
            records: the recording: a records frame (``bench.records``, a ``map`` result,
                ``tb.Bench(journal=...).records``), a list of frames, or a journal's path.
                Its tool calls that landed (an answer or a tool error) are replayed.
            against: the server to run them on (its tool of the same own name).
            rtol: numbers within this relative tolerance count as unchanged.
            concurrency: calls in flight at once.
            progress: a progress bar (on by default).
            resume: skip argument sets that already succeeded on ``against``.
            timeout: seconds per call (default: the bench's).
            provenance: fields recorded with every call.

        Returns:
            A compare frame, two rows per recorded call (``case``): the recorded answer
            (``server`` is ``"recorded"``) and the new one, plus ``changed`` (True on both
            rows when the answers differ). A tool ``against`` does not offer is a failed
            row (``Unreachable``, ``did_not_happen``).

        Raises:
            ValueError: ``against`` is not connected, a bad ``rtol``, or records that are not
                a recording.
            Unreachable: ``against`` offers none of the recorded tools.

        Example:
            >>> bench.replay(bench.records, against="geo_precise", rtol=1e-3)  # doctest: +SKIP
        """
        return get_loop().run(self.replays.replay, records, against, rtol=rtol,
                              concurrency=concurrency, progress=progress, resume=resume,
                              timeout=timeout, provenance=provenance)

    async def areplay(self, records: Any, against: str, *, rtol: float = 0.0,
                      concurrency: int = 8, progress: bool = True, resume: bool = False,
                      timeout: float | None = None,
                      provenance: Provenance | Mapping[str, Any] | None = None,
                      ) -> pd.DataFrame:
        """Awaitable :meth:`replay`: the same arguments, result and errors."""
        return await get_loop().arun(self.replays.replay, records, against, rtol=rtol,
                                     concurrency=concurrency, progress=progress, resume=resume,
                                     timeout=timeout, provenance=provenance)
