"""`@modelcontextprotocol/server-everything` from npm: where it is, how to start it, how to stop it.

The protocol tests need a real third-party server that uses every part of MCP. `.ci/run` installs
the pinned version below once into a cache folder (``$TOOLBENCH_NPM_CACHE``, default
``~/.cache/toolbench-npm``) with ``npm install --prefix``; a developer runs the same command
(:func:`install_command`). Nothing here installs anything: a missing or different version is an
error that says what to run, so a test never downloads behind the user's back.

The server's one argument picks the transport (``stdio``, ``sse`` or ``streamableHttp``;
``dist/index.js``); the HTTP modes read the port from ``PORT`` (default 3001) and serve
``/mcp``. It listens on every interface (``app.listen(PORT)``), so only start it where that is
acceptable (CI, a developer machine); we connect through 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from mcp import StdioServerParameters

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"
"""The pinned version; `.ci/run` installs the same one. Change both together."""

CACHE_ENV = "TOOLBENCH_NPM_CACHE"
DEFAULT_CACHE = Path("~/.cache/toolbench-npm")
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 5.0


class EverythingMissing(RuntimeError):
    """server-everything is not installed (at the pinned version) in the cache folder."""


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE).expanduser()


def node_missing() -> str | None:
    """Why these tests cannot run here (no node or npm on PATH), or None when they can."""
    absent = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    return f"{' and '.join(absent)} not on PATH" if absent else None


def install_command(cache: Path | None = None) -> list[str]:
    """The command that installs the pinned server into ``cache`` (what `.ci/run` runs)."""
    return ["npm", "install", "--prefix", str(cache or cache_dir()), f"{PACKAGE}@{VERSION}"]


def locate(cache: Path | None = None) -> Path:
    """The server's entry script, ``dist/index.js``, checked to be the pinned version."""
    cache = cache or cache_dir()
    package = cache / "node_modules" / Path(*PACKAGE.split("/"))
    entry = package / "dist" / "index.js"
    how = f"install it with: {' '.join(install_command(cache))}"
    if not entry.is_file():
        raise EverythingMissing(f"{PACKAGE} is not installed in {cache} ({CACHE_ENV}); {how}")
    found = json.loads((package / "package.json").read_text(encoding="utf-8")).get("version")
    if found != VERSION:
        raise EverythingMissing(
            f"{PACKAGE} in {cache} is version {found!r}, the tests pin {VERSION!r}; {how}"
        )
    return entry


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise EverythingMissing("node is not on PATH; server-everything needs Node.js 18 or newer")
    return node


def stdio_command(cache: Path | None = None) -> list[str]:
    """``node …/dist/index.js stdio``: the command an MCP client starts for the stdio mode."""
    return [_node(), str(locate(cache)), "stdio"]


def stdio_params(cache: Path | None = None) -> StdioServerParameters:
    command, *args = stdio_command(cache)
    return StdioServerParameters(command=command, args=args)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, then SIGKILL after a bound; always reap it."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(STOP_TIMEOUT_S)


@contextlib.contextmanager
def streamable_http(
    cache: Path | None = None, *, ready_timeout: float = READY_TIMEOUT_S, attempts: int = 3
) -> Iterator[str]:
    """Run ``server-everything streamableHttp`` on a free port; yield its ``/mcp`` URL.

    Ready means the port accepts TCP connections, waited for at most ``ready_timeout`` seconds.
    The port is chosen by binding port 0 and releasing it, so another process can take it in
    between; the server then exits with "already in use" and we retry on a fresh port.
    On exit the server's whole process group is stopped and reaped.
    """
    command = [_node(), str(locate(cache)), "streamableHttp"]
    failures: list[str] = []
    for _ in range(attempts):
        port = free_port()
        with tempfile.TemporaryFile() as output:
            process = subprocess.Popen(
                command, env={**os.environ, "PORT": str(port)}, stdin=subprocess.DEVNULL,
                stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            )
            try:
                deadline = time.monotonic() + ready_timeout
                while process.poll() is None and not _accepts(port):
                    if time.monotonic() > deadline:
                        raise TimeoutError(
                            f"server-everything did not accept connections on 127.0.0.1:{port} "
                            f"within {ready_timeout} s; output: {_tail(output)}"
                        )
                    time.sleep(0.05)
                if process.poll() is None:
                    yield f"http://127.0.0.1:{port}/mcp"
                    return
                failures.append(f"port {port}: exited {process.returncode}: {_tail(output)}")
            finally:
                _stop(process)
    raise RuntimeError(f"server-everything streamableHttp did not start: {'; '.join(failures)}")


def _tail(output: IO[bytes], limit: int = 2000) -> str:
    """The end of what the server printed, for an error message."""
    output.seek(0)
    return output.read().decode("utf-8", "replace")[-limit:].strip()
