"""The loopback listener: catches a sign-in's redirect when the browser runs on this machine.

An OAuth sign-in ends with the authorization server sending the browser to the client's
redirect URI, ``http://127.0.0.1:<port>/callback`` by default, with ``code``, ``state`` and
``iss`` in the query. While one flow runs (and only then) :class:`Loopback` listens there, on
the shared loop, and hands back the full URL the browser asked for. It is a deliberately small
HTTP/1.x reader, not a web server:

- only ``GET`` on the redirect path; another path is 404, another method 405;
- a request line and headers of at most :data:`MAX_REQUEST_BYTES` (431 past that), read
  within :data:`READ_TIMEOUT_S` (a slow or silent client is dropped), at most
  :data:`MAX_CONNECTIONS` at once; a body is never read;
- the first redirect that carries a ``code`` or an ``error`` wins; the browser gets a short
  escaped page saying the tab can be closed; later hits get "already received";
- nothing here logs or shows the query (the code): logs name the path only.

The check that the URL belongs to this flow (``state``, ``iss``) is the flow's, as for a
pasted address (:func:`toolbench._transports.auth.callback.check_callback`).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

logger = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 16_384
"""Request line plus headers; a browser's redirect is a few hundred bytes."""
READ_TIMEOUT_S = 10.0
"""How long one connection may take to send its request."""
MAX_CONNECTIONS = 16
"""Connections served at once; more are closed at once."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

_PAGE = ("<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
         "<body style='font-family:sans-serif;margin:3em'><h2>{title}</h2><p>{text}</p>"
         "</body></html>")


class LoopbackError(ValueError):
    """The redirect URI is not one a loopback listener can serve, or its port is taken."""


def page(title: str, text: str) -> bytes:
    """A small HTML page, everything in it escaped."""
    return _PAGE.format(title=html.escape(title), text=html.escape(text)).encode()


def loopback_address(redirect_uri: str) -> tuple[str, int, str]:
    """``(host, port, path)`` of a loopback redirect URI, or :class:`LoopbackError` naming the
    rule: ``http``, a loopback host, an explicit port (0 picks a free one)."""
    try:
        parts = urlsplit(redirect_uri)
        port = parts.port
    except ValueError as exc:
        raise LoopbackError(f"redirect URI {redirect_uri[:200]!r} is not a URL: {exc}") from exc
    host = (parts.hostname or "").lower()
    if parts.scheme != "http" or host not in LOOPBACK_HOSTS:
        raise LoopbackError(f"redirect URI {redirect_uri[:200]!r} is not a loopback address "
                            "(http://127.0.0.1:<port>/<path>); nothing can listen for it here")
    if port is None:
        raise LoopbackError(f"redirect URI {redirect_uri[:200]!r} names no port")
    return ("127.0.0.1" if host == "localhost" else host), port, parts.path or "/"


class Loopback:
    """Listens on a loopback redirect URI while a sign-in runs (``async with``).

    ``await listener.received()`` returns the full URL of the first redirect that carries a
    ``code`` or an ``error``. ``redirect_uri`` is the address actually listened on (the
    given one, or with the free port filled in when the given port is 0).
    """

    def __init__(self, redirect_uri: str, *, read_timeout: float = READ_TIMEOUT_S,
                 max_request: int = MAX_REQUEST_BYTES) -> None:
        self.host, self.port, self.path = loopback_address(redirect_uri)
        self._given = redirect_uri
        self.redirect_uri = redirect_uri
        self.read_timeout = read_timeout
        self.max_request = max_request
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[str] | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.refused = 0  # requests answered with an error (tests read it)

    async def __aenter__(self) -> Loopback:
        self._result = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(
                self._accept, self.host, self.port, limit=self.max_request,
                reuse_address=True)
        except OSError as exc:
            raise LoopbackError(f"cannot listen on {self.host}:{self.port} for the sign-in's "
                                f"redirect ({exc.strerror or exc}); paste the address instead"
                                ) from exc
        if self.port == 0:
            self.port = int(self._server.sockets[0].getsockname()[1])
            parts = urlsplit(self._given)
            shown = f"[{self.host}]" if ":" in self.host else self.host
            self.redirect_uri = parts._replace(netloc=f"{shown}:{self.port}").geturl()
        logger.debug("loopback listener on %s:%s%s", self.host, self.port, self.path)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop listening and drop open connections; safe to call twice."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.wait(list(self._handlers), timeout=2)
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)
        if self._result is not None and not self._result.done():
            self._result.cancel()

    @property
    def listening(self) -> bool:
        return self._server is not None

    async def received(self) -> str:
        """The full URL of the first redirect with a ``code`` or an ``error``."""
        if self._result is None:
            raise RuntimeError("the loopback listener is not running (use `async with`)")
        return await asyncio.shield(self._result)

    # -- one connection ---------------------------------------------------------------------
    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._handlers) >= MAX_CONNECTIONS:
            writer.close()
            return
        task = asyncio.get_running_loop().create_task(self._serve(reader, writer))
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                async with asyncio.timeout(self.read_timeout):
                    head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.LimitOverrunError, ValueError):
                await self._reply(writer, 431, "Request too large",
                                  "This request is larger than a sign-in redirect can be.")
                return
            except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                return  # a slow, silent or vanished client: drop it
            status, title, text = self._answer(head)
            await self._reply(writer, status, title, text)
        except (ConnectionError, TimeoutError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1):
                    await writer.wait_closed()

    def _answer(self, head: bytes) -> tuple[int, str, str]:
        """The status and page for one request, recording the URL when it is the redirect."""
        try:
            method, target, version = head.split(b"\r\n", 1)[0].decode("ascii").split(" ")
        except (UnicodeDecodeError, ValueError):
            return 400, "Bad request", "This is not an HTTP request toolbench understands."
        if not version.startswith("HTTP/1."):
            return 400, "Bad request", "Only HTTP/1.x is spoken here."
        path, _, query = target.partition("?")
        if method != "GET":
            logger.debug("loopback listener refused %s %s", method[:10], path[:100])
            return 405, "Method not allowed", "Only the browser's redirect (GET) is taken here."
        if path != self.path:
            logger.debug("loopback listener: no such path %s", path[:100])
            return 404, "Not found", "toolbench waits for a sign-in redirect on another path."
        fields = parse_qs(query, keep_blank_values=True)
        if "code" not in fields and "error" not in fields:
            return 400, "Not a sign-in redirect", ("This address carries no authorization code "
                                                   "or error.")
        result = self._result
        if result is None or result.done():
            return 200, "Already received", ("toolbench already has the answer of this sign-in; "
                                             "you can close this tab.")
        shown = f"[{self.host}]" if ":" in self.host else self.host
        result.set_result(f"http://{shown}:{self.port}{target}")
        logger.debug("loopback listener received the redirect on %s", path[:100])
        if "error" in fields:
            return 200, "Sign-in not completed", ("The authorization server answered with an "
                                                  "error; toolbench shows it in your notebook "
                                                  "or terminal. You can close this tab.")
        return 200, "Signed in", ("toolbench received your sign-in. You can close this tab "
                                  "and go back to your notebook or terminal.")

    async def _reply(self, writer: asyncio.StreamWriter, status: int, title: str,
                     text: str) -> None:
        if status >= 400:
            self.refused += 1
        body = page(title, text)
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                  431: "Request Header Fields Too Large"}[status]
        extra = "Allow: GET\r\n" if status == 405 else ""
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\n"
            f"Referrer-Policy: no-referrer\r\nX-Content-Type-Options: nosniff\r\n"
            f"Content-Security-Policy: default-src 'none'\r\n{extra}Connection: close\r\n\r\n"
            .encode() + body)
        async with asyncio.timeout(self.read_timeout):
            await writer.drain()
