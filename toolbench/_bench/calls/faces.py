"""The calls' faces on ``Bench``: ``call``, ``read`` and ``prompt``, blocking and awaitable.

``CallFaces`` holds no state: each public method keeps its signature and docstring here and
hands off to ``Calls`` (``calling.py``) or ``Fetches`` (``fetches.py``) in one step. It may
import ``toolbench._bench.calls``, ``toolbench._bench.progress``, ``_core`` and ``_loop``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolbench._bench.progress.progress import Progress
from toolbench._core.contents import PromptResult, ReadResult
from toolbench._core.ids import Provenance
from toolbench._loop import get_loop

if TYPE_CHECKING:
    from toolbench._bench.calls.calling import Calls
    from toolbench._bench.calls.fetches import Fetches
    from toolbench._core.client import Result


class CallFaces:
    """One call, read or prompt fetch, each leaving its record; a face over ``Calls``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        calls: Calls
        fetches: Fetches

    def call(self, name: str, arguments: Mapping[str, Any] | None = None, /, *,
             timeout: float | None = None,
             provenance: Provenance | Mapping[str, Any] | None = None,
             progress: Progress = None, check: bool = True, retries: int = 0,
             max_retry_wait: float = 60.0, **kwargs: Any) -> Result:
        """Call one tool by pegboard name or ``tool://`` reference.

        Args:
            name: the pegboard name (``geo-distance``) or a ``tool://server/tool`` reference.
            arguments: the tool's arguments as one mapping; or pass them as keywords.
            timeout: seconds before the call fails as ``TimedOut`` (default: the server's
                ``connect(..., timeout=)``, else the bench's).
            provenance: fields recorded with the call (a ``Provenance`` or a mapping).
            progress: the server's progress updates: ``None`` shows a bar in a notebook
                (made on the first update), ``False`` none, a function is called with
                ``(progress, total, message)`` on toolbench's loop (keep it quick). Every
                update also lands in ``bench.logs``. Like ``timeout`` and ``provenance``,
                it is never sent as a tool argument.
            check: ``False`` sends arguments that fail the tool's ``inputSchema`` anyway, to
                probe the server's own validation (a ``null`` for a boolean, a missing
                required field). Serialisation rules still apply (NaN, lone surrogates,
                non-JSON values are refused). The record's ``provenance`` says so:
                ``"check": False``, and ``"schema_error"`` with the local refusal, if any.
                A tool parameter named ``check`` goes in the ``arguments`` mapping.
            retries: how many times to try again a call that did not happen because the
                server was busy or away (``Unreachable``: an HTTP 429 or 503, a refused
                connection): never one that may have run. Each waits the server's
                ``Retry-After`` (at most ``max_retry_wait`` seconds), else a jittered
                backoff from 0.5 s, all within ``timeout``. Every attempt is a record.
            max_retry_wait: the longest wait before a retry, in seconds.
            **kwargs: the tool's arguments, as keywords (not together with ``arguments``).

        Returns:
            The tool's ``Result`` (text, data, content blocks, latency).

        Raises:
            ToolError: a subclass says what is known about the far side: ``Refused`` (bad
                arguments, checked locally), ``Unreachable`` (never sent), ``TimedOut``
                (may have run), ``ToolFailed`` (the tool reported an error), ``Malformed``
                (an answer that breaks the protocol). The record is written first.

        Example:
            >>> bench.call("geo-distance", from_city="London", to_city="Paris").data
            {'result': 343.557}
        """
        return get_loop().run(self.calls.call, name, arguments, timeout=timeout,
                              provenance=provenance, progress=progress, check=check,
                              retries=retries, max_retry_wait=max_retry_wait, **kwargs)

    async def acall(self, name: str, arguments: Mapping[str, Any] | None = None, /, *,
                    timeout: float | None = None,
                    provenance: Provenance | Mapping[str, Any] | None = None,
                    progress: Progress = None, check: bool = True, retries: int = 0,
                    max_retry_wait: float = 60.0, **kwargs: Any) -> Result:
        """Awaitable :meth:`call`: the same arguments, result and errors."""
        return await get_loop().arun(self.calls.call, name, arguments, timeout=timeout,
                                     provenance=provenance, progress=progress, check=check,
                                     retries=retries, max_retry_wait=max_retry_wait,
                                     **kwargs)

    def read(self, target: str | Mapping[str, Any], uri: str | None = None, /, *,
             server: str | None = None, timeout: float | None = None,
             provenance: Provenance | Mapping[str, Any] | None = None) -> ReadResult:
        """Read a resource: ``read(server, uri)``, or follow a link with ``read(block)``.

        The read is recorded (``kind="resource"``) and is idempotent: after a ``TimedOut``
        reading again is safe. A template's URI with its variables filled in reads too.

        Args:
            target: a server's name; or a ``resource_link`` / embedded ``resource`` block
                from a ``Result``'s ``content`` (a link is read from the server whose
                result holds it; an embedded resource is returned as it is, unread).
            uri: the resource's URI (with a server's name only).
            server: the server to read a link from, when the bench cannot tell.
            timeout: seconds before the read fails as ``TimedOut`` (default: the server's,
                else the bench's).
            provenance: fields recorded with the read.

        Returns:
            A ``ReadResult``: ``.text``, ``.data`` (JSON parsed), ``.blob()``; in a notebook,
            text escaped and capped, JSON pretty, an image inline, a blob by size and type.

        Raises:
            Refused: the server offers no resources, or refused the URI (unknown).
            Malformed: the contents exceed the server's ``max_message_bytes``.
            Unreachable: no such server, or not sent.
            TimedOut: sent, with no answer in time.

        Example:
            >>> bench.read("beyond", "beyond://cities.json").data      # doctest: +SKIP
        """
        return get_loop().run(self.fetches.read, target, uri, server=server, timeout=timeout,
                              provenance=provenance)

    async def aread(self, target: str | Mapping[str, Any], uri: str | None = None, /, *,
                    server: str | None = None, timeout: float | None = None,
                    provenance: Provenance | Mapping[str, Any] | None = None) -> ReadResult:
        """Awaitable :meth:`read`: the same arguments, result and errors."""
        return await get_loop().arun(self.fetches.read, target, uri, server=server,
                                     timeout=timeout, provenance=provenance)

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
        return get_loop().run(self.fetches.prompt, name, arguments, timeout=timeout,
                              provenance=provenance, **kwargs)

    async def aprompt(self, name: str, arguments: Mapping[str, str] | None = None, /, *,
                      timeout: float | None = None,
                      provenance: Provenance | Mapping[str, Any] | None = None,
                      **kwargs: str) -> PromptResult:
        """Awaitable :meth:`prompt`: the same arguments, result and errors."""
        return await get_loop().arun(self.fetches.prompt, name, arguments, timeout=timeout,
                                     provenance=provenance, **kwargs)
