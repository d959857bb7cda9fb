"""Completions: a server's suggestions for one argument of a prompt or a resource template.

The protocol lives below, in ``toolbench._transports.mcp.completions``; here are the names a
user knows (prefixed prompt names, URI templates, server names), resolved to a server and a
reference. ``Completions`` keeps nothing: it reads the servers and the prompt index.

It may import ``toolbench._bench.catalog.listing``, ``toolbench._bench.servers`` and ``_core``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolbench._core import html as _html
from toolbench._core.errors import Unreachable
from toolbench._core.ids import did_you_mean

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolbench._bench.catalog.listing import Listings
    from toolbench._bench.servers.servers import Servers

CompletionTarget = str | tuple[str, str]
"""A prefixed prompt name, a URI template, or ``(server, uri_template)``."""


def _is_template(text: str) -> bool:
    return "://" in text or "{" in text


class Completions:
    """``complete``: what a prompt's or a template's argument may be, per its server."""

    def __init__(self, servers: Servers, listings: Listings) -> None:
        self._servers = servers
        self._listings = listings

    async def _reference(self, target: object) -> tuple[str, tuple[Any, str]]:
        """``(server, ("prompt" | "template", name))`` for what ``complete`` was given."""
        if isinstance(target, tuple):
            if (len(target) != 2 or not all(isinstance(p, str) for p in target)):
                raise TypeError(f"a (server, uri_template) pair is two str, not {target!r}")
            server, template = target
            self._servers.mcp(server)
            return server, ("template", template)
        if not isinstance(target, str):
            raise TypeError("complete takes a prompt name, a URI template or a (server, "
                            f"uri_template) pair, not {type(target).__name__} {target!r}")
        if not _is_template(target):
            _, server, prompt = await self._listings.resolve_prompt(target)
            return server, ("prompt", prompt)
        rows = await self._servers.gather(None, lambda c, s: c.list_resource_templates(s),
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

    async def complete(self, target: CompletionTarget, argument: str, value: str,
                       context: Mapping[str, str] | None, timeout: float | None,
                       ) -> list[str]:
        """The server's suggestions (on the loop; ``bench.complete`` hands off here)."""
        self._servers.check_open()
        server, ref = await self._reference(target)
        values: list[str] = await self._servers.mcp(server).complete(
            server, ref, argument, value, context, timeout=timeout)
        return values
