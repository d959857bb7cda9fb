"""The doctor's walk for an HTTP server: name resolved, TCP, TLS, HTTP status, 401 and its
resource metadata, MCP answered (and in which era), tools listed.

Each step is its own bounded attempt, so the first one that fails is the one named: a
refused port is not reported as a timeout, a TLS handshake against a plain port is not
reported as a bad status. Secrets in the URL, headers and answers are hidden by the
recorder; headers are sent as configured (a 401 with them is the server's verdict on them).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from toolbench._bench.doctor.stdio import (
    DISCOVER_META,
    INITIALIZE,
    MODERN_ERRORS,
    MODERN_VERSION,
)
from toolbench._bench.doctor.steps import FAIL, OK, SKIP, WARN, Recorder, shown

_METADATA = re.compile(r'resource_metadata="([^"]+)"')
ACCEPT = "application/json, text/event-stream"


MAX_BODY = 1 << 20
"""The most of an answer the doctor reads: evidence needs its start, not all of it."""


@dataclass(frozen=True)
class Answer:
    """An HTTP answer as far as the doctor read it (at most ``MAX_BODY`` bytes)."""

    status_code: int
    reason_phrase: str
    headers: Any
    text: str


def _first_json(response: Answer) -> dict[str, Any] | None:
    """A reply body as JSON: plain, or the first ``data:`` event of an SSE body."""
    text = response.text
    if "text/event-stream" in response.headers.get("content-type", ""):
        for line in text.splitlines():
            if line.startswith("data:"):
                with contextlib.suppress(ValueError, RecursionError):
                    value = json.loads(line[5:].strip())
                    if isinstance(value, dict):
                        return value
        return None
    with contextlib.suppress(ValueError, RecursionError):
        value = json.loads(text)
        return value if isinstance(value, dict) else None
    return None


async def _request(client: Any, method: str, url: str, headers: Mapping[str, str],
                   timeout: float, content: bytes | None = None) -> Answer:
    """One request, its whole answer bounded: ``timeout`` for all of it (httpx bounds each
    read only, so a body sent a byte at a time never ends), ``MAX_BODY`` bytes at most, and
    an event stream read only as far as its first JSON event. A timeout is ``TimeoutError``."""
    async with asyncio.timeout(timeout), client.stream(
            method, url, content=content, headers=dict(headers)) as response:
        streamed = "text/event-stream" in response.headers.get("content-type", "")
        data = bytearray()
        async for chunk in response.aiter_bytes():
            data += chunk
            if len(data) >= MAX_BODY:
                break
            if streamed and b"data:" in data and _first_json(_answer(response, data)):
                break
        return _answer(response, data)


def _answer(response: Any, data: bytes | bytearray) -> Answer:
    return Answer(response.status_code, response.reason_phrase, response.headers,
                  bytes(data[:MAX_BODY]).decode("utf-8", "replace"))


async def walk_http(rec: Recorder, url: str, headers: Mapping[str, str] | None,
                    transport: str, timeout: float, signs_in: bool = False) -> None:
    """Add the HTTP steps to ``rec``; stops at the first failure. ``signs_in``: the server
    is configured with ``auth`` (the doctor itself does not sign in, so a 401 is expected)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    if not await _resolve(rec, host, port, timeout):
        return
    if not await _tcp(rec, host, port, timeout):
        return
    if secure and not await _tls(rec, host, port, timeout):
        return
    if not secure:
        rec.add("TLS", SKIP, "plain http: no TLS")
    if transport == "sse":
        await _sse(rec, url, headers, timeout)
        return
    await _mcp(rec, url, dict(headers or {}), timeout, signs_in)


async def _resolve(rec: Recorder, host: str, port: int, timeout: float) -> bool:
    with rec.timed() as elapsed:
        try:
            ipaddress.ip_address(host.strip("[]"))
            rec.add("name resolved", OK, f"{host} is an address", elapsed())
            return True
        except ValueError:
            pass
        try:
            found = await asyncio.wait_for(
                asyncio.get_running_loop().getaddrinfo(host, port), timeout)
        except TimeoutError:
            rec.add("name resolved", FAIL, f"no answer for {host!r} within {timeout:g} s",
                    elapsed())
            return False
        except OSError as exc:
            rec.add("name resolved", FAIL, f"{host!r} does not resolve: {exc}", elapsed())
            return False
        addresses = sorted({str(info[4][0]) for info in found})
        rec.add("name resolved", OK, f"{host} -> {', '.join(addresses[:4])}", elapsed())
        return True


async def _tcp(rec: Recorder, host: str, port: int, timeout: float) -> bool:
    with rec.timed() as elapsed:
        try:
            _reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port),
                                                     timeout)
        except TimeoutError:
            rec.add("TCP connect", FAIL, f"{host}:{port} did not answer within {timeout:g} s "
                    "(a firewall drops the packets, or the host is down)", elapsed())
            return False
        except OSError as exc:
            rec.add("TCP connect", FAIL, f"{host}:{port}: {exc.strerror or exc} (nothing "
                    "listens there: is the server running, on this port?)", elapsed())
            return False
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 1)
        rec.add("TCP connect", OK, f"{host}:{port} accepted", elapsed())
        return True


async def _tls(rec: Recorder, host: str, port: int, timeout: float) -> bool:
    with rec.timed() as elapsed:
        context = ssl.create_default_context()
        try:
            _reader, writer = await asyncio.wait_for(asyncio.open_connection(
                host, port, ssl=context, server_hostname=host), timeout)
        except TimeoutError:
            rec.add("TLS", FAIL, f"no TLS handshake within {timeout:g} s (is this port plain "
                    "HTTP? try http://)", elapsed())
            return False
        except ssl.SSLCertVerificationError as exc:
            rec.add("TLS", FAIL, f"the certificate was refused: {exc.verify_message}",
                    elapsed())
            return False
        except (ssl.SSLError, OSError) as exc:
            hint = (" (this port speaks plain HTTP: use http://)"
                    if "WRONG_VERSION_NUMBER" in str(exc).upper()
                    or "wrong version number" in str(exc) else "")
            rec.add("TLS", FAIL, f"handshake failed: {exc}{hint}", elapsed())
            return False
        tls = writer.get_extra_info("ssl_object")
        version = tls.version() if tls is not None else "?"
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 1)
        rec.add("TLS", OK, f"{version}, certificate valid for {host}", elapsed())
        return True


async def _post(client: Any, url: str, headers: dict[str, str], body: dict[str, Any],
                timeout: float) -> Answer:
    return await _request(client, "POST", url, {
        **headers, "Accept": ACCEPT, "Content-Type": "application/json",
        "Mcp-Method": str(body.get("method"))}, timeout, json.dumps(body).encode())


async def _mcp(rec: Recorder, url: str, headers: dict[str, str], timeout: float,
               signs_in: bool) -> None:
    import httpx2

    async with httpx2.AsyncClient(timeout=timeout, follow_redirects=False) as client:
        with rec.timed() as elapsed:
            try:
                response = await _post(client, url, headers, {
                    "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
                    timeout)
            except (httpx2.TimeoutException, TimeoutError):
                rec.add("HTTP status", FAIL, f"no HTTP answer within {timeout:g} s", elapsed())
                return
            except httpx2.HTTPError as exc:
                rec.add("HTTP status", FAIL, f"{type(exc).__name__}: {exc}", elapsed())
                return
            status = response.status_code
            kind = response.headers.get("content-type", "?")
            took = elapsed()
        if status == 401 or status == 403:
            rec.add("HTTP status", OK, f"{status} {response.reason_phrase} ({kind})", took)
            await _auth(rec, client, response, signs_in, timeout)
            return
        if 300 <= status < 400:
            rec.add("HTTP status", FAIL, f"{status} {response.reason_phrase}: redirects to "
                    f"{shown(response.headers.get('location'), 200)} (use that URL)", took)
            return
        reply = _first_json(response)
        error = reply.get("error") if reply is not None else None
        modern = isinstance(error, dict) and error.get("code") in MODERN_ERRORS
        if status >= 400 and not modern:
            hint = (" (nothing at this path: MCP servers usually answer at /mcp)"
                    if status == 404 else "")
            rec.add("HTTP status", FAIL, f"{status} {response.reason_phrase}{hint}; body "
                    f"{shown(response.text[:300], 200)}", took)
            return
        rec.add("HTTP status", OK, f"{status} {response.reason_phrase} ({kind})", took)
        rec.add("authorization", SKIP, "not asked for")
        if modern:
            headers = {**headers, "MCP-Protocol-Version": MODERN_VERSION}
            with rec.timed() as elapsed:
                try:
                    found = _first_json(await _post(client, url, headers, {
                        "jsonrpc": "2.0", "id": 2, "method": "server/discover",
                        "params": DISCOVER_META}, timeout))
                except (httpx2.HTTPError, TimeoutError) as exc:
                    rec.add("MCP answered", FAIL, f"2026 era: server/discover -> "
                            f"{_failure(exc, timeout)}", elapsed())
                    return
                ok = found is not None and isinstance(found.get("result"), dict)
                rec.add("MCP answered", OK if ok else FAIL,
                        f"2026 era: server/discover -> {shown(found, 200)}", elapsed())
            if ok:
                await _tools(rec, client, url, headers, DISCOVER_META, timeout)
            return
        result = reply.get("result") if reply is not None else None
        if not isinstance(result, dict):
            rec.add("MCP answered", FAIL, f"not an MCP reply: {shown(response.text[:300])}",
                    took)
            return
        info = result.get("serverInfo") or {}
        rec.add("MCP answered", OK, f"handshake era, protocol "
                f"{shown(result.get('protocolVersion'), 40)}; server "
                f"{shown(info.get('name'), 60)} {shown(info.get('version'), 30)}", took)
        session = response.headers.get("mcp-session-id")
        if session:
            headers = {**headers, "Mcp-Session-Id": session,
                       "MCP-Protocol-Version": str(result.get("protocolVersion"))}
        with contextlib.suppress(httpx2.HTTPError, TimeoutError):
            await _post(client, url, headers, {"jsonrpc": "2.0",
                                               "method": "notifications/initialized"}, timeout)
        await _tools(rec, client, url, headers, None, timeout)


def _failure(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no whole answer within {timeout:g} s"
    return f"{type(exc).__name__}: {exc}"


async def _tools(rec: Recorder, client: Any, url: str, headers: dict[str, str],
                 params: Mapping[str, Any] | None, timeout: float) -> None:
    import httpx2

    with rec.timed() as elapsed:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
        if params is not None:
            body["params"] = dict(params)
        try:
            reply = _first_json(await _post(client, url, headers, body, timeout))
        except (httpx2.HTTPError, TimeoutError) as exc:
            rec.add("tools listed", FAIL, _failure(exc, timeout), elapsed())
            return
        result = reply.get("result") if reply is not None else None
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            rec.add("tools listed", FAIL, f"tools/list: {shown(reply, 200)}", elapsed())
            return
        names = [str(t.get("name")) for t in result["tools"][:5] if isinstance(t, dict)]
        rec.add("tools listed", OK, f"{len(result['tools'])} tool(s): {', '.join(names)}",
                elapsed())


async def _auth(rec: Recorder, client: Any, response: Answer, signs_in: bool,
                timeout: float) -> None:
    """A 401: what the server says about signing in (RFC 9728's resource metadata). With
    ``auth`` configured it is the expected answer: the step warns, and the walk ends there
    (the doctor does not sign in)."""
    import httpx2

    challenge = response.headers.get("www-authenticate", "")
    found = _METADATA.search(challenge)
    with rec.timed() as elapsed:
        if found is None:
            rec.add("authorization", FAIL, f"{response.status_code}: the server wants "
                    f"credentials (WWW-Authenticate: {shown(challenge, 200)}); give headers "
                    "or auth='oauth'", elapsed())
            return
        where = found.group(1)
        try:
            meta = json.loads((await _request(client, "GET", where, {
                "Accept": "application/json"}, timeout)).text)
        except (httpx2.HTTPError, ValueError, RecursionError, TimeoutError) as exc:
            rec.add("authorization", FAIL, f"{response.status_code}: sign-in needed; its "
                    f"resource metadata {where} could not be read: "
                    f"{_failure(exc, timeout)}", elapsed())
            return
        servers = meta.get("authorization_servers") if isinstance(meta, dict) else None
        scopes = meta.get("scopes_supported") if isinstance(meta, dict) else None
        what = ("sign-in needed, and auth is configured (the doctor does not sign in; "
                "connect does)" if signs_in else "sign-in needed (connect with auth='oauth')")
        rec.add("authorization", WARN if signs_in else FAIL, f"{response.status_code}: {what}"
                f"; resource metadata {where}: authorization servers "
                f"{shown(servers, 160)}, scopes {shown(scopes, 120)}", elapsed())


async def _sse(rec: Recorder, url: str, headers: Mapping[str, str] | None,
               timeout: float) -> None:
    """The older SSE transport: the stream opens and names its POST endpoint."""
    import httpx2

    with rec.timed() as elapsed:
        try:
            async with httpx2.AsyncClient(timeout=timeout) as client, client.stream(
                    "GET", url, headers={**(headers or {}), "Accept": "text/event-stream"}
            ) as response:
                if response.status_code >= 400:
                    rec.add("HTTP status", FAIL, f"{response.status_code} "
                            f"{response.reason_phrase}", elapsed())
                    return
                rec.add("HTTP status", OK, f"{response.status_code} (event stream)",
                        elapsed())
                async with asyncio.timeout(timeout):
                    async for line in response.aiter_lines():
                        if line.startswith("data:"):
                            rec.add("MCP answered", OK, f"SSE endpoint event: "
                                    f"{shown(line[5:].strip(), 200)}", elapsed())
                            return
        except (httpx2.HTTPError, TimeoutError) as exc:
            rec.add("MCP answered", FAIL, f"no endpoint event: {type(exc).__name__} {exc}",
                    elapsed())
