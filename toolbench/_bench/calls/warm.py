"""The schema checker made ready while a server connects, off the shared loop.

The first call after ``connect`` used to wait 1-1.8 s for jsonschema's import (started when
the Bench was made, on a thread of its own, but slower than a quick server's handshake), and
then built its tool's validator (the metaschema check) on the loop. A connect already takes
that long, and nobody expects it to be instant; so once a server's tools are listed the
connect also awaits the import (without holding the loop) and builds its tools' validators
in a worker thread. Both are bounded by ``WARM_BOUND_S``: past it the connect returns and a
call does the rest, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from toolbench._core.schema import preload as _preload
from toolbench._core.schema.validate import schema_problems

if TYPE_CHECKING:
    from toolbench._routing.pegboard import PegBoard

WARM_BOUND_S = 5.0
"""The most a connect waits for the checker to be ready."""
_MAX_WARMED = 32  # tools whose validators a connect builds (a few ms each, in a thread
# that shares the GIL with the loop); the rest are built on their first call


class Warmer:
    """An ``on_connected`` listener: the import, then the new server's validators."""

    def __init__(self, pegboard: PegBoard) -> None:
        self._pegboard = pegboard

    async def __call__(self, name: str, connection: Any) -> None:
        schemas = [entry.spec.input_schema for entry in self._pegboard.entries(name)
                   if entry.spec is not None][:_MAX_WARMED]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(WARM_BOUND_S):
                if not _preload.ready():
                    await _preload.wait()
                if schemas:
                    await asyncio.shield(asyncio.to_thread(_build, schemas))


def _build(schemas: list[Any]) -> None:
    """Each schema compiled and checked against its metaschema (cached for the calls)."""
    for schema in schemas:
        with contextlib.suppress(Exception):  # a schema's problems are reported elsewhere
            schema_problems(schema, check_metaschema=True)
