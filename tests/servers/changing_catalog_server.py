"""A stdio server (the real SDK's MCPServer) whose resource, template and prompt change with
its version: a server upgraded under a pinned bench.

Usage: ``python changing_catalog_server.py VERSION_FILE``. The file holds the version (``1``
when missing); it is read at start, so a test writes ``2`` and kills the process (the ``pid``
tool answers its process id) to have it come back changed. What changes from version 1 to 2:
the description of ``note://a``, of the template ``city://{name}`` and of the prompt
``greet``; ``note://same`` and the prompt ``same`` never change.
"""

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

path = Path(sys.argv[1])
VERSION = (path.read_text().strip() or "1") if path.exists() else "1"
server = MCPServer("changing")


@server.tool()
def pid() -> str:
    """This process's id."""
    import os

    return str(os.getpid())


@server.resource("note://a", name="a", description=f"a note (version {VERSION})")
def note_a() -> str:
    return f"note a, version {VERSION}"


@server.resource("note://same", name="same", description="a note that never changes")
def note_same() -> str:
    return "the same note"


@server.resource("city://{name}", name="city", description=f"a city (version {VERSION})")
def city(name: str) -> str:
    return f"city {name}, version {VERSION}"


@server.prompt(name="greet", description=f"greet someone (version {VERSION})")
def greet(who: str) -> str:
    return f"Hello {who} (version {VERSION})"


@server.prompt(name="same", description="never changes")
def same() -> str:
    return "the same prompt"


if __name__ == "__main__":
    server.run("stdio")
