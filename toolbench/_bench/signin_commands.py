"""``toolbench auth login URL`` / ``logout URL`` / ``list``: sign-ins from a terminal.

- ``login URL`` connects to the server with ``auth=OAuth(...)``: the sign-in's link is
  printed, the loopback listener waits for the browser's redirect, and an address pasted on
  stdin works too (:func:`toolbench._transports.auth.signin.terminal_authorizer`); bounded by
  ``--timeout``. The tokens go to the token store, so later connects need no sign-in.
- ``logout URL`` forgets the server's stored registration and tokens (every issuer).
- ``list`` shows what the store holds: issuer, resource, kind, state, expiry. Never a token.

``_cli.py`` only wires the arguments (:func:`add_auth_command`) to :func:`auth_command`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import sys
import time
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from toolbench._transports.auth.signin import terminal_authorizer
from toolbench._transports.auth.state import OAuth, register_authorizer
from toolbench._transports.auth.tokens import FileStore, Record, TokenStoreError

DEFAULT_TIMEOUT_S = 300.0
LOGIN_NAME = "server"
"""The local name a login's connection uses (it is closed at once)."""


def add_auth_command(sub: Any) -> None:
    """The ``auth`` command and its three subcommands, on ``_cli.py``'s subparsers."""
    auth = sub.add_parser("auth", help="sign in to OAuth-protected servers, list and forget "
                                       "stored sign-ins",
                          description="Sign in to an OAuth-protected MCP server from a "
                                      "terminal; list and forget stored sign-ins (tokens are "
                                      "never shown).")
    what = auth.add_subparsers(dest="auth_command", metavar="ACTION", required=True)
    login = what.add_parser("login", help="sign in to a server (prints a link to open)")
    login.add_argument("url", metavar="URL", help="the server's http(s) MCP address")
    login.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                       help=f"how long to wait for the sign-in (default {DEFAULT_TIMEOUT_S:g})")
    login.add_argument("--redirect-uri", default=None, metavar="URI",
                       help="where the browser returns (default a loopback address)")
    logout = what.add_parser("logout", help="forget a server's stored sign-in")
    logout.add_argument("url", metavar="URL", help="the server's MCP address, as signed in")
    what.add_parser("list", help="what the token store holds (never a token)")
    for parser in (login, logout, what.choices["list"]):
        parser.add_argument("--store", default=None, metavar="FOLDER",
                            help="the token folder (default: the user's data folder)")


def auth_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run ``toolbench auth ...``; returns the exit status."""
    out = out if out is not None else sys.stdout
    if args.auth_command == "login":
        return login(args.url, timeout=args.timeout, store=args.store,
                     redirect_uri=args.redirect_uri, out=out)
    if args.auth_command == "logout":
        return logout(args.url, store=args.store, out=out)
    return list_signins(store=args.store, out=out)


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url[:200]!r} is not a server address: give its http(s) MCP URL, "
                         "e.g. https://example.com/mcp")
    return url


def login(url: str, *, timeout: float = DEFAULT_TIMEOUT_S, store: str | None = None,
          redirect_uri: str | None = None, out: TextIO) -> int:
    """Sign in to ``url`` and keep the tokens; prints the server's ``auth`` state."""
    from toolbench._bench.bench import BaseBench

    _check_url(url)
    option = OAuth(timeout=timeout, store=store, redirect_uri=redirect_uri)
    bench = BaseBench(connect_timeout=timeout + 30, log_level=None)
    # Here stdin is the person's even when it is not a terminal (a pasted line, a pipe).
    previous = register_authorizer(functools.partial(terminal_authorizer, stdin=sys.stdin))
    try:
        bench.connect(LOGIN_NAME, url, auth=option)
        table = bench.servers
        state = str(table.loc[table["name"] == LOGIN_NAME, "auth"].iloc[0])
    finally:
        register_authorizer(previous)
        bench.close()
    print(f"signed in to {url}: {state}", file=out)
    return 0


def logout(url: str, *, store: str | None = None, out: TextIO) -> int:
    """Forget ``url``'s stored registration and tokens."""
    _check_url(url)
    count = FileStore(store).forget(url)
    print(f"forgot {count} stored sign-in(s) for {url}" if count else
          f"no stored sign-in for {url}", file=out)
    return 0


def records(store: str | None = None) -> list[tuple[Path, Record | None, str]]:
    """Every file in the token folder: its record (None if unreadable) and why not."""
    place = FileStore(store)
    folder = place.folder
    if not folder.is_dir():
        return []
    found: list[tuple[Path, Record | None, str]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = place._read(path)
        except (TokenStoreError, OSError) as exc:
            found.append((path, None, str(exc)))
            continue
        found.append((path, record, "" if record is not None else "not a token record"))
    return found


def describe(record: Record, now: float | None = None) -> tuple[str, str, str]:
    """``(kind, state, expiry)`` of a record, never a token."""
    now = time.time() if now is None else now
    kind = "oauth" if record.client_info is None or \
        record.client_info.get("grant_types") != ["client_credentials"] else "client_credentials"
    if not record.tokens:
        return kind, "needs sign-in" if record.client_info else "empty", ""
    expiry = record.expires_at
    refresh = bool(record.tokens.get("refresh_token"))
    if expiry is None or not math.isfinite(expiry):
        return kind, "signed in", ""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(expiry))
    left = expiry - now
    if left <= 0:
        return kind, "expired (refreshes on the next call)" if refresh else "expired", stamp
    return kind, f"signed in, expires in {_span(left)}", stamp


def _span(seconds: float) -> str:
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def list_signins(*, store: str | None = None, out: TextIO) -> int:
    """Print one line per stored sign-in: issuer, resource, kind, state, expiry."""
    found = records(store)
    if not found:
        print(f"no stored sign-ins (in {FileStore(store).folder})", file=out)
        return 0
    rows = [("issuer", "resource", "kind", "state", "expires")]
    for path, record, why in found:
        if record is None:
            rows.append(("?", "?", "?", f"unreadable: {why}"[:200], path.name))
            continue
        kind, state, expiry = describe(record)
        rows.append((record.issuer or "(pre-registered)", record.resource, kind, state, expiry))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
              .rstrip(), file=out)
    with contextlib.suppress(Exception):
        print(f"({len(found)} in {FileStore(store).folder})", file=out)
    return 0
