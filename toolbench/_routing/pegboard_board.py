"""The pegboard's snapshot: every name, service and namespace, never changed once published.

A ``Board`` owns the rules of its own changes. Each change (a service added, a tool
registered by hand, a listing replaced, a tool or a service removed) is one call that checks
the whole change against this snapshot (a name taken, a namespace owned, a server in another
namespace) and returns the next snapshot, or raises before anything is built.
``toolbench._routing.pegboard`` checks its arguments once at the door, takes its lock, makes
the one call, and publishes the result; reads need no lock at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from toolbench._core.client import ToolClient
from toolbench._core.errors import NameCollision, Unreachable
from toolbench._core.ids import did_you_mean
from toolbench._routing.pegboard_names import PegEntry, check_name_arg, suggestion_pool

_SHOWN_CLASHES = 10


@dataclass(frozen=True, slots=True)
class Service:
    """A server on the board: its namespace, client and names; ``token`` tells a service from
    a later one of the same server, ``listed_seq`` which listing it holds."""

    namespace: str
    client: ToolClient | None
    names: tuple[str, ...]
    token: int
    listed_seq: int
    unsubscribe: Callable[[], Any] | None = None
    skipped: tuple[tuple[str, str], ...] = ()


class Board:
    """One immutable snapshot; never mutated after it is published (except a lazy cache)."""

    __slots__ = ("_sorted", "by_original", "entries", "namespaces", "services")

    def __init__(self, entries: dict[str, PegEntry], services: dict[str, Service],
                 namespaces: dict[str, str], by_original: dict[str, tuple[str, ...]]) -> None:
        self.entries = entries
        self.services = services
        self.namespaces = namespaces
        self.by_original = by_original
        self._sorted: tuple[str, ...] | None = None

    # -- reading ----------------------------------------------------------------------------
    def sorted_names(self) -> tuple[str, ...]:
        # A benign race: two readers may both sort; each publishes the same tuple.
        names = self._sorted
        if names is None:
            names = tuple(sorted(self.entries))
            self._sorted = names
        return names

    def entry(self, name: object) -> PegEntry:
        """The entry of a name; ``Unreachable`` (with close names) when there is none."""
        try:  # the hot path: one dict lookup; anything unusual is sorted out below
            return self.entries[name]  # type: ignore[index]
        except (KeyError, TypeError):
            pass
        key = check_name_arg(name)
        entry = self.entries.get(key)
        if entry is None:
            hint = did_you_mean(key, suggestion_pool(self.sorted_names(), key))
            raise Unreachable(f"no tool named {key!r} on this pegboard{hint}") from None
        return entry

    def names_in(self, namespace: str | None) -> list[str]:
        """Sorted names in ``namespace``; ``None``/``""``: the unprefixed ones."""
        if namespace is not None and not isinstance(namespace, str):
            raise TypeError(
                f"a namespace is a str or None, not {type(namespace).__name__} {namespace!r}"
            )
        if namespace:
            server = self.namespaces.get(namespace)
            return [] if server is None else list(self.services[server].names)
        return sorted(n for s in self.services.values() if not s.namespace for n in s.names)

    def related(self, name: str) -> list[str]:
        """Names of tools with the same original name on other servers, sorted."""
        entry = self.entry(name)
        return [n for n in self.by_original.get(entry.tool, ())
                if self.entries[n].server != entry.server]

    def same_named(self) -> dict[str, list[str]]:
        """Each original name offered by two or more servers -> their names."""
        out: dict[str, list[str]] = {}
        for original in sorted(self.by_original):
            names = self.by_original[original]
            if len({self.entries[n].server for n in names}) >= 2:
                out[original] = list(names)
        return out

    # -- changing: each returns the next snapshot, or raises with nothing changed -----------
    def with_service(self, server: str, namespace: str, client: ToolClient,
                     entries: list[PegEntry], skipped: list[tuple[str, str]], *,
                     token: int, seq: int) -> Board:
        """A new service and all its entries, or ``NameCollision`` naming every clash (a
        name taken, or the namespace owned by another server)."""
        names, why = _clashes(self, entries)
        owner = self.namespaces.get(namespace) if namespace else None
        if owner is not None:
            names = [e.name for e in entries] or [namespace]
            why = [f"namespace {namespace!r} already belongs to server {owner!r}", *why]
        if names:
            raise _refuse(names, why)
        service = Service(namespace, client, tuple(sorted(e.name for e in entries)), token,
                          seq, skipped=tuple(skipped))
        return self.edit(
            add=entries,
            services={**self.services, server: service},
            namespaces={**self.namespaces, namespace: server} if namespace else None,
        )

    def with_tool(self, entry: PegEntry, *, token: int) -> Board:
        """One tool registered by hand, into its server's service (made, with ``token``, when
        the server has none); a server keeps one namespace."""
        server, ns = entry.server, entry.namespace
        current = self.services.get(server)
        if current is not None and current.namespace != ns:
            raise ValueError(
                f"server {server!r} is in namespace {current.namespace!r}, not {ns!r}: "
                "a server has one namespace"
            )
        names, why = _clashes(self, [entry])
        owner = self.namespaces.get(ns) if ns else None
        if owner is not None and owner != server:
            names = [entry.name]
            why = [f"namespace {ns!r} already belongs to server {owner!r}", *why]
        if names:
            raise _refuse(names, why)
        if current is None:
            service = Service(ns, None, (entry.name,), token, 0)
        else:
            service = dataclasses.replace(
                current, names=tuple(sorted((*current.names, entry.name))))
        return self.edit(
            add=[entry],
            services={**self.services, server: service},
            namespaces={**self.namespaces, ns: server} if ns else None,
        )

    def relisted(self, server: str, token: int, entries: list[PegEntry],
                 skipped: list[tuple[str, str]], seq: int) -> Board | None:
        """The service's entries replaced by a new listing, all at once; ``None`` when a later
        listing already landed (keep it). Raises if the service went, or on a clash."""
        current = self.services.get(server)
        if current is None or current.token != token:
            raise ValueError(f"server {server!r} was removed while it was being refreshed")
        if current.listed_seq > seq:
            return None
        names, why = _clashes(self, entries, replacing=server)
        if names:
            raise _refuse(names, why)
        updated = dataclasses.replace(current, names=tuple(sorted(e.name for e in entries)),
                                      listed_seq=seq, skipped=tuple(skipped))
        return self.edit(drop=current.names, add=entries,
                         services={**self.services, server: updated})

    def subscribed(self, server: str, token: int, unsubscribe: Callable[[], Any]) -> Board | None:
        """The service with how to stop following it; ``None`` if it went (or was replaced)."""
        current = self.services.get(server)
        if current is None or current.token != token:
            return None
        services = dict(self.services)
        services[server] = dataclasses.replace(current, unsubscribe=unsubscribe)
        return Board(self.entries, services, self.namespaces, self.by_original)

    def without_tool(self, name: str) -> Board:
        """One name gone; its service stays."""
        entry = self.entry(name)
        service = self.services[entry.server]
        kept = tuple(n for n in service.names if n != name)
        updated = dataclasses.replace(service, names=kept)
        return self.edit(drop=[name], services={**self.services, entry.server: updated})

    def without_service(self, server: str) -> tuple[Board, Service] | None:
        """A service gone with its names and namespace, and the service that went; ``None``
        for a server not on the board."""
        service = self.services.get(server)
        if service is None:
            return None
        services = dict(self.services)
        del services[server]
        namespaces = self.namespaces
        if service.namespace:
            namespaces = dict(namespaces)
            namespaces.pop(service.namespace, None)
        return self.edit(drop=service.names, services=services, namespaces=namespaces), service

    def edit(self, *, drop: Iterable[str] = (), add: Iterable[PegEntry] = (),
             services: dict[str, Service] | None = None,
             namespaces: dict[str, str] | None = None) -> Board:
        entries = dict(self.entries)
        by_original = dict(self.by_original)
        touched: dict[str, set[str]] = {}
        for name in drop:
            old = entries.pop(name)
            group = touched.setdefault(old.tool, set(by_original.get(old.tool, ())))
            group.discard(name)
        for entry in add:
            entries[entry.name] = entry
            group = touched.setdefault(entry.tool, set(by_original.get(entry.tool, ())))
            group.add(entry.name)
        for original, names in touched.items():
            if names:
                by_original[original] = tuple(sorted(names))
            else:
                by_original.pop(original, None)
        return Board(
            entries,
            self.services if services is None else services,
            self.namespaces if namespaces is None else namespaces,
            by_original,
        )


EMPTY = Board({}, {}, {}, {})


def _clashes(board: Board, entries: list[PegEntry],
            replacing: str | None = None) -> tuple[list[str], list[str]]:
    """Every new name already taken (by a server other than ``replacing``) or listed twice."""
    seen: dict[str, PegEntry] = {}
    names: list[str] = []
    why: list[str] = []
    for entry in entries:
        first = seen.get(entry.name)
        if first is not None:
            names.append(entry.name)
            why.append(f"{entry.name!r} is listed twice by {entry.server!r} "
                       f"({first.tool!r} and {entry.tool!r})")
            continue
        seen[entry.name] = entry
        taken = board.entries.get(entry.name)
        if taken is not None and taken.server != replacing:
            names.append(entry.name)
            why.append(f"{entry.name!r} from {entry.tool_id} is already {taken.tool_id}")
    return names, why


def _refuse(names: list[str], why: list[str]) -> NameCollision:
    shown = "; ".join(why[:_SHOWN_CLASHES])
    if len(why) > _SHOWN_CLASHES:
        shown += f"; and {len(why) - _SHOWN_CLASHES} more"
    return NameCollision(names, shown)
