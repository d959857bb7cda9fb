"""The catalog's faces on ``Bench``: resources, resource templates, prompts, completions.

``CatalogFaces`` holds no state: each public method keeps its signature and docstring here
and hands off to ``Listings`` (``listing.py``) or ``Completions`` (``completions.py``) in one
step. It may import ``toolbench._bench.catalog`` and ``_loop``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from toolbench._bench.catalog.completions import CompletionTarget
from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._bench.catalog.completions import Completions
    from toolbench._bench.catalog.listing import Listings


class CatalogFaces:
    """What the servers offer besides tools, listed now; a face over ``Listings``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        listings: Listings
        completions: Completions

    def resources(self, server: str | None = None, search: str | None = None) -> pd.DataFrame:
        """One row per resource of every MCP server (or of ``server``), listed now.

        Args:
            server: only this server (default: every server that offers resources; a
                ToolBox or Toolset has none and is left out).
            search: keep rows whose name, URI, title or description contains it (any case).

        Returns:
            A frame with ``name``, ``server``, ``uri``, ``title``, ``description``,
            ``mime_type``, ``size``, ``annotations``.

        Raises:
            Refused: ``server`` offers no resources (a ToolBox, or no capability).
            Unreachable: no such server, or its listing failed (with ``server`` given).

        Warns:
            ListingWarning: some servers' listings failed (without ``server``); the frame
                has the rest.

        Example:
            >>> bench.resources(search="json")                          # doctest: +SKIP
        """
        return get_loop().run(self.listings.resources, server, search, templates=False)

    async def aresources(self, server: str | None = None,
                         search: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`resources`: the same arguments, result and errors."""
        return await get_loop().arun(self.listings.resources, server, search, templates=False)

    def resource_templates(self, server: str | None = None,
                           search: str | None = None) -> pd.DataFrame:
        """One row per resource template (``uri`` is the template, e.g. ``city://{name}``).

        Fill a template's variables in and ``read`` the URI: ``bench.read("beyond",
        "city://paris")``.

        Args:
            server: only this server (default: every server that offers resources).
            search: keep rows whose name, URI, title or description contains it.

        Returns:
            A frame with the columns of :meth:`resources` (``size`` is always empty).

        Raises:
            Refused: ``server`` offers no resources.
            Unreachable: no such server, or its listing failed (with ``server`` given).
        """
        return get_loop().run(self.listings.resources, server, search, templates=True)

    async def aresource_templates(self, server: str | None = None,
                                  search: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`resource_templates`: the same arguments, result and errors."""
        return await get_loop().arun(self.listings.resources, server, search, templates=True)

    def prompts(self, server: str | None = None, search: str | None = None) -> pd.DataFrame:
        """One row per prompt of every MCP server (or of ``server``), listed now.

        Prompts get prefixed names like tools (``beyond-welcome``); ``prompt`` is the
        server's own name, and ``arguments`` a list of ``{name, description, required}``.

        Args:
            server: only this server (default: every server that offers prompts).
            search: keep rows whose name, title or description contains it (any case).

        Returns:
            A frame with ``name``, ``server``, ``prompt``, ``title``, ``description``,
            ``arguments``.

        Raises:
            Refused: ``server`` offers no prompts.
            Unreachable: no such server, or its listing failed (with ``server`` given).

        Example:
            >>> bench.prompts()                                         # doctest: +SKIP
        """
        return get_loop().run(self.listings.prompts, server, search)

    async def aprompts(self, server: str | None = None,
                       search: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`prompts`: the same arguments, result and errors."""
        return await get_loop().arun(self.listings.prompts, server, search)

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
        return get_loop().run(self.completions.complete, target, argument, value, context, timeout)

    async def acomplete(self, target: CompletionTarget, argument: str, value: str = "",
                        context: Mapping[str, str] | None = None, *,
                        timeout: float | None = None) -> list[str]:
        """Awaitable :meth:`complete`: the same arguments, result and errors."""
        return await get_loop().arun(self.completions.complete, target, argument, value, context,
                                     timeout)
