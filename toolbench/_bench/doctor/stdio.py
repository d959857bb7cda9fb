"""The doctor's walk for a stdio server: command found, process started, stdout speaks
JSON-RPC, ``initialize`` (or ``server/discover``) answered and in which era, tools listed.

It speaks JSON-RPC itself, a line at a time, instead of through the SDK: the point is to see
what the server wrote, and the SDK hides exactly that (a log line on stdout, a request
echoed back by ``cat``, a process that exits before a word). Every wait is bounded by the
step's timeout, and the child is always ended (stdin closed, then terminate, then kill).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
from collections.abc import Mapping
from typing import Any

import anyio
from anyio.abc import Process
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

from toolbench._bench.doctor.steps import EVIDENCE_CHARS, FAIL, OK, WARN, Recorder, shown
from toolbench._core import html as _html

HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
MODERN_ERRORS = (-32020, -32021, -32022)
"""What a 2026-only server may answer to ``initialize`` (DESIGN, "Both protocol eras")."""
MAX_LINE = 1 << 20
KEPT_LOGS = 20
END_BOUND_S = 3.0


def _request(ident: int, method: str, params: Mapping[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = dict(params)
    return (json.dumps(message) + "\n").encode()


INITIALIZE = {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {},
              "clientInfo": {"name": "toolbench-doctor", "version": "1"}}
DISCOVER_META = {"_meta": {  # what every 2026 request carries (the SDK's keys)
    PROTOCOL_VERSION_META_KEY: MODERN_VERSION,
    CLIENT_INFO_META_KEY: INITIALIZE["clientInfo"],
    CLIENT_CAPABILITIES_META_KEY: {}}}


class _Lines:
    """Reads a child's stdout as lines; keeps the non-JSON ones as evidence."""

    def __init__(self, process: Process) -> None:
        assert process.stdout is not None
        self.stream = process.stdout
        self.buffer = b""
        self.logs: list[str] = []
        """The first ``KEPT_LOGS`` non-JSON lines (evidence needs the first)."""
        self.log_count = 0
        """Every non-JSON line seen: a chatty server is counted, not kept whole."""
        self.closed = False

    async def message(self) -> dict[str, Any] | None:
        """The next JSON object written, or None at end of output."""
        while True:
            while b"\n" not in self.buffer:
                if len(self.buffer) > MAX_LINE:
                    self._log(f"(a line of more than {MAX_LINE} bytes)")
                    self.buffer = b""
                try:
                    chunk = await self.stream.receive(65536)
                except (anyio.EndOfStream, anyio.ClosedResourceError,
                        anyio.BrokenResourceError):
                    self.closed = True
                    return None
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            text = line.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):  # nested past the parser's depth: not ours
                self._log(text)
                continue
            if isinstance(value, dict):
                return value
            self._log(text)

    def _log(self, text: str) -> None:
        self.log_count += 1
        if len(self.logs) < KEPT_LOGS:
            self.logs.append(text[:EVIDENCE_CHARS])

    async def answer(self, ident: int) -> dict[str, Any] | None:
        """The reply to request ``ident`` (or our own request echoed back); notifications
        and the server's own requests on the way are skipped."""
        while True:
            message = await self.message()
            if message is None or message.get("id") == ident:
                return message


_STDIN_GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
"""What writing to a child that stopped reading its stdin (or exited) raises."""


def _stopped_reading(process: Process) -> str:
    code = process.returncode
    return ("the process stopped reading its stdin" +
            (f" (it exited with code {code})" if code is not None else ""))


async def _stderr_tail(process: Process) -> str:
    if process.stderr is None:
        return ""
    data = b""
    with anyio.move_on_after(0.5):
        while len(data) < 4096:
            try:
                data += await process.stderr.receive(4096)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                break
    text = data.decode("utf-8", "replace").strip()
    return f"; stderr: {_html.shorten(text[-600:], 600)}" if text else "; stderr was empty"


async def _end(process: Process) -> None:
    """Close stdin, then terminate, then kill: the child never outlives the walk."""
    with anyio.CancelScope(shield=True):
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                await process.stdin.aclose()
        with anyio.move_on_after(END_BOUND_S / 3):
            await process.wait()
        if process.returncode is None:
            process.terminate()
            with anyio.move_on_after(END_BOUND_S / 3):
                await process.wait()
        if process.returncode is None:
            process.kill()
            with anyio.move_on_after(END_BOUND_S / 3):
                await process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(Exception):
                    await stream.aclose()


def argv_of(target: str | list[str]) -> list[str]:
    return shlex.split(target) if isinstance(target, str) else list(target)


async def walk_stdio(rec: Recorder, target: str | list[str], env: Mapping[str, str] | None,
                     cwd: str | None, timeout: float) -> None:
    """Add the stdio steps to ``rec``; stops at the first failure."""
    from mcp.client.stdio import get_default_environment

    from toolbench._transports.wire.command import CommandNotFound, find_command

    argv = argv_of(target)
    with rec.timed() as elapsed:
        try:
            program = await anyio.to_thread.run_sync(find_command, argv[0], env)
        except CommandNotFound as exc:
            rec.add("command found", FAIL, str(exc), elapsed())
            return
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            rec.add("command found", FAIL, f"{program!r} is not an executable file", elapsed())
            return
        how = "as given" if program == argv[0] else "on PATH or in this Python's scripts"
        rec.add("command found", OK, f"{program} ({how})", elapsed())
    child_env = get_default_environment() | dict(env or {})
    with rec.timed() as elapsed:
        try:
            process = await anyio.open_process([program, *argv[1:]], env=child_env, cwd=cwd,
                                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE)
        except OSError as exc:
            rec.add("process started", FAIL, f"could not start {program}: {exc}", elapsed())
            return
        rec.add("process started", OK, f"pid {process.pid}", elapsed())
    try:
        await _talk(rec, process, timeout)
    finally:
        await _end(process)


async def _talk(rec: Recorder, process: Process, timeout: float) -> None:
    assert process.stdin is not None
    lines = _Lines(process)
    with rec.timed() as elapsed:
        reply = None
        try:
            await process.stdin.send(_request(1, "initialize", INITIALIZE))
            with anyio.move_on_after(timeout):
                reply = await lines.answer(1)
        except _STDIN_GONE:
            lines.closed = True
        took = elapsed()
    logs = lines.logs
    said = (f"; it printed {lines.log_count} non-JSON line(s) on stdout, first: "
            f"{shown(logs[0])}"
            if logs else "")
    if reply is None:
        if lines.closed or process.returncode is not None:
            with anyio.move_on_after(1):
                await process.wait()
            code = process.returncode
            rec.add("stdout speaks JSON-RPC", FAIL, f"the process exited (code {code}) "
                    f"before answering{said}{await _stderr_tail(process)}", took)
        elif logs:
            rec.add("stdout speaks JSON-RPC", FAIL, f"no JSON-RPC within {timeout:g} s{said}"
                    " (a server must keep stdout for JSON-RPC and log to stderr)", took)
        else:
            rec.add("stdout speaks JSON-RPC", FAIL, f"silent: no answer to initialize within "
                    f"{timeout:g} s (the process is still running; it may be waiting for "
                    f"something else){await _stderr_tail(process)}", took)
        return
    if reply.get("method") == "initialize" and "result" not in reply:
        rec.add("stdout speaks JSON-RPC", FAIL, "it wrote our own initialize request back: "
                "this program echoes its input (like cat); it is not an MCP server", took)
        return
    if logs:
        rec.add("stdout speaks JSON-RPC", WARN, f"JSON-RPC answered{said} (log lines belong "
                "on stderr: a strict client drops the connection)", took)
    else:
        rec.add("stdout speaks JSON-RPC", OK, "the first line was a JSON-RPC reply", took)
    era = await _era(rec, process, lines, reply, took, timeout)
    if era is None:
        return
    await _tools(rec, process, lines, era, timeout)


async def _era(rec: Recorder, process: Process, lines: _Lines, reply: dict[str, Any],
               took: float, timeout: float) -> str | None:
    """The handshake, or (refused as a 2026 server refuses it) ``server/discover``."""
    assert process.stdin is not None
    result = reply.get("result")
    if isinstance(result, dict):
        info = result.get("serverInfo") or {}
        version = result.get("protocolVersion")
        rec.add("initialize answered", OK, f"handshake era, protocol {shown(version, 40)}; "
                f"server {shown(info.get('name'), 60)} {shown(info.get('version'), 30)}",
                took)
        with contextlib.suppress(*_STDIN_GONE):  # the next step's write says so
            await process.stdin.send(json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode() + b"\n")
        return "handshake"
    error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
    code = error.get("code") if isinstance(error, dict) else None
    if code not in MODERN_ERRORS and code != -32601:
        rec.add("initialize answered", FAIL, f"initialize was refused: "
                f"{shown(error, 300)}", took)
        return None
    with rec.timed() as elapsed:
        try:
            found = await _ask(process, lines, 2, "server/discover", DISCOVER_META, timeout)
        except _STDIN_GONE:
            rec.add("server/discover answered", FAIL, f"initialize was refused (code {code}) "
                    f"and then {_stopped_reading(process)}", elapsed())
            return None
        if found is None or not isinstance(found.get("result"), dict):
            rec.add("server/discover answered", FAIL, f"initialize was refused (code {code}) "
                    f"and server/discover got {shown(found, 200)}", elapsed())
            return None
        rec.add("server/discover answered", OK, f"2026 era (initialize refused with {code}); "
                f"it offers {shown(found['result'].get('supportedVersions'), 80)}", elapsed())
    return "modern"


async def _ask(process: Process, lines: _Lines, ident: int, method: str,
               params: Mapping[str, Any] | None, timeout: float) -> dict[str, Any] | None:
    """Send one request and wait, within ``timeout``, for its reply (None: no reply). A child
    that stopped reading raises one of ``_STDIN_GONE``."""
    assert process.stdin is not None
    with anyio.move_on_after(timeout):
        await process.stdin.send(_request(ident, method, params))
        return await lines.answer(ident)
    return None


async def _tools(rec: Recorder, process: Process, lines: _Lines, era: str,
                 timeout: float) -> None:
    with rec.timed() as elapsed:
        params = DISCOVER_META if era == "modern" else None
        try:
            reply = await _ask(process, lines, 3, "tools/list", params, timeout)
        except _STDIN_GONE:
            rec.add("tools listed", FAIL, f"tools/list was not sent: "
                    f"{_stopped_reading(process)}", elapsed())
            return
        result = reply.get("result") if reply is not None else None
        if not isinstance(result, dict):
            why = "no answer" if reply is None else shown(reply.get("error"), 200)
            rec.add("tools listed", FAIL, f"tools/list: {why}", elapsed())
            return
        listed = result.get("tools")
        tools: list[Any] = listed if isinstance(listed, list) else []
        names = [str(t.get("name")) for t in tools[:5] if isinstance(t, dict)]
        more = " and more pages" if result.get("nextCursor") else ""
        rec.add("tools listed", OK if tools else WARN,
                f"{len(tools)} tool(s){more}: {', '.join(names)}"
                + (" ..." if len(tools) > 5 else ""), elapsed())
