"""The rest of the client on the bench: completions, subscriptions, roots and log level.

``RestOfClient`` is mixed into ``BaseBench`` (as ``ResourcesAndPrompts`` is). Each public operation
has a blocking face and an awaitable face with their own signatures and docstrings, each a
one-line hand-off to the shared loop. The protocol lives below, in
``toolbench._transports.mcp.completions`` and ``mcp_subscriptions``; here are the names a
user knows (prefixed prompt names, URI templates, server names).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from toolbench._core import html as _html
from toolbench._core.errors import Refused, Unreachable
from toolbench._core.ids import did_you_mean
from toolbench._loop import get_loop
from toolbench._transports.notifications import LEVELS

if TYPE_CHECKING:
    from toolbench._core.client import ResourceClient
    from toolbench._transports.notifications import LogLevel, Notifications
    from toolbench._transports.server_requests import ServerRequests

CompletionTarget = str | tuple[str, str]
"""A prefixed prompt name, a URI template, or ``(server, uri_template)``."""


def _is_template(text: str) -> bool:
    return "://" in text or "{" in text


class RestOfClient:
    """Completions, subscriptions, per-server roots and the log level; mixed into BaseBench."""

    if TYPE_CHECKING:  # what BaseBench and ResourcesAndPrompts provide
        _rows: dict[str, Any]
        _requests: ServerRequests
        _notifications: Notifications

        def _check_open(self) -> None: ...

        def _resource_client(self, server: object) -> ResourceClient: ...

        async def _resolve_prompt(self, name: object) -> tuple[str, str, str]: ...

        async def _gather(self, server: str | None, ask: Any,
                          what: str) -> list[tuple[str, dict[str, Any]]]: ...

    def _mcp(self, server: object) -> Any:
        """The ``McpClient`` of ``server`` (an MCP server), or a clear error."""
        self._resource_client(server)  # no such server, or tools only: raised there
        row = self._rows[str(server)]
        mcp = getattr(row.connection, "mcp", None)
        if mcp is None:
            raise Refused(f"server {server!r} ({row.transport}) is not an MCP connection: "
                          "completions and subscriptions are MCP's")
        return mcp

    # -- completions ----------------------------------------------------------------------
    async def _completion_ref(self, target: object) -> tuple[str, tuple[Any, str]]:
        """``(server, ("prompt" | "template", name))`` for what ``complete`` was given."""
        if isinstance(target, tuple):
            if (len(target) != 2 or not all(isinstance(p, str) for p in target)):
                raise TypeError(f"a (server, uri_template) pair is two str, not {target!r}")
            server, template = target
            self._mcp(server)
            return server, ("template", template)
        if not isinstance(target, str):
            raise TypeError("complete takes a prompt name, a URI template or a (server, "
                            f"uri_template) pair, not {type(target).__name__} {target!r}")
        if not _is_template(target):
            _, server, prompt = await self._resolve_prompt(target)
            return server, ("prompt", prompt)
        rows = await self._gather(None, lambda c, s: c.list_resource_templates(s),
                                  "resource templates")
        offering = sorted({name for name, row in rows if row.get("uri") == target})
        if not offering:
            known = sorted({str(row.get("uri")) for _, row in rows})
            raise Unreachable(f"no connected server offers the resource template "
                              f"{_html.shorten(target, 200)!r}{did_you_mean(target, known)}")
        if len(offering) > 1:
            raise ValueError(f"the resource template {target!r} is offered by {offering}; "
                             f"name one: complete(({offering[0]!r}, {target!r}), ...)")
        return offering[0], ("template", target)

    async def _complete(self, target: CompletionTarget, argument: str, value: str,
                        context: Mapping[str, str] | None, timeout: float | None,
                        ) -> list[str]:
        self._check_open()
        server, ref = await self._completion_ref(target)
        values: list[str] = await self._mcp(server).complete(server, ref, argument, value,
                                                             context, timeout=timeout)
        return values

    def complete(self, target: CompletionTarget, argument: str, value: str = "",
                 context: Mapping[str, str] | None = None, *,
                 timeout: float | None = None) -> list[str]:
        """The server's suggestions for one argument of a prompt or a resource template.

        Args:
            target: a prompt as named in ``bench.prompts()`` (``"everything-completable-
                prompt"``), a resource template by its URI template (``"city://{name}"``),
                or ``(server, uri_template)`` when two servers offer the same template.
            argument: the argument to complete (``"name"``).
            value: what has been typed so far (``"Li"``); ``""`` asks for everything.
            context: the other arguments already chosen, as strings.
            timeout: seconds (default: the server's call timeout).

        Returns:
            The suggestions, in the server's order (at most 100).

        Raises:
            Unreachable: no server offers that prompt or template.
            ValueError: two servers offer that template (the message names them).
            Refused: the server offers no completions, or refused the request.
            TimedOut: no answer in time (asking again is safe).

        Example:
            >>> bench.complete("everything-completable-prompt", "department", "E")  # doctest: +SKIP
            ['Engineering']
        """
        return get_loop().run(self._complete, target, argument, value, context, timeout)

    async def acomplete(self, target: CompletionTarget, argument: str, value: str = "",
                        context: Mapping[str, str] | None = None, *,
                        timeout: float | None = None) -> list[str]:
        """Awaitable :meth:`complete`: the same arguments, result and errors."""
        return await get_loop().arun(self._complete, target, argument, value, context,
                                     timeout)

    # -- subscriptions --------------------------------------------------------------------
    async def _subscribe(self, server: str, uri: str, timeout: float | None, *,
                         on: bool) -> None:
        self._check_open()
        mcp = self._mcp(server)
        if on:
            await mcp.subscribe(server, uri, timeout=timeout)
        else:
            await mcp.unsubscribe(server, uri, timeout=timeout)

    def subscribe(self, server: str, uri: str, *, timeout: float | None = None) -> None:
        """Hear about changes to one resource: each update is a ``bench.logs`` row.

        Works on both protocol eras (``resources/subscribe``, or a ``subscriptions/listen``
        stream), and survives reconnects (the bench subscribes again). Rows have ``kind``
        ``resource_updated`` and the URI as ``message``.

        Args:
            server: the server's name, as in ``servers``.
            uri: the resource's URI (as in ``bench.resources()``).
            timeout: seconds (default: the server's call timeout).

        Raises:
            Refused: the server offers no subscriptions, the URI is invalid, or it refused.
            Unreachable: no such server, or it cannot be reached.

        Example:
            >>> bench.subscribe("docs", "file:///notes.md")            # doctest: +SKIP
        """
        get_loop().run(self._subscribe, server, uri, timeout, on=True)

    async def asubscribe(self, server: str, uri: str, *, timeout: float | None = None) -> None:
        """Awaitable :meth:`subscribe`: the same arguments and errors."""
        await get_loop().arun(self._subscribe, server, uri, timeout, on=True)

    def unsubscribe(self, server: str, uri: str, *, timeout: float | None = None) -> None:
        """Stop hearing about one resource (see :meth:`subscribe`).

        Raises:
            Refused: not subscribed to ``uri`` (nothing sent), or the server refused.
        """
        get_loop().run(self._subscribe, server, uri, timeout, on=False)

    async def aunsubscribe(self, server: str, uri: str, *,
                           timeout: float | None = None) -> None:
        """Awaitable :meth:`unsubscribe`: the same arguments and errors."""
        await get_loop().arun(self._subscribe, server, uri, timeout, on=False)

    def subscriptions(self, server: str | None = None) -> dict[str, list[str]]:
        """The subscribed URIs, per server (or of one server)."""
        names = [server] if server is not None else sorted(self._rows)
        found: dict[str, list[str]] = {}
        for name in names:
            row = self._rows.get(name)
            mcp = getattr(row.connection, "mcp", None) if row is not None else None
            if mcp is not None and mcp.subscriptions:
                found[name] = list(mcp.subscriptions)
        return found

    # -- roots per server -----------------------------------------------------------------
    async def _set_server_roots(self, server: str, roots: Iterable[Any] | None) -> bool:
        self._check_open()
        row = self._rows.get(server)
        if row is None:
            raise KeyError(f"no server {server!r}; connected: {sorted(self._rows)}")
        self._requests.set_server_roots(server, roots)
        if row.connection is None:
            return False
        return bool(await row.connection.notify_roots_changed())

    def set_roots(self, server: str, roots: Iterable[Any] | None) -> bool:
        """Give one server its own roots and tell that server only.

        Args:
            server: the server's name.
            roots: paths or ``file://`` URIs; ``None`` goes back to the bench's ``roots``.

        Returns:
            Whether the server was told (it is connected).

        Raises:
            KeyError: no such server. ValueError: a root is not a path or file:// URI.

        Example:
            >>> bench.set_roots("files", ["~/data"])                    # doctest: +SKIP
        """
        return get_loop().run(self._set_server_roots, server, roots)

    async def aset_roots(self, server: str, roots: Iterable[Any] | None) -> bool:
        """Awaitable :meth:`set_roots`: the same arguments, result and errors."""
        return await get_loop().arun(self._set_server_roots, server, roots)

    def server_roots(self, server: str) -> list[str]:
        """The ``file://`` URIs ``server`` is answered with (its own, else the bench's)."""
        return [str(r.uri) for r in self._requests.roots_for(server) or ()]

    # -- log level ------------------------------------------------------------------------
    @property
    def log_level(self) -> str | None:
        """The least severe log message servers are asked for (``bench.logs``).

        Assigning a level asks every connected server for it at once (``logging/setLevel``
        on handshake-era servers; 2026 connections carry it on each request). A bench made
        with ``log_level=None`` gets no log callback, so it stays without logs.
        """
        return self._notifications.log_level

    @log_level.setter
    def log_level(self, level: LogLevel) -> None:
        if level not in LEVELS:
            raise ValueError(f"invalid log_level {level!r}: one of {', '.join(LEVELS)}")
        self._notifications.log_level = level
        loop = get_loop()
        if loop.in_loop_thread():
            loop.submit(lambda: self._send_log_level(level))
        else:
            loop.run(self._send_log_level, level)

    async def _send_log_level(self, level: str) -> int:
        told = [0]

        async def one(mcp: Any) -> None:
            if await mcp.aset_log_level(level):
                told[0] += 1

        async with anyio.create_task_group() as group:
            for row in list(self._rows.values()):
                mcp = getattr(row.connection, "mcp", None)
                if mcp is not None:
                    group.start_soon(one, mcp)
        return told[0]
