"""The bench over time: snapshots of what servers declare, and pins against silent changes.

``OverTime`` is a base class of ``BaseBench``. Its one entry point from below is
:meth:`OverTime._on_listing`, which the pegboard calls each time a server's tool listing is
applied (``add_service`` on connect, ``refresh`` on ``tools/list_changed`` and on reconnect),
in the same synchronous step that publishes the listing. There, and only there:

- every tool's fingerprint is computed (``toolbench._bench.overtime.snapshots``), once per listing;
- with a journal, the listing is queued to be stored as a snapshot (on a worker thread);
- with pins, each tool is checked against its pin: a new one is pinned (trust on first use),
  a changed one goes into ``_pin_blocked``, a removed one is reported. One ``PinWarning`` per
  listing says what changed, with the diff.

The call path checks ``_pin_blocked`` (a frozenset of ToolIds, empty without pins) before
anything else: a changed tool's call is ``Refused`` (``did_not_happen``) until
``approve(name)``. That is one truth test and, with pins, one set lookup per call.

Resources, templates and prompts are listed, stored, pinned and gated in
``toolbench._bench.overtime.kinds`` (a base of ``OverTime``), with the same pins and the same
refusal.
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from toolbench._bench.overtime.diff import diff as _diff
from toolbench._bench.overtime.kinds import CatalogKinds
from toolbench._bench.overtime.pins import Key, PinFile, PinWarning, now_text, refusal
from toolbench._bench.overtime.snapshot_store import SnapshotWriter
from toolbench._bench.overtime.snapshots import fingerprint_tools, item_from_row, snapshot_frame
from toolbench._core.errors import ToolError
from toolbench._core.ids import ToolId
from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._routing.pegboard import PegBoard, PegEntry

_log = logging.getLogger("toolbench.overtime")
_SHOWN = 8
_USES = {"tool": "calls to", "resource": "reads of", "resource_template": "reads through",
         "prompt": "fetches of"}


def _now() -> datetime:
    return datetime.now(UTC)


class OverTime(CatalogKinds):
    """Snapshots, pins and their checks; mixed into ``BaseBench``."""

    if TYPE_CHECKING:  # what BaseBench provides
        pegboard: PegBoard
        _rows: dict[str, Any]
        _store: Any

        def _check_open(self) -> None: ...

        async def _gather(self, server: str | None, ask: Any, what: str
                          ) -> list[tuple[str, dict[str, Any]]]: ...

        def _resolve(self, name: object) -> Any: ...

        def _prompt_name(self, server: str, prompt: str) -> str: ...

    def _init_over_time(self, journal: str | os.PathLike[str] | None,
                        pins: str | os.PathLike[str] | None) -> None:
        """Read the pins file (in the caller's thread: a bad file fails ``Bench(...)``)."""
        self._pin_blocked: frozenset[ToolId] = frozenset()
        self._listings: dict[str, tuple[datetime, dict[str, dict[str, Any]]]] = {}
        self._previous: dict[str, tuple[datetime, dict[str, dict[str, Any]]]] = {}
        self._pin_changes: dict[Key, tuple[dict[str, Any] | None, dict[str, Any]]] = {}
        self._pin_removed: set[Key] = set()
        self._pin_file = PinFile(pins) if pins is not None else None
        self._snapshots = SnapshotWriter(os.fspath(journal)) if journal is not None else None
        self._pin_saves: list[Any] = []
        self._init_kinds()
        self.pegboard.on_listing(self._on_listing)

    # -- the hook -------------------------------------------------------------------------
    def _on_listing(self, server: str, entries: list[PegEntry], cause: str) -> None:
        """A listing was applied (on the loop, synchronously): fingerprint, store, check."""
        taken = _now()
        items = self._redacted(server, fingerprint_tools((e.tool, e.spec) for e in entries))
        old = self._listings.get(server)
        if old is not None:
            self._previous[server] = old
        self._listings[server] = (taken, items)
        if self._snapshots is not None and self._journal_writable():
            self._snapshots.store(server, "tool", taken, cause, list(items.values()))
        if self._pin_file is not None:
            self._check_pins(server, items)

    def _redacted(self, server: str, items: dict[str, dict[str, Any]],
                  ) -> dict[str, dict[str, Any]]:
        """The items with the server's secrets hidden in every string (a tool may be named
        after one): what is shown, stored in the journal and pinned. Fingerprints are of what
        the server declared; the keys stay the tools' own names, for routing."""
        row = self._rows.get(server)
        redact = getattr(row, "redact", None)
        if redact is None or not redact.active:
            return items
        return {name: _deep(item, redact) for name, item in items.items()}

    def _journal_writable(self) -> bool:
        """False for a damaged journal file: nothing more is written into it (its records
        stay in memory, and so do the snapshots)."""
        store = getattr(self, "_store", None)
        journal = getattr(store, "journal", None)
        return journal is None or journal.closed or getattr(journal, "_db", None) is not None

    def _check_pins(self, server: str, items: Mapping[str, dict[str, Any]],
                    kind: str = "tool") -> None:
        """Pin what is new, note what changed (a tool's calls are then refused), report
        what was removed: one PinWarning for the listing."""
        assert self._pin_file is not None
        pinned = self._pin_file.pins
        new_pins: dict[Key, dict[str, Any]] = {}
        changed: list[tuple[dict[str, Any], dict[str, Any]]] = []
        blocked = set(self._pin_blocked)
        stamp = now_text()
        for name, item in items.items():
            key = (server, kind, str(item["name"]))
            pin = pinned.get(key)
            tid = ToolId(server, name) if kind == "tool" else None
            if pin is None:
                new_pins[key] = {"fingerprint": item["fingerprint"], "item": item,
                                 "pinned": stamp}
                if tid is not None:
                    blocked.discard(tid)
                self._pin_changes.pop(key, None)
            elif pin["fingerprint"] == item["fingerprint"]:
                if tid is not None:
                    blocked.discard(tid)
                self._pin_changes.pop(key, None)
            else:
                if tid is not None:
                    blocked.add(tid)
                old = pin.get("item") if isinstance(pin.get("item"), dict) else None
                self._pin_changes[key] = (old, item)
                changed.append((old or {"kind": kind, "name": name,
                                        "fingerprint": pin["fingerprint"]}, item))
        listed = {str(item["name"]) for item in items.values()}
        removed = [k for k in pinned if k[0] == server and k[1] == kind and k[2] not in listed]
        self._pin_removed = ({k for k in self._pin_removed if k[:2] != (server, kind)}
                             | set(removed))
        self._pin_blocked = frozenset(blocked)
        first = not any(k[:2] == (server, kind) for k in pinned)
        if new_pins:
            pinned.update(new_pins)
            self._save_pins(new_pins)
        if changed or removed or (new_pins and not first):
            self._warn_pins(server, changed, [k[2] for k in removed],
                            [] if first else [k[2] for k in new_pins], kind)

    def _save_pins(self, entries: Mapping[Key, dict[str, Any]], remove: list[Key] | None = None,
                   ) -> Any:
        assert self._pin_file is not None
        future = self._pin_file.save_soon(entries, remove or ())
        self._pin_saves.append(future)

        def done(f: Any) -> None:
            exc = f.exception()
            if exc is not None:
                warnings.warn(f"pins file {self._pin_file.path!r} could not be written "  # type: ignore[union-attr]
                              f"({type(exc).__name__}: {exc}); the pins hold in memory",
                              PinWarning, stacklevel=2)

        future.add_done_callback(done)
        return future

    def _warn_pins(self, server: str, changed: list[tuple[dict[str, Any], dict[str, Any]]],
                   removed: list[str], added: list[str], kind: str = "tool") -> None:
        parts = []
        frame = None
        what = kind.replace("_", " ")
        if changed:
            names = ", ".join(repr(new["name"]) for _, new in changed[:_SHOWN])
            parts.append(f"{len(changed)} pinned {what}{'s' * (len(changed) != 1)} changed "
                         f"({names}); {_USES[kind]} "
                         f"{'them' if len(changed) > 1 else 'it'} are refused until "
                         "bench.approve(name)")
            frame = _diff(snapshot_frame((server, _now(), old) for old, _ in changed),
                          snapshot_frame((server, _now(), new) for _, new in changed))
            for row in frame.itertuples():
                shown = row.detail if row.detail else f"{row.old!r} -> {row.new!r}"
                parts.append(f"  {row.name}.{row.field}: {str(shown)[:300]}")
        if removed:
            parts.append(f"{len(removed)} pinned {what}{'s' * (len(removed) != 1)} removed: "
                         + ", ".join(map(repr, removed[:_SHOWN])))
        if added:
            parts.append(f"{len(added)} new {what}{'s' * (len(added) != 1)} (pinned now): "
                         + ", ".join(map(repr, added[:_SHOWN])))
        warnings.warn(PinWarning(f"server {server!r}: " + "\n".join(parts), frame),
                      stacklevel=2)

    def _pin_refusal(self, tool: ToolId) -> ToolError:
        old, new = self._pin_changes.get((tool.server, "tool", tool.tool), (None, {}))
        return refusal("tool", str(tool), old, new, tool=tool)

    # -- snapshots ------------------------------------------------------------------------
    def _tool_items(self, server: str | None) -> list[tuple[str, datetime, dict[str, Any]]]:
        out: list[tuple[str, datetime, dict[str, Any]]] = []
        for name in sorted(self._listings if server is None else [server]):
            listing = self._listings.get(name)
            if listing is None or (self._rows.get(name) is None):
                continue
            taken, items = listing
            out.extend((name, taken, item) for item in items.values())
        return out

    async def _snapshot(self, server: str | None) -> pd.DataFrame:
        self._check_open()
        if server is not None and server not in self._rows:
            raise ValueError(f"no server {server!r}; connected: {sorted(self._rows)}")
        rows = self._tool_items(server)
        taken = _now()
        kinds = (("resource", lambda c, s: c.list_resources(s), "resources"),
                 ("resource_template", lambda c, s: c.list_resource_templates(s),
                  "resource templates"),
                 ("prompt", lambda c, s: c.list_prompts(s), "prompts"))
        for kind, ask, what in kinds:
            try:
                found = await self._gather(server, ask, what)
            except ToolError:  # the one server asked for does not offer them: none
                found = []
            except Exception as exc:  # a ToolBox or Toolset server: tools only
                _log.debug("no %s for %r: %s", what, server, exc)
                found = []
            per: dict[str, list[dict[str, Any]]] = {}
            for name, row in found:
                per.setdefault(name, []).append(item_from_row(kind, row))
            for name, items in per.items():  # stored, and checked against the pins
                kept = self._keep_kind(name, kind, taken, "snapshot", items)
                rows.extend((name, taken, item) for item in kept)
        return snapshot_frame(rows)

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
        return get_loop().run(self._snapshot, server)

    async def asnapshot(self, server: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`snapshot`: the same argument, result and errors."""
        return await get_loop().arun(self._snapshot, server)

    def _changes_since(self) -> pd.DataFrame:
        """Per server, the diff of the listing before the last one and the last one."""
        import pandas as pd

        frames = []
        for server, (taken, items) in sorted(self._listings.items()):
            before = self._previous.get(server)
            if before is None:
                continue
            frames.append(_diff(snapshot_frame((server, before[0], i)
                                               for i in before[1].values()),
                                snapshot_frame((server, taken, i) for i in items.values())))
        for server, kinds in sorted(self._kind_previous.items()):  # resources, prompts
            for kind, (then, old) in sorted(kinds.items()):
                now, new = self._kind_listings[server][kind]
                frames.append(_diff(snapshot_frame((server, then, i) for i in old),
                                    snapshot_frame((server, now, i) for i in new)))
        if not frames:
            return _diff(snapshot_frame([]), snapshot_frame([]))
        out = pd.concat(frames, ignore_index=True)
        out.attrs["toolbench"] = "diff"
        return out

    # -- pins -----------------------------------------------------------------------------
    @property
    def pins(self) -> pd.DataFrame:
        """One row per pinned item: ``server``, ``kind``, ``name``, ``fingerprint``,
        ``pinned`` (when), ``state`` (``ok``, ``changed``: its calls, reads or fetches are
        refused until approved, ``removed``: the server no longer lists it). Empty without
        ``pins=``."""
        import pandas as pd

        rows = []
        if self._pin_file is not None:
            for key, pin in sorted(self._pin_file.pins.items()):
                state = ("changed" if key in self._pin_changes else
                         "removed" if key in self._pin_removed else "ok")
                rows.append({"server": key[0], "kind": key[1], "name": key[2],
                             "fingerprint": pin.get("fingerprint"),
                             "pinned": pin.get("pinned"), "state": state})
        return pd.DataFrame(rows, columns=["server", "kind", "name", "fingerprint", "pinned",
                                           "state"], dtype=object)

    def _pin_state(self, tool: ToolId) -> str | None:
        """What the catalog shows in its ``pin`` column for one tool."""
        if self._pin_file is None:
            return None
        if tool in self._pin_blocked:
            return "changed"
        return "pinned" if (tool.server, "tool", tool.tool) in self._pin_file.pins else None

    def _need_pins(self) -> PinFile:
        if self._pin_file is None:
            raise ValueError("this bench has no pins file: make it with "
                             "Bench(pins='pins.json')")
        return self._pin_file

    async def _pin(self) -> int:
        pin_file = self._need_pins()
        stamp = now_text()
        entries: dict[Key, dict[str, Any]] = {}
        for server, (_, items) in self._listings.items():
            if server not in self._rows:
                continue
            for item in items.values():
                entries[(server, "tool", str(item["name"]))] = {"fingerprint": item["fingerprint"],
                                                   "item": item, "pinned": stamp}
        for server, kind, item in self._kind_items():
            entries[(server, kind, str(item["name"]))] = {"fingerprint": item["fingerprint"],
                                                          "item": item, "pinned": stamp}
        pin_file.pins.update(entries)
        self._pin_changes.clear()
        self._pin_blocked = frozenset()
        await asyncio.wrap_future(self._save_pins(entries))
        return len(entries)

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
        return get_loop().run(self._pin)

    async def apin(self) -> int:
        """Awaitable :meth:`pin`: the same result and errors."""
        return await get_loop().arun(self._pin)

    def _other_change(self, name: str) -> Key | None:
        """The changed resource, template or prompt that ``name`` names: its URI (or URI
        template, or ``server/uri``), or a prompt's prefixed or own name."""
        found = []
        for key in self._pin_changes:
            if key[1] == "tool":
                continue
            names = {key[2], f"{key[0]}/{key[2]}"}
            if key[1] == "prompt":
                names.add(self._prompt_name(key[0], key[2]))
            if name in names:
                found.append(key)
        if len(found) > 1:
            raise ValueError(f"{name!r} names changed items of several servers "
                             f"({sorted(k[0] for k in found)}); approve 'server/{name}'")
        return found[0] if found else None

    async def _approve(self, name: str) -> str:
        pin_file = self._need_pins()
        other = self._other_change(name) if isinstance(name, str) else None
        if other is not None:
            _, new = self._pin_changes[other]
            entry = {"fingerprint": new["fingerprint"], "item": new, "pinned": now_text()}
            pin_file.pins[other] = entry
            self._pin_changes.pop(other, None)
            await asyncio.wrap_future(self._save_pins({other: entry}))
            return f"{other[0]}/{other[2]}"
        tool = self._resolve(name).tool
        listing = self._listings.get(tool.server)
        item = listing[1].get(tool.tool) if listing is not None else None
        if item is None:
            raise ValueError(f"tool {tool} has not been listed; nothing to approve")
        key = (tool.server, "tool", str(item["name"]))
        entry = {"fingerprint": item["fingerprint"], "item": item, "pinned": now_text()}
        pin_file.pins[key] = entry
        self._pin_changes.pop(key, None)
        self._pin_blocked = self._pin_blocked - {tool}
        await asyncio.wrap_future(self._save_pins({key: entry}))
        return str(tool)

    def approve(self, name: str) -> str:
        """Accept the current version of a changed pinned item: pin it, allow its use.

        Args:
            name: a tool's pegboard name (``geo-distance``) or ``tool://`` reference; a
                changed resource's URI or template's URI template (``server/uri`` when two
                servers share it); a changed prompt's prefixed or own name.

        Returns:
            The item approved, as ``server/name``.

        Raises:
            ValueError: the bench has no pins file, or the tool was never listed.
            Unreachable: no such tool.

        Example:
            >>> bench.approve("geo_precise-distance")                  # doctest: +SKIP
            'geo_precise/distance'
        """
        return get_loop().run(self._approve, name)

    async def aapprove(self, name: str) -> str:
        """Awaitable :meth:`approve`: the same argument, result and errors."""
        return await get_loop().arun(self._approve, name)

    def _close_over_time(self) -> None:
        """Finish writing snapshots and pins (a worker thread; bounded)."""
        if self._snapshots is not None:
            self._snapshots.close()
        if self._pin_file is not None:
            self._pin_file.close()


def _deep(value: Any, redact: Any) -> Any:
    """``value`` with ``redact`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k) if isinstance(k, str) else k: _deep(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep(v, redact) for v in value]
    return value
