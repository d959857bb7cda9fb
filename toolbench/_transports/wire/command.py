"""Finding a stdio server's program: on ``PATH``, then in this Python's own scripts folder.

``pip install mcp-server-time`` into a virtual environment puts the program in that
environment's ``bin`` (``Scripts`` on Windows), which is not on ``PATH`` unless the
environment was activated; a Jupyter kernel started by ``toolbench lab`` (or by an IDE)
often runs the environment's Python without it. So a bare command name is looked up on the
child's ``PATH`` first (what a shell would run), then in ``sysconfig``'s ``scripts`` path of
the running interpreter (and the folder of ``sys.executable``, where it differs). When it is
in neither, :class:`CommandNotFound` names where it looked and how to install it or point to
it. A command with a path separator is used as it is.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from collections.abc import Mapping

from toolbench._core import html as _html


class CommandNotFound(FileNotFoundError):
    """A stdio server's program is on neither ``PATH`` nor this Python's scripts folder."""


def scripts_folders() -> list[str]:
    """This interpreter's scripts folders: ``sysconfig``'s, then ``sys.executable``'s."""
    found: list[str] = []
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        if folder and folder not in found:
            found.append(folder)
    return found


def find_command(command: str, env: Mapping[str, str] | None = None) -> str:
    """The program to start for ``command``: its full path when found by name.

    Does file-system lookups (one ``stat`` per folder): run it off the event loop.

    Raises:
        CommandNotFound: a bare name found on neither the child's ``PATH`` nor in this
            Python's scripts folder.
    """
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        return command
    path = (env or {}).get("PATH") or os.environ.get("PATH") or os.defpath
    found = shutil.which(command, path=path)
    if found is not None:
        return found
    folders = scripts_folders()
    found = shutil.which(command, path=os.pathsep.join(folders))
    if found is not None:
        return found
    raise CommandNotFound(
        f"program {command!r} not found: looked on PATH "
        f"({_html.shorten(path, 300)}) and in this Python's scripts folder "
        f"({', '.join(folders)}); install it into this environment (a Python server: "
        f"{sys.executable} -m pip install <its package>; an npm one: npm install -g <its "
        f"package>, or run it with npx), or give the program's full path as the command")
