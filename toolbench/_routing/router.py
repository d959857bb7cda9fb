"""One client per locally named server, and the egress check before anything is sent."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Mapping
from typing import Any

import anyio

from toolbench._core.arguments import check_arguments
from toolbench._core.client import Result, ToolClient, ToolSpec
from toolbench._core.errors import Unreachable
from toolbench._core.ids import Destination, Egress, Provenance, ToolId, check_server_name
from toolbench._transports.notifications import ProgressFn


class ToolRouter:
    """Routes each server to exactly one client; registration order never picks a transport."""

    def __init__(self, egress: Egress | None = None) -> None:
        if egress is not None and not isinstance(egress, Egress):
            raise TypeError(f"egress must be an Egress or None, not {egress!r}")
        self.egress = egress
        self._routes: dict[str, ToolClient] = {}
        self._lock = threading.Lock()

    def server(self, name: str, client: ToolClient) -> None:
        """Route ``name`` to ``client``; a server already routed raises."""
        check_server_name(name)
        if not isinstance(client, ToolClient):
            raise TypeError(f"client for {name!r} is not a ToolClient: {client!r}")
        with self._lock:
            if name in self._routes:
                raise ValueError(
                    f"server {name!r} is already routed; unroute it first (one client per server)"
                )
            self._routes = {**self._routes, name: client}

    def toolbox(self, box: ToolClient) -> list[str]:
        """Route every server a ToolBox (or any multi-server client) answers for, all or none."""
        names = sorted(box.servers())
        for name in names:
            check_server_name(name)
        with self._lock:
            taken = [n for n in names if n in self._routes]
            if taken:
                raise ValueError(f"servers already routed: {taken}; nothing was routed")
            self._routes = {**self._routes, **{n: box for n in names}}
        return names

    def unroute(self, name: str) -> ToolClient | None:
        """Forget server ``name``; returns its client (``None`` if it had none). It does not
        close the client: whoever opened it does.
        """
        with self._lock:
            routes = dict(self._routes)
            client = routes.pop(name, None)
            self._routes = routes
        return client

    def client(self, server: str, tool: ToolId | None = None) -> ToolClient:
        """The client serving ``server``.

        Raises:
            Unreachable: no client serves it (``tool`` is named in the error).
        """
        client = self._routes.get(server)
        if client is None:
            routed = sorted(self._routes)
            raise Unreachable(
                f"no route for server {server!r}; routed servers: {routed if routed else 'none'}",
                tool=tool,
            )
        return client

    def servers(self) -> list[str]:
        """The routed servers' names, sorted."""
        return sorted(self._routes)

    def __contains__(self, server: object) -> bool:
        return server in self._routes

    def destination(self, tool: ToolId) -> Destination:
        """Where a call to ``tool`` would go (``LOCAL`` for an unrouted server)."""
        client = self._routes.get(tool.server)
        # An unrouted server is LOCAL so the honest error (no transport) wins over egress.
        return Destination.LOCAL if client is None else client.destination(tool)

    def bounds_itself(self, tool: ToolId) -> bool:
        """Whether a call to ``tool`` ends by its ``timeout`` without a backstop around it:
        the client is one of ours that says so (``honours_timeout``), or it takes no
        ``timeout`` and :func:`call_client` bounds it here. An unrouted tool fails at once."""
        client = self._routes.get(tool.server)
        return (client is None or getattr(type(client), "honours_timeout", False) is True
                or not takes_timeout(client))

    def check_egress(self, tool: ToolId) -> None:
        """Refuse, before sending, a call whose destination the egress allowlist does not name.

        Raises:
            Unreachable: the host is not allowed; nothing was sent.
        """
        if self.egress is None:
            return
        destination = self.destination(tool)
        if not self.egress.allows(destination):
            raise Unreachable(self.egress.refusal(destination), tool=tool)

    async def list_tools(self, server: str) -> list[ToolSpec]:
        """The tools of ``server``, from its client.

        Raises:
            Unreachable: no client serves it, or listing failed.
        """
        return await self.client(server).list_tools(server)

    async def call(self, tool: ToolId, arguments: Mapping[str, Any],
                   provenance: Provenance | None = None, *,
                   timeout: float | None = None,
                   progress: ProgressFn | None = None) -> Result:
        """Call through the routed client; ``timeout`` is always honoured.

        A client whose ``call`` takes ``timeout=`` gets it, so it can tell a call that never
        left (queued, still connecting: did not happen) from one that got no answer (in
        doubt). Any other client (the three-argument ToolClient form) is bounded here, and
        its timeout is in doubt, since nothing says how far the call got. ``progress`` goes
        to a client that reports progress (McpClient); other clients have none to report.
        """
        client = self.client(tool.server, tool)
        self.check_egress(tool)
        if progress is not None and takes_keyword(client, "progress"):
            call: Any = client.call  # McpClient's form: timeout and progress keywords
            result: Result = await call(tool, check_arguments(tool, arguments), provenance,
                                        timeout=timeout, progress=progress)
            return result
        return await call_client(client, tool, check_arguments(tool, arguments), provenance,
                                 timeout)


async def call_client(client: ToolClient, tool: ToolId, arguments: Mapping[str, Any],
                      provenance: Provenance | None, timeout: float | None) -> Result:
    """``client.call`` with ``timeout`` passed down when it takes one, else bounded here."""
    if timeout is None:
        return await client.call(tool, arguments, provenance)
    if takes_timeout(client):
        call: Any = client.call  # the protocol's form has no timeout; this client's has
        result: Result = await call(tool, arguments, provenance, timeout=timeout)
        return result
    with anyio.fail_after(timeout):
        return await client.call(tool, arguments, provenance)


_TAKES_TIMEOUT: dict[type, bool] = {}
_TAKES_KEYWORD: dict[tuple[type, str], bool] = {}


def takes_keyword(client: ToolClient, keyword: str) -> bool:
    """Whether ``client.call`` names ``keyword`` as a keyword argument (cached per class)."""
    key = (type(client), keyword)
    known = _TAKES_KEYWORD.get(key)
    if known is None:
        params: Mapping[str, inspect.Parameter]
        try:
            params = inspect.signature(client.call).parameters
        except (TypeError, ValueError):
            params = {}
        param = params.get(keyword)
        known = _TAKES_KEYWORD[key] = param is not None and param.kind in (
            param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD)
    return known


def takes_timeout(client: ToolClient) -> bool:
    """Whether ``client.call`` accepts a ``timeout=`` keyword (cached per class)."""
    kind = type(client)
    known = _TAKES_TIMEOUT.get(kind)
    if known is None:
        try:
            params = list(inspect.signature(client.call).parameters.values())
        except (TypeError, ValueError):
            params = []  # no signature to read: assume the protocol's three arguments
        known = any(
            (p.name == "timeout" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
            or p.kind == p.VAR_KEYWORD
            for p in params
        )
        _TAKES_TIMEOUT[kind] = known
    return known
