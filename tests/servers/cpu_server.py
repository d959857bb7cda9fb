"""A stdio MCP server whose tool spends a set amount of CPU per call (cluster tests, bench).

`python cpu_server.py` serves `burn(i, ms=20)`: it spins the CPU for ``ms`` milliseconds and
answers ``{"i": i, "pid": ...}``. With TOOLBENCH_CALL_LOG set, every call that runs appends
``i`` and its own pid to that file first (one ``O_APPEND`` write), so a test can tell which
calls ran, where, and how often, whatever happened to the process that asked.
"""

from __future__ import annotations

import os
import time
from typing import Any

from mcp.server.mcpserver import MCPServer

server = MCPServer("cpu-server", version="1.0.0")
_LOG = os.environ.get("TOOLBENCH_CALL_LOG")


@server.tool()
def burn(i: int, ms: float = 20.0) -> dict[str, Any]:
    """Spin the CPU for ``ms`` milliseconds, then say which case and process ran it."""
    if _LOG:
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{i} {os.getpid()}\n".encode())
        finally:
            os.close(fd)
    end = time.thread_time() + ms / 1000.0
    while time.thread_time() < end:
        pass
    return {"i": i, "pid": os.getpid()}


@server.tool()
def secret_len() -> int:
    """The length of TOOLBENCH_TEST_SECRET here: proves the env reached this process."""
    return len(os.environ.get("TOOLBENCH_TEST_SECRET", ""))


if __name__ == "__main__":
    server.run("stdio")
