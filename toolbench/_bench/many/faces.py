"""The batches' faces on ``Bench``: ``compare`` and ``map`` of tools, prompts and reads.

``ManyFaces`` holds no state: each public method keeps its signature and docstring here and
hands off to ``Batches`` (``many_calls.py``) or ``FetchBatches`` (``fetch_many.py``) in one
step. It may import ``toolbench._bench.many``, ``_core`` and ``_loop``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolbench._core.ids import Provenance
from toolbench._loop import get_loop

if TYPE_CHECKING:
    import pandas as pd
    from distributed import Client as DaskClient

    from toolbench._bench.many.fetch_many import FetchBatches
    from toolbench._bench.many.many_calls import Batches


class ManyFaces:
    """Many calls, reads or fetches at once, failures as rows; a face over ``Batches``."""

    if TYPE_CHECKING:  # what BaseBench builds (toolbench._bench.bench)
        batches: Batches
        fetch_batches: FetchBatches

    def compare(self, name: str, cases: Mapping[str, Any] | Sequence[Any] | None = None,
                /, servers: Iterable[str] | None = None, *, concurrency: int = 4,
                timeout: float | None = None, progress: bool | None = None,
                provenance: Provenance | Mapping[str, Any] | None = None,
                retries: int = 0, max_retry_wait: float = 60.0, rate: str | None = None,
                **kwargs: Any) -> pd.DataFrame:
        """Run the same tool name on every server that offers it; failures are rows.

        Args:
            name: a tool's own name (``distance``) or any pegboard name for it.
            cases: one argument mapping, or a list of them; or pass keywords.
            servers: only these servers (default: every server offering the tool).
            concurrency: calls in flight per server (a positive integer).
            timeout: seconds per call (default: each server's, else the bench's).
            progress: a progress bar (``None``: only in a notebook).
            provenance: fields recorded with every call.
            retries: tries again each call that did not happen (as for ``call``).
            max_retry_wait: the longest wait before a retry, in seconds.
            rate: ``"10/s"``, ``"600/min"``: each server's calls of this compare at most
                so often (its record's ``queued_ms`` is the wait), besides any rate the
                server was connected with.
            **kwargs: one case's arguments, as keywords (not together with ``cases``).

        Returns:
            A compare frame: one row per (case, server), records' columns plus ``case``;
            ``df.tb.answers()`` and ``df.tb.summary()`` read it.

        Raises:
            Unreachable: no connected server offers the tool (with close names).
            ValueError: ``servers`` names an unknown server.

        Example:
            >>> bench.compare("distance", from_city="London", to_city="Paris")  # doctest: +SKIP
        """
        return get_loop().run(self.batches.compare, name, cases, servers, concurrency=concurrency,
                              timeout=timeout, progress=progress, provenance=provenance,
                              retries=retries, max_retry_wait=max_retry_wait, rate=rate,
                              **kwargs)

    async def acompare(self, name: str,
                       cases: Mapping[str, Any] | Sequence[Any] | None = None, /,
                       servers: Iterable[str] | None = None, *, concurrency: int = 4,
                       timeout: float | None = None, progress: bool | None = None,
                       provenance: Provenance | Mapping[str, Any] | None = None,
                       retries: int = 0, max_retry_wait: float = 60.0,
                       rate: str | None = None, **kwargs: Any) -> pd.DataFrame:
        """Awaitable :meth:`compare`: the same arguments, result and errors."""
        return await get_loop().arun(self.batches.compare, name, cases, servers,
                                     concurrency=concurrency, timeout=timeout, progress=progress,
                                     provenance=provenance, retries=retries,
                                     max_retry_wait=max_retry_wait, rate=rate, **kwargs)

    def map(self, name: str, cases: Iterable[Mapping[str, Any]], /, *,
            concurrency: int = 8, progress: bool = True, resume: bool = False,
            retry_in_doubt: bool = False, timeout: float | None = None,
            provenance: Provenance | Mapping[str, Any] | None = None,
            cluster: DaskClient | None = None, retries: int = 0,
            max_retry_wait: float = 60.0, rate: str | None = None,
            share_credentials: bool = False) -> pd.DataFrame:
        """Call one tool once per argument set, ``concurrency`` at a time; failures are rows.

        Failures are rows, never raised. With ``resume=True`` an argument set that already
        succeeded for this tool (in memory or in the journal) is not called again, and
        neither is one whose call is in doubt (it may have run: interrupted, timed out, or
        in flight when a process died); the earlier record stands in the result instead.
        ``retry_in_doubt=True`` calls the in-doubt ones again. A failure that did not
        happen, or a tool error, is always called again on resume.

        ``cluster=client`` (a ``dask.distributed.Client``, from the ``dask`` extra) runs the
        calls on the cluster's workers, each with its own connection to the server, rebuilt
        from what ``connect``/``load_config`` was given (a stdio command or an http(s) URL;
        an in-process server or a ToolBox cannot travel: ``ValueError``). ``concurrency``
        then applies per worker, so up to ``concurrency`` x workers calls are in flight.
        Records, journal, ``resume`` and the progress bar work as on one machine; a worker
        lost mid-job leaves only the calls it may have sent ``in_doubt`` (see
        ``toolbench._bench.many.cluster``). A streamable HTTP or SSE server is reached at its
        URL with the same headers; a signed-in one only with ``share_credentials=True``, which
        sends the workers its access token (never the refresh token): a call the server turns
        away with a 401 is ``Unreachable`` (nothing ran), and is sent once more after this
        bench's sign-in renewed the token.

        Args:
            name: the pegboard name or ``tool://`` reference of the tool.
            cases: the argument sets, one mapping each.
            concurrency: calls in flight at once (per worker on a cluster).
            progress: a progress bar (on by default).
            resume: skip argument sets that already succeeded or are in doubt.
            retry_in_doubt: with ``resume``, call the in-doubt ones again.
            timeout: seconds per call (default: each server's, else the bench's).
            provenance: fields recorded with every call.
            cluster: a ``dask.distributed.Client`` to run the calls on its workers.
            retries: tries again each call that did not happen (as for ``call``): a 429
                or 503 costs a wait, not a row. Each attempt is a record of its own; the
                row returned is the last attempt's (``attempts`` counts them).
            max_retry_wait: the longest wait before a retry, in seconds.
            rate: ``"10/s"``, ``"600/min"``: at most this many calls of this map (its
                record's ``queued_ms`` is the wait), besides the server's own ``rate``.
            share_credentials: with ``cluster``, send a signed-in server's access token to
                the workers (without it such a server is a ``ValueError``).

        Returns:
            A records frame, one row per argument set, in the order given.

        Raises:
            Unreachable: no such tool.
            ValueError: the server cannot travel to a cluster, or a bad ``concurrency``.

        Example:
            >>> bench.map("geo-distance", [{"from_city": "London", "to_city": c}
            ...                            for c in ("Paris", "Rome")])  # doctest: +SKIP
        """
        return get_loop().run(self.batches.map, name, cases, concurrency=concurrency,
                              progress=progress, resume=resume, retry_in_doubt=retry_in_doubt,
                              timeout=timeout, provenance=provenance, cluster=cluster,
                              retries=retries, max_retry_wait=max_retry_wait, rate=rate,
                              share_credentials=share_credentials)

    async def amap(self, name: str, cases: Iterable[Mapping[str, Any]], /, *,
                   concurrency: int = 8, progress: bool = True, resume: bool = False,
                   retry_in_doubt: bool = False, timeout: float | None = None,
                   provenance: Provenance | Mapping[str, Any] | None = None,
                   cluster: DaskClient | None = None, retries: int = 0,
                   max_retry_wait: float = 60.0, rate: str | None = None,
                   share_credentials: bool = False) -> pd.DataFrame:
        """Awaitable :meth:`map`: the same arguments, result and errors."""
        return await get_loop().arun(self.batches.map, name, cases, concurrency=concurrency,
                                     progress=progress, resume=resume,
                                     retry_in_doubt=retry_in_doubt, timeout=timeout,
                                     provenance=provenance, cluster=cluster, retries=retries,
                                     max_retry_wait=max_retry_wait, rate=rate,
                                     share_credentials=share_credentials)

    def compare_prompt(self, name: str,
                       cases: Mapping[str, str] | Sequence[Mapping[str, str]] | None = None,
                       /, servers: Iterable[str] | None = None, *, concurrency: int = 4,
                       timeout: float | None = None, progress: bool | None = None,
                       provenance: Provenance | Mapping[str, Any] | None = None,
                       **kwargs: str) -> pd.DataFrame:
        """Fetch the same-named prompt from every server that offers it; failures are rows.

        Args:
            name: a prompt's own name (``plan_trip``) or any prefixed name for it.
            cases: one argument mapping (strings), or a list of them; or pass keywords.
            servers: only these servers (default: every server offering the prompt).
            concurrency: fetches in flight per server.
            timeout: seconds per fetch (default: the server's, else the bench's).
            progress: a progress bar (``None``: only for long work).
            provenance: fields recorded with every fetch.
            **kwargs: one case's arguments, as keywords.

        Returns:
            A compare frame, as ``compare`` returns (``text`` is the transcript); each row
            joins ``records`` by ``call_id``.

        Raises:
            Unreachable: no connected server offers the prompt.
            ValueError: ``servers`` names an unknown server.
        """
        return get_loop().run(self.fetch_batches.compare_prompt, name, cases, servers,
                              concurrency=concurrency, timeout=timeout, progress=progress,
                              provenance=provenance, **kwargs)

    async def acompare_prompt(self, name: str,
                              cases: Mapping[str, str] | Sequence[Mapping[str, str]] | None
                              = None, /, servers: Iterable[str] | None = None, *,
                              concurrency: int = 4, timeout: float | None = None,
                              progress: bool | None = None,
                              provenance: Provenance | Mapping[str, Any] | None = None,
                              **kwargs: str) -> pd.DataFrame:
        """Awaitable :meth:`compare_prompt`: the same arguments, result and errors."""
        return await get_loop().arun(self.fetch_batches.compare_prompt, name, cases, servers,
                                     concurrency=concurrency, timeout=timeout, progress=progress,
                                     provenance=provenance, **kwargs)

    def map_prompt(self, name: str, cases: Iterable[Mapping[str, str]], /, *,
                   concurrency: int = 8, progress: bool = True, timeout: float | None = None,
                   provenance: Provenance | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Fetch one prompt once per argument set, ``concurrency`` at a time; failures are rows.

        There is no ``resume``: a prompt fetch is idempotent, so running it again is safe.

        Args:
            name: the prompt's prefixed name.
            cases: the argument sets, one mapping of strings each.
            concurrency: fetches in flight at once.
            progress: a progress bar (on by default).
            timeout: seconds per fetch (default: the server's, else the bench's).
            provenance: fields recorded with every fetch.

        Returns:
            A records frame (``kind="prompt"``), one row per argument set, in order.

        Raises:
            Unreachable: no such prompt.
        """
        return get_loop().run(self.fetch_batches.map_prompt, name, cases, concurrency=concurrency,
                              progress=progress, timeout=timeout, provenance=provenance)

    async def amap_prompt(self, name: str, cases: Iterable[Mapping[str, str]], /, *,
                          concurrency: int = 8, progress: bool = True,
                          timeout: float | None = None,
                          provenance: Provenance | Mapping[str, Any] | None = None,
                          ) -> pd.DataFrame:
        """Awaitable :meth:`map_prompt`: the same arguments, result and errors."""
        return await get_loop().arun(self.fetch_batches.map_prompt, name, cases,
                                     concurrency=concurrency, progress=progress, timeout=timeout,
                                     provenance=provenance)

    def compare_read(self, uris: str | Sequence[str], /, servers: Iterable[str] | None = None,
                     *, concurrency: int = 4, timeout: float | None = None,
                     progress: bool | None = None,
                     provenance: Provenance | Mapping[str, Any] | None = None,
                     ) -> pd.DataFrame:
        """Read the same URI(s) on every MCP server (or ``servers``); failures are rows.

        Two copies of a server, or two versions, should answer a URI alike; a server that
        does not have it gives a ``Refused`` row. A server whose capabilities offer no
        resources at all gives no row, unless ``servers`` names it.

        Args:
            uris: one URI, or a list of them (each one case, numbered from 0).
            servers: only these servers (default: every connected MCP server).
            concurrency: reads in flight per server.
            timeout: seconds per read (default: the server's, else the bench's).
            progress: a progress bar (``None``: only for long work).
            provenance: fields recorded with every read.

        Returns:
            A compare frame (``text`` holds each read's text), rows joining ``records``.

        Raises:
            Unreachable: no connected server offers resources.
            ValueError: ``servers`` names an unknown server, or a URI is not a str.
        """
        return get_loop().run(self.fetch_batches.compare_read, uris, servers,
                              concurrency=concurrency, timeout=timeout, progress=progress,
                              provenance=provenance)

    async def acompare_read(self, uris: str | Sequence[str], /,
                            servers: Iterable[str] | None = None, *, concurrency: int = 4,
                            timeout: float | None = None, progress: bool | None = None,
                            provenance: Provenance | Mapping[str, Any] | None = None,
                            ) -> pd.DataFrame:
        """Awaitable :meth:`compare_read`: the same arguments, result and errors."""
        return await get_loop().arun(self.fetch_batches.compare_read, uris, servers,
                                     concurrency=concurrency, timeout=timeout, progress=progress,
                                     provenance=provenance)

    def map_read(self, server: str, uris: Sequence[str], /, *, concurrency: int = 8,
                 progress: bool = True, timeout: float | None = None,
                 provenance: Provenance | Mapping[str, Any] | None = None) -> pd.DataFrame:
        """Read many URIs of one server, ``concurrency`` at a time; failures are rows.

        There is no ``resume``: a read is idempotent, so reading again is safe.

        Args:
            server: the server's name.
            uris: the URIs (a template's, filled in, work too).
            concurrency: reads in flight at once.
            progress: a progress bar (on by default).
            timeout: seconds per read (default: the server's, else the bench's).
            provenance: fields recorded with every read.

        Returns:
            A records frame (``kind="resource"``), one row per URI, in order.

        Raises:
            Unreachable: no such server.
            Refused: the server offers no resources.
        """
        return get_loop().run(self.fetch_batches.map_read, server, uris, concurrency=concurrency,
                              progress=progress, timeout=timeout, provenance=provenance)

    async def amap_read(self, server: str, uris: Sequence[str], /, *, concurrency: int = 8,
                        progress: bool = True, timeout: float | None = None,
                        provenance: Provenance | Mapping[str, Any] | None = None,
                        ) -> pd.DataFrame:
        """Awaitable :meth:`map_read`: the same arguments, result and errors."""
        return await get_loop().arun(self.fetch_batches.map_read, server, uris,
                                     concurrency=concurrency, progress=progress, timeout=timeout,
                                     provenance=provenance)
