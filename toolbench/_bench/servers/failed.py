"""Why a name cannot be called when its server failed: the server's failure, not "no such tool".

A server that failed to start (or whose config entry failed) keeps its row, with the reason
(``Servers``); its tools were never listed, so the pegboard only knows "no tool named ...".
This finds the failed row a name points at (its namespace and the separator, or a
``tool://server/...`` reference), so a call says which server failed and why. It is asked only
once a name was not found: the call's path pays nothing. ``load_config`` warns once, naming
every server that failed and why.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from toolbench._bench.servers.config import ConfigWarning
from toolbench._core import html as _html
from toolbench._core.errors import Unreachable
from toolbench._routing.pegboard import USE_SERVER_NAME

if TYPE_CHECKING:
    from toolbench._bench.servers.servers import Row, Servers

FAILED = frozenset({"failed"})
"""Row statuses whose tools were never listed."""
FAILED_WARNING = r"\d+ of \d+ servers in the config failed to start"
"""The start of the warning's text, as a ``warnings.filterwarnings`` message pattern."""
_REASON = 600  # characters of each reason in the warning (the table has it all)


def failed_row(servers: Servers, name: str, separator: str) -> Row | None:
    """The failed server's row that ``name`` belongs to, if any (the longest prefix wins)."""
    found: Row | None = None
    width = -1
    for row in servers.rows():
        if row.current_status() not in FAILED:
            continue
        namespace = row.given[2] if row.given is not None else USE_SERVER_NAME
        prefix = row.name if namespace is USE_SERVER_NAME else namespace
        heads = [f"tool://{row.name}/"]
        if isinstance(prefix, str) and prefix:
            heads.append(f"{prefix}{separator}")
        for head in heads:
            if name.startswith(head) and len(head) > width:
                found, width = row, len(head)
    return found


def failed_server_error(servers: Servers, name: str, separator: str) -> Unreachable | None:
    """``Unreachable`` naming the failed server behind ``name`` and its reason, or None."""
    row = failed_row(servers, name, separator)
    if row is None:
        return None
    why = row.error or "no reason was recorded"
    return Unreachable(
        f"cannot call {_html.shorten(repr(name), 120)}: its server {row.name!r} failed, so "
        f"its tools were never listed; {why}\n(fix the cause and connect {row.name!r} again: "
        f"the failed row is replaced; bench.servers shows it)")


def warn_failed(servers: Servers, names: list[str], stacklevel: int) -> None:
    """One ``ConfigWarning`` naming every server of ``names`` that failed, and why.

    ``load_config`` connects each server on its own and returns the table; without this a
    server that failed to start would be found only by reading the table, or by a call.
    Issued in the caller's thread, so it shows where ``load_config`` was called.
    """
    failed = [row for name in names if (row := servers.row(name)) is not None
              and row.current_status() in FAILED]
    if not failed:
        return
    told = "; ".join(
        f"{row.name!r}: {_html.shorten((row.error or 'no reason recorded').strip(), _REASON)}"
        for row in failed)
    warnings.warn(f"{len(failed)} of {len(names)} servers in the config failed to start: "
                  f"{told} (bench.servers has each error in full; "
                  f"bench.doctor({failed[0].name!r}) shows which step failed)", ConfigWarning,
                  stacklevel=stacklevel + 1)
