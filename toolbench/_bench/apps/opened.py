"""The call a view was opened for, and a result as a view receives it (DESIGN.md, "The
bridge": ``tool-result`` is the result as received, its ``_meta`` included).

Apart from the bridge so that both ways a view is opened (a fresh call's ``Result``, or a
record, this session's or a journal's) build the same wire form in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolbench._bench.journal.record import RESULT_META

if TYPE_CHECKING:
    from toolbench._bench.journal.record import Record
    from toolbench._core.client import Result


@dataclass(frozen=True)
class Opened:
    """The call a view was opened for: its id, arguments and result as received."""

    call_id: str
    arguments: dict[str, Any]
    result: dict[str, Any] | None
    """The ``CallToolResult`` as received (wire names); None: the call failed."""
    cancelled: str | None = None

    @classmethod
    def of(cls, record: Record, result: Result) -> Opened:
        return cls(record.call_id, dict(record.arguments), wire_result(result))

    @classmethod
    def of_record(cls, record: Record) -> Opened:
        if not record.ok:
            return cls(record.call_id, dict(record.arguments), None,
                       f"{record.error_type}: {record.error}")
        result = {"content": list(record.content), "isError": False}
        if record.structured is not None:
            result["structuredContent"] = record.structured
        meta = (record.provenance or {}).get(RESULT_META)
        if isinstance(meta, dict):  # the result's _meta, kept beside the call's provenance
            result["_meta"] = meta
        return cls(record.call_id, dict(record.arguments), result)


def wire_result(result: Result) -> dict[str, Any]:
    """A ``CallToolResult`` in wire names: ``content``, ``isError``, ``structuredContent``
    and ``_meta`` (each when present)."""
    found: dict[str, Any] = {"content": list(result.content), "isError": result.is_error}
    if result.structured is not None:
        found["structuredContent"] = result.structured
    if result.meta is not None:  # a view may carry its data only here (anywidget-mcp)
        found["_meta"] = result.meta
    return found
