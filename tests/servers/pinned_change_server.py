"""A stdio server (the real SDK's MCPServer) whose tool ``echo``, resource ``note://a`` and
prompt ``greet`` change with its version: a pinned server upgraded behind a bench's back.

Usage: ``python pinned_change_server.py VERSION_FILE``. The file holds the version (``1``
when missing), read at start and appended to ``VERSION_FILE.sent`` by ``echo`` and the reads
(so a test can tell whether a refused request reached the server). A test writes ``2`` and
kills the process (the ``pid`` tool answers its process id) to have it come back changed.
``pid`` and ``note://same`` never change.
"""

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

path = Path(sys.argv[1])
VERSION = (path.read_text().strip() or "1") if path.exists() else "1"
SENT = Path(f"{path}.sent")
server = MCPServer("pinned-change")


def _sent(what: str) -> None:
    with SENT.open("a") as out:
        out.write(f"{VERSION} {what}\n")


@server.tool()
def pid() -> str:
    """This process's id."""
    return str(os.getpid())


@server.tool(description=f"echo the text back (version {VERSION})")
def echo(text: str) -> str:
    _sent("echo")
    return f"{text} (version {VERSION})"


@server.resource("note://a", name="a", description=f"a note (version {VERSION})")
def note_a() -> str:
    _sent("note://a")
    return f"note a, version {VERSION}"


@server.resource("note://same", name="same", description="a note that never changes")
def note_same() -> str:
    return "the same note"


@server.prompt(name="greet", description=f"greet someone (version {VERSION})")
def greet(who: str) -> str:
    _sent("greet")
    return f"Hello {who} (version {VERSION})"


if __name__ == "__main__":
    server.run("stdio")
