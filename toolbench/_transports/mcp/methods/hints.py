"""The 2026-07-28 cache hints (``ttlMs``, ``cacheScope``): read off the wire, and one cache.

Since 2026-07-28 a server says how long a listing (tools, resources, templates, prompts) or a
resource read stays fresh (``ttlMs``) and whether it may be shared across authorization
contexts (``cacheScope``: ``"public"`` or ``"private"``). DESIGN.md, "Gathering from real
servers", asks the bench to honour them; the SDK's own response cache is off
(``cache=None``: toolbench must see every listing it applies), so the cache is this one, one
per connection (``McpClient.responses``), which is one per bench: nothing is shared across
benches.

**Read at the wire.** Every answer of a 2026-07-28 session passes through
:meth:`ResponseCache.received` before the SDK validates it (the session's dispatcher is
wrapped once, by ``toolbench._transports.mcp.compat``). A bad hint from a server
(``ttlMs`` negative, above :data:`MAX_TTL_MS`, not an integer; a ``cacheScope`` that is
neither scope) is not the listing's failure: the SDK would reject the whole answer (or floor
a negative TTL silently), so the hint is replaced by "never cache" (``ttlMs: 0``, private),
and a note says why (:attr:`ResponseCache.notes`, shown in ``bench.servers``' ``warnings``,
and the ``toolbench.cache`` log). Hints on a handshake-era session are outside its contract
(the SDK drops them too) and are not used.

**Kept apart by context.** An entry remembers the protocol version and the sign-in it was
fetched under (``ResponseCache(context=...)``); a ``private`` one is served only in the same
pair, a ``public`` one in the same protocol version. ``ttlMs: 0`` (or no hint) is never
cached. A ``list_changed`` forgets that kind's listing at once (``Events``' hook), a
reconnect forgets everything, and a ``resources/updated`` forgets that URI's read.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from toolbench._core import html as _html

_log = logging.getLogger("toolbench.cache")

MAX_TTL_MS = 24 * 60 * 60 * 1000
"""The longest freshness believed (a day, as the SDK's own cache caps it); a longer
``ttlMs`` is a server's mistake and is ignored with a note, never a day-long stale catalog."""
MAX_NOTES = 50
CACHEABLE = frozenset({"tools/list", "resources/list", "resources/templates/list",
                       "prompts/list", "resources/read"})
"""The methods whose answers the bench caches (``server/discover`` carries hints too, but
the bench sends it once per connect)."""
KIND_METHODS: dict[str, tuple[str, ...]] = {
    "tools": ("tools/list",),
    "resources": ("resources/list", "resources/templates/list"),
    "prompts": ("prompts/list",),
}
"""What a ``list_changed`` of each kind makes stale (the ``Events`` kinds)."""

Scope = Literal["public", "private"]


@dataclass(frozen=True, slots=True)
class Hint:
    """One answer's freshness as the server gave it (already checked)."""

    ttl_ms: int
    scope: Scope


NEVER = Hint(0, "private")
"""No hint, a handshake-era answer, or a bad one: not cached."""

_SINK: contextvars.ContextVar[list[Hint] | None] = contextvars.ContextVar(
    "toolbench_cache_hints", default=None)


@contextlib.contextmanager
def capture() -> Iterator[list[Hint]]:
    """Collect the hints of the answers received inside (one per page or read)."""
    found: list[Hint] = []
    token = _SINK.set(found)
    try:
        yield found
    finally:
        _SINK.reset(token)


def combined(hints: list[Hint]) -> Hint:
    """A whole listing's hint: fresh as long as its stalest page, private if one page is;
    never cached without a hint per page."""
    if not hints:
        return NEVER
    ttl = min(h.ttl_ms for h in hints)
    scope: Scope = "private" if any(h.scope == "private" for h in hints) else "public"
    return Hint(ttl, scope)


def take(raw: dict[str, Any], method: str, modern: bool, server: str,
         notes: deque[str] | None = None) -> Hint:
    """The hint of one answer (``raw``, edited in place so the SDK's validation passes)."""
    if not modern:
        return NEVER
    ttl, scope = raw.get("ttlMs"), raw.get("cacheScope")
    if ttl is None and scope is None:
        return NEVER
    bad_scope = scope is not None and scope not in ("public", "private")
    why = None
    if bad_scope:
        why = (f"cacheScope {_html.shorten(repr(scope), 40)} is neither 'public' nor "
               "'private'")
    if ttl is None:
        pass  # a scope alone says nothing of freshness
    elif isinstance(ttl, bool) or not isinstance(ttl, int):
        why = f"ttlMs {_html.shorten(repr(ttl), 40)} is not an integer of milliseconds"
    elif ttl < 0:
        why = f"ttlMs {ttl} is negative"
    elif ttl > MAX_TTL_MS:
        why = f"ttlMs {_html.shorten(str(ttl), 40)} is more than a day ({MAX_TTL_MS:,} ms)"
    if why is not None:
        raw["cacheScope"] = "private"
        if ttl is not None:
            raw["ttlMs"] = 0
        note = f"{server}: {method}: {why}; the hint is ignored and the answer not cached"
        if notes is None or note not in notes:  # said once, not once per page
            _log.warning("%s", note)
            if notes is not None:
                notes.append(note)
        return NEVER
    if ttl is None or scope is None:  # either alone: not cached (cacheScope is required)
        return NEVER
    return Hint(ttl, scope)


@dataclass(slots=True)
class _Entry:
    value: Any
    expires: float  # time.monotonic()
    until: datetime  # the same moment, for the catalog
    scope: Scope
    context: tuple[str | None, int]  # (protocol version, sign-in)


class ResponseCache:
    """One connection's fresh answers: listings by method, reads by URI.

    ``context()`` gives what an entry is kept apart by: the protocol version last negotiated
    and the sign-in (``AuthState.signins``; 0 without one)."""

    def __init__(self, server: str, context: Callable[[], tuple[str | None, int]]) -> None:
        self._server = server
        self.context = context
        self._entries: dict[tuple[str, str], _Entry] = {}
        self.notes: deque[str] = deque(maxlen=MAX_NOTES)
        """Why hints of this server were ignored (newest last, capped)."""
        self.hits = 0
        """Answers served from here (for tests and benchmarks)."""

    def received(self, method: str, raw: Any) -> None:
        """One answer of a 2026-07-28 session, before the SDK checks it (the hook
        ``toolbench._transports.mcp.compat.default_result_type`` runs): its hint is read,
        handed to the :func:`capture` under way, and a bad one replaced."""
        if method in CACHEABLE and isinstance(raw, dict):
            hint = take(raw, method, True, self._server, self.notes)
            sink = _SINK.get()
            if sink is not None:
                sink.append(hint)

    def get(self, method: str, key: str) -> Any | None:
        """A copy of the fresh answer kept for ``(method, key)`` in this context, or None."""
        context = self.context()
        entry = self._entries.get((method, key))
        if entry is None:
            return None
        if time.monotonic() >= entry.expires:
            del self._entries[(method, key)]
            return None
        if entry.context[0] != context[0]:  # another protocol era: never
            return None
        if entry.scope == "private" and entry.context != context:  # another sign-in
            return None
        self.hits += 1
        return copy.deepcopy(entry.value)

    def put(self, method: str, key: str, value: Any, hint: Hint) -> None:
        """Keep ``value`` while the hint says it is fresh (a copy: callers may edit theirs)."""
        if hint.ttl_ms <= 0:
            self._entries.pop((method, key), None)
            return
        seconds = hint.ttl_ms / 1000
        self._entries[(method, key)] = _Entry(
            copy.deepcopy(value), time.monotonic() + seconds,
            datetime.now(UTC) + timedelta(seconds=seconds), hint.scope, self.context())

    def changed(self, kind: str) -> None:
        """A ``list_changed`` of ``kind``: that kind's listings go at once. A (re)connect
        (``"connected"``) forgets everything: the server may have restarted with other
        lists, and the bench re-lists after a reconnect as after a ``list_changed``."""
        if kind == "connected":
            self._entries.clear()
            return
        for method in KIND_METHODS.get(kind, ()):
            self._entries.pop((method, ""), None)

    def updated(self, uri: str) -> None:
        """A ``resources/updated``: the read of ``uri`` goes at once."""
        self._entries.pop(("resources/read", uri), None)

    def clear(self) -> None:
        self._entries.clear()

    def fresh_until(self, method: str, key: str = "") -> datetime | None:
        """When the kept answer goes stale (UTC), or None when nothing fresh is kept."""
        entry = self._entries.get((method, key))
        if entry is None or time.monotonic() >= entry.expires:
            return None
        return entry.until
