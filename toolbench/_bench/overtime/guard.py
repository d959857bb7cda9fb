"""The pins' guard: what is pinned, what changed, and the check every use passes.

``PinGuard`` owns the pins file (``toolbench._bench.overtime.pins``) and what the bench
learned against it: the changed items (``changes``: old and new item per key), the tools
whose calls are refused (``blocked``, a frozenset of ToolIds, empty without pins), the
removed items, and the saves still being written. Only its methods change them.

- :meth:`PinGuard.check` is handed each listing (tools by ``History.on_listing``, the other
  kinds by ``History.keep_kind``): a new item is pinned (trust on first use), a changed one
  noted (a changed tool is blocked), a removed one reported; one ``PinWarning`` per listing
  says what changed, with the diff.
- The call path tests ``blocked`` before anything else: one truth test and, with pins, one
  set lookup per call. :meth:`PinGuard.rechecked` checks a call again once the transport has
  its session (after a reconnect's re-list, ``SEND_CHECK``); :meth:`PinGuard.check_use`
  does the same for a read or a prompt fetch.
- **No window while re-listing.** The catalog's ``Follower`` re-lists a server's tools inside
  :meth:`PinGuard.relisting`; a call to that server first waits for it
  (:meth:`PinGuard.listed`, within the call's timeout), so it is checked against the new
  listing, never answered by a changed tool meanwhile. A re-list that fails leaves the
  server ``unverified`` (:meth:`PinGuard.unverify`): its tools are blocked until a listing of
  it is applied again.
- ``approve`` and ``pin`` accept what is listed now.

It may import ``toolbench._bench.overtime`` (pins, diff, snapshots), ``_transports`` and
``_core``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import warnings
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from toolbench._bench.overtime.pins import (
    Key,
    PinFile,
    PinWarning,
    changed_key,
    now_text,
    refusal,
)
from toolbench._bench.overtime.snapshots import (
    pinned_before_execution_and_ui,
    pinned_before_view_hash,
)
from toolbench._bench.overtime.warnings_off_loop import Warner, again_warning, listing_warning
from toolbench._core.errors import Refused
from toolbench._core.ids import ToolId
from toolbench._transports.mcp.session import SEND_CHECK

if TYPE_CHECKING:
    import concurrent.futures

    import pandas as pd

    from toolbench._core.client import Result
    from toolbench._core.errors import ToolError

T = TypeVar("T")
Change = tuple[dict[str, Any] | None, dict[str, Any]]
"""A changed pinned item: as pinned (if the pin kept it), and as listed now."""


class PinGuard:
    """The pins of one bench (none without ``pins=``) and the check against them."""

    def __init__(self, pins: str | os.PathLike[str] | None) -> None:
        """Read the pins file (in the caller's thread: a bad file fails ``Bench(...)``)."""
        self._file = PinFile(pins) if pins is not None else None
        self.active = self._file is not None
        """Whether the bench has a pins file (fixed for the bench's life): without one, a
        call takes no step of the pin check at all."""
        self._blocked: frozenset[ToolId] = frozenset()
        self._changed: set[ToolId] = set()
        self._tools: dict[str, frozenset[ToolId]] = {}
        """Each server's tools as last checked (what ``unverified`` blocks)."""
        self._unverified: dict[str, str] = {}
        """Servers whose announced re-list failed, and why."""
        self._relisting: dict[str, tuple[int, asyncio.Event]] = {}
        self._changes: dict[Key, Change] = {}
        self._shown: dict[Key, dict[str, Any]] = {}
        """The version the last PinWarning about each changed item showed: what
        ``approve(name)`` without a fingerprint approves."""
        self._removed: set[Key] = set()
        self._saves: list[concurrent.futures.Future[Any]] = []
        self._warner = Warner(warm=self.active)

    # -- what others read -------------------------------------------------------------------
    @property
    def path(self) -> str | None:
        return self._file.path if self._file is not None else None

    @property
    def blocked(self) -> frozenset[ToolId]:
        """The tools whose calls are refused (a changed pin, or a server whose re-list
        failed); empty without pins."""
        return self._blocked

    @property
    def relisting_now(self) -> Mapping[str, object]:
        """The servers whose tools are being listed again right now (read-only; empty most
        of the time, so the call path tests it with one truth test)."""
        return MappingProxyType(self._relisting)

    @property
    def changes(self) -> Mapping[Key, Change]:
        """Every changed pinned item (read-only): old and new item per key."""
        return MappingProxyType(self._changes)

    def state(self, tool: ToolId) -> str | None:
        """What the catalog shows in its ``pin`` column for one tool."""
        if self._file is None:
            return None
        if tool in self._changed:
            return "changed"
        if tool.server in self._unverified and tool in self._blocked:
            return "unverified"
        return "pinned" if (tool.server, "tool", tool.tool) in self._file.pins else None

    def frame(self) -> pd.DataFrame:
        """``bench.pins``: one row per pinned item, with its state."""
        import pandas as pd

        rows = []
        if self._file is not None:
            for key, pin in sorted(self._file.pins.items()):
                state = ("changed" if key in self._changes else
                         "removed" if key in self._removed else
                         "unverified" if key[1] == "tool" and key[0] in self._unverified
                         else "ok")
                rows.append({"server": key[0], "kind": key[1], "name": key[2],
                             "fingerprint": pin.get("fingerprint"),
                             "pinned": pin.get("pinned"), "state": state})
        return pd.DataFrame(rows, columns=["server", "kind", "name", "fingerprint", "pinned",
                                           "state"], dtype=object)

    def refusal(self, tool: ToolId) -> ToolError:
        if tool not in self._changed and tool.server in self._unverified:
            return Refused(
                f"not sent: the tools of server {tool.server!r} are unverified (its announced "
                f"re-list failed: {self._unverified[tool.server]}); calls to its pinned "
                "tools are refused until a re-list succeeds", tool=tool)
        old, new = self._changes.get((tool.server, "tool", tool.tool), (None, {}))
        return refusal("tool", str(tool), old, new, tool=tool)

    # -- the checks -------------------------------------------------------------------------
    def check(self, server: str, items: Mapping[str, dict[str, Any]],
              kind: str = "tool") -> None:
        """Pin what is new, note what changed (a tool's calls are then refused), report
        what was removed: one PinWarning for the listing. Nothing without pins."""
        if self._file is None:
            return
        pinned = self._file.pins
        new_pins: dict[Key, dict[str, Any]] = {}
        renewed: dict[Key, dict[str, Any]] = {}
        changed: list[tuple[dict[str, Any], dict[str, Any]]] = []
        stamp = now_text()
        for name, item in items.items():
            key = (server, kind, str(item["name"]))
            pin = pinned.get(key)
            # the names of a tool listing were checked by the pegboard
            tid = ToolId.of_checked(server, name) if kind == "tool" else None
            if pin is not None and (pinned_before_view_hash(pin, item)
                                    or pinned_before_execution_and_ui(pin, item)):
                # pinned before the view's HTML (or execution and _meta.ui at all) counted,
                # and unchanged since in what counted then: renewed quietly
                renewed[key] = {"fingerprint": item["fingerprint"], "item": item,
                                "pinned": pin.get("pinned", stamp)}
                pin = renewed[key]
            if pin is None:
                new_pins[key] = {"fingerprint": item["fingerprint"], "item": item,
                                 "pinned": stamp}
                if tid is not None:
                    self._changed.discard(tid)
                self._changes.pop(key, None)
                self._shown.pop(key, None)
            elif pin["fingerprint"] == item["fingerprint"]:
                if tid is not None:
                    self._changed.discard(tid)
                self._changes.pop(key, None)
                self._shown.pop(key, None)
            else:
                if tid is not None:
                    self._changed.add(tid)
                old = pin.get("item") if isinstance(pin.get("item"), dict) else None
                self._changes[key] = (old, item)
                self._shown[key] = item
                changed.append((old or {"kind": kind, "name": name,
                                        "fingerprint": pin["fingerprint"]}, item))
        listed = {str(item["name"]) for item in items.values()}
        removed = [k for k in pinned if k[0] == server and k[1] == kind and k[2] not in listed]
        self._removed = ({k for k in self._removed if k[:2] != (server, kind)} | set(removed))
        if kind == "tool":  # a listing applied: the server's tools are verified again
            self._tools[server] = frozenset(ToolId.of_checked(server, name) for name in items)
            self._unverified.pop(server, None)
        self._reblock()
        first = not any(k[:2] == (server, kind) for k in pinned)
        if new_pins or renewed:
            pinned.update(new_pins)
            pinned.update(renewed)
            self._save({**new_pins, **renewed})
        if changed or removed or (new_pins and not first):
            self._warner.soon(server, listing_warning, server, changed,
                              [k[2] for k in removed],
                              [] if first else [k[2] for k in new_pins], kind)

    def _reblock(self) -> None:
        """``blocked``: the changed tools, and every tool of an unverified server."""
        blocked = set(self._changed)
        for server in self._unverified:
            blocked |= self._tools.get(server, frozenset())
        self._blocked = frozenset(blocked)

    # -- re-listing -------------------------------------------------------------------------
    @contextlib.contextmanager
    def relisting(self, server: str) -> Iterator[None]:
        """Around a re-list of ``server``'s tools (on the loop): its calls wait meanwhile
        (:meth:`listed`). Nothing without pins."""
        if self._file is None:
            yield
            return
        count, done = self._relisting.get(server, (0, asyncio.Event()))
        self._relisting[server] = (count + 1, done)
        try:
            yield
        finally:
            count, done = self._relisting[server]
            if count <= 1:
                del self._relisting[server]
                done.set()
            else:
                self._relisting[server] = (count - 1, done)

    async def settled(self, server: str, limit: float) -> bool:
        """Wait at most ``limit`` seconds for the re-list of ``server``'s tools in flight;
        False if it is still in flight then."""
        pending = self._relisting.get(server)
        if pending is None:
            return True
        try:
            async with asyncio.timeout(max(limit, 0.0)):
                await pending[1].wait()
        except TimeoutError:
            return False
        return True

    async def listed(self, tool: ToolId, limit: float) -> None:
        """Wait at most ``limit`` seconds for the re-list of ``tool``'s server in flight;
        ``Refused`` if it is still in flight then (nothing is sent unchecked)."""
        if not await self.settled(tool.server, limit):
            raise Refused(f"not sent: the tools of server {tool.server!r} were still being "
                          f"listed again after the call's timeout ({limit:.3g} s); with pins, "
                          "a call waits for that listing", tool=tool)

    def unverify(self, server: str, why: str) -> None:
        """An announced re-list of ``server``'s tools failed: its tools are refused until
        a listing of it is applied (:meth:`check`)."""
        if self._file is None:
            return
        self._unverified[server] = why
        self._reblock()

    def check_use(self, server: str, kind: str, name: str) -> None:
        """Refuse a read or a prompt fetch of a changed pinned item (``name``: a URI, or a
        prompt's own name); nothing without pins."""
        found = changed_key(self._changes, server, kind, name)
        if found is not None:
            key, through = found
            old, new = self._changes[key]
            raise refusal(key[1], f"{server}/{key[2]}", old, new, through=through)

    async def gated(self, server: str, kind: str, name: str,
                    start: Callable[[], Awaitable[T]]) -> T:
        """``start()``'s request, checked before it starts and again once the transport has
        its session (after a reconnect's re-list)."""
        self.check_use(server, kind, name)
        return await checked(lambda: self.check_use(server, kind, name), start())

    def rechecked(self, tool: ToolId, call: Awaitable[Result]) -> Awaitable[Result]:
        """A tool call that, with pins, is checked again once the transport has its session
        (after a reconnect's re-list), before it is sent; without pins, ``call`` itself."""
        if self._file is None:
            return call

        def check() -> None:
            if tool in self._blocked:
                raise self.refusal(tool)

        return checked(check, call)

    # -- accepting what is listed now -------------------------------------------------------
    def need(self) -> PinFile:
        if self._file is None:
            raise ValueError("this bench has no pins file: make it with "
                             "Bench(pins='pins.json')")
        return self._file

    async def pin_all(self, entries: dict[Key, dict[str, Any]]) -> int:
        """Pin every item given (changed ones included: this approves them)."""
        pin_file = self.need()
        pin_file.pins.update(entries)
        self._changes.clear()
        self._shown.clear()
        self._changed.clear()
        self._reblock()
        await asyncio.wrap_future(self._save(entries))
        return len(entries)

    def changed_other(self, name: str, prompt_name: Callable[[str, str], str]) -> Key | None:
        """The changed resource, template or prompt that ``name`` names: its URI (or URI
        template, or ``server/uri``), or a prompt's prefixed or own name."""
        found = []
        for key in self._changes:
            if key[1] == "tool":
                continue
            names = {key[2], f"{key[0]}/{key[2]}"}
            if key[1] == "prompt":
                names.add(prompt_name(key[0], key[2]))
            if name in names:
                found.append(key)
        if len(found) > 1:
            raise ValueError(f"{name!r} names changed items of several servers "
                             f"({sorted(k[0] for k in found)}); approve 'server/{name}'")
        return found[0] if found else None

    def shown(self, key: Key) -> dict[str, Any] | None:
        """The version the last PinWarning about ``key`` showed (None: none did)."""
        return self._shown.get(key)

    def current(self, key: Key) -> dict[str, Any] | None:
        """The changed item ``key`` as listed now (None: it is not changed)."""
        change = self._changes.get(key)
        return None if change is None else change[1]

    async def changed_again(self, key: Key, shown: dict[str, Any],
                            new: dict[str, Any]) -> None:
        """``approve`` found ``key`` changed again since the PinWarning it was asked about
        (``shown``): a new one shows the newer diff (built off the loop), and is what the
        next ``approve`` approves."""
        self._shown[key] = new
        await self._warner.now(again_warning, key[0], key[1], key[2], shown, new)

    async def warned(self, server: str | None = None) -> None:
        """Wait (bounded) until the pins of the listings so far are saved (a conflict
        with another bench's pin blocks) and their PinWarnings are issued."""
        await self.saved()
        await self._warner.warned(server)

    async def approve_other(self, key: Key, new: dict[str, Any]) -> str:
        """Accept a changed resource, template or prompt as ``new`` (listed now)."""
        pin_file = self.need()
        entry = {"fingerprint": new["fingerprint"], "item": new, "pinned": now_text()}
        pin_file.pins[key] = entry
        self._changes.pop(key, None)
        self._shown.pop(key, None)
        await asyncio.wrap_future(self._save({key: entry}))
        return f"{key[0]}/{key[2]}"

    async def approve_tool(self, tool: ToolId, item: dict[str, Any]) -> str:
        """Accept a tool as it is listed now (``item``), and allow its calls."""
        pin_file = self.need()
        key = (tool.server, "tool", str(item["name"]))
        entry = {"fingerprint": item["fingerprint"], "item": item, "pinned": now_text()}
        pin_file.pins[key] = entry
        self._changes.pop(key, None)
        self._shown.pop(key, None)
        self._changed.discard(tool)
        self._reblock()
        await asyncio.wrap_future(self._save({key: entry}))
        return str(tool)

    def close(self) -> None:
        """Finish writing the pins (a worker thread; bounded)."""
        self._warner.close()
        if self._file is not None:
            self._file.close()

    def _save(self, entries: Mapping[Key, dict[str, Any]]) -> concurrent.futures.Future[Any]:
        assert self._file is not None
        path = self._file.path
        future = self._file.save_soon(entries, ())
        self._saves.append(future)

        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        ours = {key: dict(entry) for key, entry in entries.items()}

        def done(f: concurrent.futures.Future[Any]) -> None:
            exc = f.exception()
            if exc is not None:
                warnings.warn(f"pins file {path!r} could not be written "
                              f"({type(exc).__name__}: {exc}); the pins hold in memory",
                              PinWarning, stacklevel=2)
                return
            conflicts = f.result()
            if isinstance(conflicts, Mapping) and conflicts:
                if loop is None or loop.is_closed():
                    self._conflicted(conflicts, ours)
                else:
                    loop.call_soon_threadsafe(self._conflicted, conflicts, ours)

        future.add_done_callback(done)
        return future

    def _conflicted(self, conflicts: Mapping[Key, Mapping[str, Any]],
                    ours: Mapping[Key, dict[str, Any]]) -> None:
        """Another bench pinned these items meanwhile with another fingerprint (the save
        re-read the file under its lock, and kept its pins): each is a change against that
        pin, warned about and blocked, never overwritten."""
        by_server: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = {}
        for key, there in conflicts.items():
            entry = ours.get(key)
            mine = entry.get("item") if entry is not None else None
            if not isinstance(mine, dict):
                continue
            old = there.get("item") if isinstance(there.get("item"), dict) else None
            self._changes[key] = (dict(old) if old is not None else None, mine)
            self._shown[key] = mine
            if key[1] == "tool":
                self._changed.add(ToolId(key[0], key[2]))
            by_server.setdefault(key[:2], []).append(
                (dict(old) if old is not None else {"kind": key[1], "name": key[2],
                                                    "fingerprint": there.get("fingerprint")},
                 mine))
        self._reblock()
        for (server, kind), changed in by_server.items():
            self._warner.soon(server, listing_warning, server, changed, [], [], kind)

    async def saved(self, timeout: float = 30.0) -> None:
        """Wait (bounded) for the pins saved so far, and so for their conflicts."""
        pending = [asyncio.wrap_future(f) for f in self._saves if not f.done()]
        self._saves = [f for f in self._saves if not f.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)
            await asyncio.sleep(0)  # the conflicts' call_soon_threadsafe runs first


async def checked(check: Callable[[], None], request: Awaitable[T]) -> T:
    """``request`` with the transport's ``SEND_CHECK`` set to ``check``."""
    token = SEND_CHECK.set(check)
    try:
        return await request
    finally:
        SEND_CHECK.reset(token)
