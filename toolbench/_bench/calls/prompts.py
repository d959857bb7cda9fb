"""The bench's prompts: listed, named like tools, fetched and recorded.

**Prompt names** are prefixed like tools (``beyond-welcome``): the server's tool namespace
and the pegboard's separator, so one server's names share one prefix. Prompts are listed
when asked for (``prompts()``, or a name not seen yet), not at connect: a connect costs one
listing, of tools.

A prompt fetch is recorded like a read (``Resources._fetch``), with ``kind`` ``prompt``:
``tool`` is the server's own prompt name, ``name`` the prefixed one, ``text`` the transcript
and ``content`` the messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolbench._bench.calls.resources import Resources
from toolbench._bench.journal.record import Record
from toolbench._core.checks import seconds
from toolbench._core.contents import PromptResult
from toolbench._core.errors import Refused, ToolError, Unreachable
from toolbench._core.ids import Provenance, did_you_mean
from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd

PROMPT_COLUMNS = ("name", "server", "prompt", "title", "description", "arguments")


class Prompts(Resources):
    """Prompts of the bench's servers; mixed into ``BaseBench`` (through
    ``ResourcesAndPrompts``)."""

    def _prompt_name(self, server: str, prompt: str) -> str:
        namespace = self.pegboard.namespace_of(server)
        namespace = server if namespace is None else namespace
        return f"{namespace}{self.pegboard.separator}{prompt}" if namespace else prompt

    def _prompt_index(self) -> dict[str, list[tuple[str, str]]]:
        index: dict[str, list[tuple[str, str]]] | None = getattr(self, "_prompt_names", None)
        if index is None:
            index = {}
            self._prompt_names = index
        return index

    def _servers_now(self) -> frozenset[tuple[str, int]]:
        """Which connections the prompt index would have to know (a change means re-list)."""
        return frozenset((name, id(self._rows[name].connection))
                         for name, _ in self._candidates(None))

    async def _prompt_rows(self, server: str | None) -> list[tuple[str, dict[str, Any]]]:
        """Every prompt listed now, named; the index of names is brought up to date."""
        if server is None:
            self._prompt_servers = self._servers_now()
        rows = await self._gather(server, lambda c, s: c.list_prompts(s), "prompts")
        index = self._prompt_index()
        listed = {name for name, _ in rows} | ({server} if server is not None else set())
        for key in list(index):  # what these servers no longer list goes
            index[key] = [(s, p) for s, p in index[key] if s not in listed]
            if not index[key]:
                del index[key]
        for name, row in rows:
            entry = (name, str(row["prompt"]))
            index.setdefault(self._prompt_name(*entry), []).append(entry)
        return rows

    async def _prompts(self, server: str | None, search: str | None) -> pd.DataFrame:
        import pandas as pd

        self._check_open()
        rows = await self._prompt_rows(server)
        needle = search.lower() if isinstance(search, str) and search else None
        data = []
        for name, row in rows:
            full = self._prompt_name(name, str(row["prompt"]))
            if needle and not any(needle in str(v or "").lower()
                                  for v in (full, row.get("title"), row.get("description"))):
                continue
            data.append({"name": full, "server": name, "prompt": row["prompt"],
                         "title": row.get("title"), "description": row.get("description"),
                         "arguments": row.get("arguments") or []})
        return pd.DataFrame(data, columns=list(PROMPT_COLUMNS), dtype=object)

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
        return get_loop().run(self._prompts, server, search)

    async def aprompts(self, server: str | None = None,
                       search: str | None = None) -> pd.DataFrame:
        """Awaitable :meth:`prompts`: the same arguments, result and errors."""
        return await get_loop().arun(self._prompts, server, search)


    async def _resolve_prompt(self, name: object) -> tuple[str, str, str]:
        """``(prefixed name, server, prompt)``; names not seen yet are listed once more."""
        if not isinstance(name, str):
            raise TypeError(f"a prompt name is a str, not {type(name).__name__} {name!r}")
        index = self._prompt_index()
        if name not in index or getattr(self, "_prompt_servers", None) != self._servers_now():
            await self._prompt_rows(None)  # unseen, or servers came and went since
        found = index.get(name, [])
        if not found:
            raise Unreachable(f"no connected server offers a prompt named {name!r}"
                              f"{did_you_mean(name, index)}")
        if len(found) > 1:
            raise ValueError(f"prompt name {name!r} is offered by {sorted(s for s, _ in found)}"
                             "; give the servers namespaces so their names differ")
        server, prompt = found[0]
        return name, server, prompt

    async def _prompt_one(self, name: str, server: str, prompt: str, arguments: Any, *,
                          batch: str | None, timeout: float | None, provenance: Provenance,
                          ) -> tuple[Record, PromptResult | None, ToolError | None]:
        recorded = (dict(arguments) if isinstance(arguments, Mapping)
                    else {"_invalid": arguments})

        async def run(limit: float) -> PromptResult:
            if not isinstance(arguments, Mapping):
                raise Refused(f"prompt arguments are a mapping of str to str, not "
                              f"{type(arguments).__name__}; nothing was sent")
            client = self._resource_client(server)
            got: PromptResult = await client.get_prompt(server, prompt, arguments,
                                                        timeout=limit, provenance=provenance)
            got.name = name
            return got

        return await self._fetch("prompt", server, prompt, name, recorded, run, _prompt_shown,
                                 batch=batch, timeout=timeout, provenance=provenance)

    async def _prompt(self, name: str, arguments: Mapping[str, str] | None = None, /, *,
                      timeout: float | None = None,
                      provenance: Provenance | Mapping[str, Any] | None = None,
                      **kwargs: str) -> PromptResult:
        self._check_open()
        if arguments is not None and kwargs:
            raise TypeError("pass arguments as one mapping or as keywords, not both")
        if timeout is not None:
            seconds(timeout, "timeout")
        full, server, prompt = await self._resolve_prompt(name)
        _, answer, error = await self._prompt_one(
            full, server, prompt, kwargs if arguments is None else arguments, batch=None,
            timeout=timeout, provenance=self._provenance(provenance))
        if error is not None:
            raise error
        assert answer is not None
        return answer

    def prompt(self, name: str, arguments: Mapping[str, str] | None = None, /, *,
               timeout: float | None = None,
               provenance: Provenance | Mapping[str, Any] | None = None,
               **kwargs: str) -> PromptResult:
        """Fetch a prompt's messages by its prefixed name; recorded (``kind="prompt"``).

        Args:
            name: the prompt's name from ``prompts()`` (``beyond-plan_trip``).
            arguments: the prompt's arguments as one mapping of strings; or as keywords.
            timeout: seconds before the fetch fails as ``TimedOut`` (default: the server's,
                else the bench's).
            provenance: fields recorded with the fetch.
            **kwargs: the prompt's arguments, as keywords (strings: MCP's rule).

        Returns:
            A ``PromptResult``: ``.messages`` (role and content block each) and ``.text``;
            in a notebook, a transcript with every string escaped.

        Raises:
            Unreachable: no server offers a prompt of that name (with close names).
            Refused: a non-string argument (nothing sent), or the server refused.
            ValueError: two servers' prompts share the name (give them namespaces).
            TimedOut: sent, with no answer in time (fetching again is safe).

        Example:
            >>> bench.prompt("beyond-plan_trip", from_city="Paris",    # doctest: +SKIP
            ...              to_city="Lima")
        """
        return get_loop().run(self._prompt, name, arguments, timeout=timeout,
                              provenance=provenance, **kwargs)

    async def aprompt(self, name: str, arguments: Mapping[str, str] | None = None, /, *,
                      timeout: float | None = None,
                      provenance: Provenance | Mapping[str, Any] | None = None,
                      **kwargs: str) -> PromptResult:
        """Awaitable :meth:`prompt`: the same arguments, result and errors."""
        return await get_loop().arun(self._prompt, name, arguments, timeout=timeout,
                                     provenance=provenance, **kwargs)



def _prompt_shown(answer: PromptResult) -> tuple[str | None, list[dict[str, Any]]]:
    return answer.text, list(answer.messages)
