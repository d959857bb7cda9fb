"""Cassettes: what a journal holds of one server, read once into a ``Recording``.

``read_recording(journal, server=None)`` reads a journal: the recorded server's tools, and
its resources, templates and prompts, from its latest catalog snapshot (as declared), and
every tool call and prompt fetch that it answered, keyed by its canonical arguments, and
every read, keyed by its URI (the last one, when one was recorded more than once). A tool
call that failed as a tool error (``ToolFailed``) is kept: it is an answer too. An older
journal without snapshots lists the tools that were called, with any arguments.

A recording is often someone else's file, so it is read as ``load_snapshot`` reads one: a
regular file whose tables are its own, under a time limit per statement
(``toolbench._bench.journal.file_checks``), and capped: ``MAX_READ_BYTES`` of records, and as much
again of snapshots (at most the item cap of items a server and kind).

Why apart from serving it (``toolbench._bench.replay.serve``): a Recording is plain data,
and reading it needs no MCP server; what serves it builds on this module, never the other
way round.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolbench._bench.journal.file_checks import check_regular_file
from toolbench._bench.journal.record import arguments_key
from toolbench._bench.overtime import snapshot_store
from toolbench._bench.overtime.snapshot_store import read_snapshot


@dataclass
class Recording:
    """What a journal holds of one server: its tools and its answers."""

    path: str
    server: str
    tools: list[dict[str, Any]]
    answers: dict[tuple[str, str], Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    reads: dict[str, Any] = field(default_factory=dict)
    """URI: the last recorded read of it that succeeded."""
    fetches: dict[tuple[str, str], Any] = field(default_factory=dict)
    """(prompt, canonical arguments): the last recorded fetch that succeeded."""


def read_recording(journal: str | os.PathLike[str], server: str | None = None) -> Recording:
    """The recording of ``server`` in ``journal`` (the only server, when there is one)."""
    from toolbench._bench.journal.file import inspect_file

    path = os.fspath(journal)
    check_regular_file(path, "journal")
    found = inspect_file(path, max_bytes=snapshot_store.MAX_READ_BYTES)
    if found.damaged_rows:
        import warnings

        from toolbench._bench.journal.journal import JournalWarning

        warnings.warn(f"journal {path!r}: skipped {found.damaged_rows} damaged "
                      f"row{'s' * (found.damaged_rows != 1)} that could not be read; their "
                      "argument sets are not served", JournalWarning, stacklevel=3)
    calls = [r for r in found.records if r.kind == "tool"
             and (r.ok or r.error_type == "ToolFailed")]
    others = [r for r in found.records if r.kind in ("resource", "prompt") and r.ok]
    try:
        snapshot = read_snapshot(path)
    except ValueError as exc:
        if "holds no catalog snapshots" not in str(exc):
            raise
        snapshot = []
    servers = sorted({r.server for r in calls} | {r.server for r in others}
                     | {s for s, _, _ in snapshot})
    if server is None:
        if len(servers) != 1:
            raise ValueError(f"journal {path!r} records {len(servers)} servers "
                             f"({', '.join(servers) or 'none'}); pick one with server=...")
        server = servers[0]
    elif server not in servers:
        raise ValueError(f"journal {path!r} has no recording of server {server!r}; it "
                         f"records: {', '.join(servers) or 'none'}")
    tools = [item for s, _, item in snapshot if s == server and item.get("kind") == "tool"]
    if not tools:  # an older journal, without snapshots: the tools called, any arguments
        tools = [{"kind": "tool", "name": name, "input_schema": {"type": "object"},
                  "description": "(recorded calls; the journal holds no catalog snapshot)"}
                 for name in sorted({r.tool for r in calls if r.server == server})]
    recording = Recording(path, server, tools)
    for record in calls:
        if record.server != server:
            continue
        recording.answers[(record.tool, arguments_key(record.arguments))] = record
        recording.counts[record.tool] = recording.counts.get(record.tool, 0) + 1
    for kind, kept in (("resource", recording.resources),
                       ("resource_template", recording.templates),
                       ("prompt", recording.prompts)):
        kept.extend(item for s, _, item in snapshot if s == server and item.get("kind") == kind)
    for record in others:
        if record.server != server:
            continue
        if record.kind == "resource":
            recording.reads[record.tool] = record
        else:
            recording.fetches[(record.tool, arguments_key(record.arguments))] = record
    return recording


def describe(recording: Recording) -> Mapping[str, Any]:
    return {"server": recording.server, "tools": len(recording.tools),
            "answers": len(recording.answers), "resources": len(recording.resources),
            "templates": len(recording.templates), "prompts": len(recording.prompts),
            "reads": len(recording.reads), "fetches": len(recording.fetches)}
