"""Resources, templates and prompts as listed now, and the index of prompt names.

``Listings`` lists what every MCP server (or one) offers when asked (``resources()``,
``resource_templates()``, ``prompts()``), and owns the one piece of state this needs: the
index from a prompt's prefixed name to its server and own name.

**Prompt names** are prefixed like tools (``beyond-welcome``): the server's tool namespace
and the pegboard's separator, so one server's names share one prefix. Prompts are listed
when asked for (``prompts()``, or a name not seen yet), not at connect: a connect costs one
listing, of tools.

It may import ``toolbench._bench.servers`` and ``_core``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from toolbench._bench.servers.naming import prompt_name
from toolbench._core.errors import Unreachable
from toolbench._core.ids import did_you_mean

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd

    from toolbench._bench.servers.servers import Servers
    from toolbench._routing.pegboard import PegBoard

RESOURCE_COLUMNS = ("name", "server", "uri", "title", "description", "mime_type", "size",
                    "annotations")
PROMPT_COLUMNS = ("name", "server", "prompt", "title", "description", "arguments")


class Listings:
    """What the servers list now, and the prompt names index."""

    def __init__(self, servers: Servers, pegboard: PegBoard) -> None:
        self._servers = servers
        self._pegboard = pegboard
        self._prompt_names: dict[str, list[tuple[str, str]]] = {}
        self._prompt_servers: frozenset[tuple[str, int]] | None = None

    def prompt_name(self, server: str, prompt: str) -> str:
        return prompt_name(self._pegboard, server, prompt)

    def prompt_names(self) -> Mapping[str, list[tuple[str, str]]]:
        """The prompt index as last listed (read-only): prefixed name -> (server, prompt)."""
        return MappingProxyType(self._prompt_names)

    # -- tables -----------------------------------------------------------------------------
    async def resources(self, server: str | None, search: str | None, *,
                        templates: bool) -> pd.DataFrame:
        import pandas as pd

        self._servers.check_open()
        if templates:
            rows = await self._servers.gather(server, lambda c, s: c.list_resource_templates(s),
                                              "resource templates")
        else:
            rows = await self._servers.gather(server, lambda c, s: c.list_resources(s),
                                              "resources")
        needle = search.lower() if isinstance(search, str) and search else None
        data = []
        for name, row in rows:
            if needle and not any(needle in str(row.get(k) or "").lower()
                                  for k in ("name", "uri", "title", "description")):
                continue
            data.append({**{c: row.get(c) for c in RESOURCE_COLUMNS}, "server": name})
        return pd.DataFrame(data, columns=list(RESOURCE_COLUMNS), dtype=object)

    async def prompt_rows(self, server: str | None) -> list[tuple[str, dict[str, Any]]]:
        """Every prompt listed now, named; the index of names is brought up to date."""
        if server is None:
            self._prompt_servers = self._servers.connections_now()
        rows = await self._servers.gather(server, lambda c, s: c.list_prompts(s), "prompts")
        index = self._prompt_names
        listed = {name for name, _ in rows} | ({server} if server is not None else set())
        for key in list(index):  # what these servers no longer list goes
            index[key] = [(s, p) for s, p in index[key] if s not in listed]
            if not index[key]:
                del index[key]
        for name, row in rows:
            entry = (name, str(row["prompt"]))
            index.setdefault(self.prompt_name(*entry), []).append(entry)
        return rows

    async def prompts(self, server: str | None, search: str | None) -> pd.DataFrame:
        import pandas as pd

        self._servers.check_open()
        rows = await self.prompt_rows(server)
        needle = search.lower() if isinstance(search, str) and search else None
        data = []
        for name, row in rows:
            full = self.prompt_name(name, str(row["prompt"]))
            if needle and not any(needle in str(v or "").lower()
                                  for v in (full, row.get("title"), row.get("description"))):
                continue
            data.append({"name": full, "server": name, "prompt": row["prompt"],
                         "title": row.get("title"), "description": row.get("description"),
                         "arguments": row.get("arguments") or []})
        return pd.DataFrame(data, columns=list(PROMPT_COLUMNS), dtype=object)

    async def resolve_prompt(self, name: object) -> tuple[str, str, str]:
        """``(prefixed name, server, prompt)``; names not seen yet are listed once more."""
        if not isinstance(name, str):
            raise TypeError(f"a prompt name is a str, not {type(name).__name__} {name!r}")
        index = self._prompt_names
        if name not in index or self._prompt_servers != self._servers.connections_now():
            await self.prompt_rows(None)  # unseen, or servers came and went since
        found = index.get(name, [])
        if not found:
            raise Unreachable(f"no connected server offers a prompt named {name!r}"
                              f"{did_you_mean(name, index)}")
        if len(found) > 1:
            raise ValueError(f"prompt name {name!r} is offered by {sorted(s for s, _ in found)}"
                             "; give the servers namespaces so their names differ")
        server, prompt = found[0]
        return name, server, prompt
