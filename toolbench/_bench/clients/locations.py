"""Where each MCP client keeps its servers, on Linux, macOS and Windows, and in a project.

Every location is the one the client's own documentation names (the source is the comment
beside it). ``~`` is the home folder, ``%APPDATA%`` Windows' roaming folder, ``$XDG`` the
XDG config folder (``~/.config`` unless ``XDG_CONFIG_HOME`` says otherwise). Project files
are looked for in the working directory. Looking never writes or creates anything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "codex",
           "gemini", "zed")
"""The clients whose files toolbench reads, as ``client=`` and ``--from`` take them."""


@dataclass(frozen=True)
class Location:
    client: str
    template: str
    systems: tuple[str, ...] = ("linux", "darwin", "win32")
    project: bool = False


# Each documented location. "systems" is where the template applies.
LOCATIONS: tuple[Location, ...] = (
    # Claude Desktop: https://modelcontextprotocol.io/quickstart/user ("claude_desktop_config
    # .json": macOS ~/Library/Application Support/Claude, Windows %APPDATA%\Claude); there is
    # no official Linux build, but the community builds read $XDG/Claude.
    Location("claude-desktop",
             "~/Library/Application Support/Claude/claude_desktop_config.json", ("darwin",)),
    Location("claude-desktop", "%APPDATA%/Claude/claude_desktop_config.json", ("win32",)),
    Location("claude-desktop", "$XDG/Claude/claude_desktop_config.json", ("linux",)),
    # Claude Code: https://docs.claude.com/en/docs/claude-code/mcp (user and local scope in
    # ~/.claude.json, project scope in .mcp.json at the project's root).
    Location("claude-code", "~/.claude.json"),
    Location("claude-code", ".mcp.json", project=True),
    # Cursor: https://cursor.com/docs/context/mcp (global ~/.cursor/mcp.json, project
    # .cursor/mcp.json).
    Location("cursor", "~/.cursor/mcp.json"),
    Location("cursor", ".cursor/mcp.json", project=True),
    # VS Code: https://code.visualstudio.com/docs/copilot/customization/mcp-servers (the
    # user profile's mcp.json: "MCP: Open User Configuration"; the workspace's
    # .vscode/mcp.json). The user folder is https://code.visualstudio.com/docs/configure/
    # settings#_settings-file-locations.
    Location("vscode", "$XDG/Code/User/mcp.json", ("linux",)),
    Location("vscode", "~/Library/Application Support/Code/User/mcp.json", ("darwin",)),
    Location("vscode", "%APPDATA%/Code/User/mcp.json", ("win32",)),
    Location("vscode", ".vscode/mcp.json", project=True),
    # Windsurf: https://docs.windsurf.com/windsurf/cascade/mcp (~/.codeium/windsurf/
    # mcp_config.json, %USERPROFILE% on Windows).
    Location("windsurf", "~/.codeium/windsurf/mcp_config.json"),
    # Codex: https://developers.openai.com/codex/mcp (~/.codex/config.toml, or
    # $CODEX_HOME/config.toml; .codex/config.toml for a trusted project).
    Location("codex", "$CODEX_HOME/config.toml"),
    Location("codex", ".codex/config.toml", project=True),
    # Gemini CLI: https://github.com/google-gemini/gemini-cli/blob/main/docs/get-started/
    # configuration.md (user ~/.gemini/settings.json, project .gemini/settings.json).
    Location("gemini", "~/.gemini/settings.json"),
    Location("gemini", ".gemini/settings.json", project=True),
    # Zed: https://zed.dev/docs/configuring-zed#settings-files (~/.config/zed/settings.json
    # on macOS and Linux ($XDG), %APPDATA%\Zed\settings.json on Windows; .zed/settings.json
    # in a project); servers under "context_servers": https://zed.dev/docs/ai/mcp.
    Location("zed", "$XDG/zed/settings.json", ("linux",)),
    Location("zed", "~/.config/zed/settings.json", ("darwin",)),
    Location("zed", "%APPDATA%/Zed/settings.json", ("win32",)),
    Location("zed", ".zed/settings.json", project=True),
)


def _system(platform: str) -> str:
    return "win32" if platform.startswith("win") else platform if platform in (
        "darwin", "linux") else "linux"


def expand(template: str, *, home: str, cwd: str, environ: Mapping[str, str]) -> str:
    """A template as a path on this machine (forward slashes become the OS's own)."""
    codex_home = environ.get("CODEX_HOME") or os.path.join(home, ".codex")
    xdg = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    appdata = environ.get("APPDATA") or os.path.join(home, "AppData", "Roaming")
    text = (template.replace("$CODEX_HOME", codex_home).replace("$XDG", xdg)
            .replace("%APPDATA%", appdata))
    if text.startswith("~/"):
        text = os.path.join(home, text[2:])
    elif not os.path.isabs(text) and not (len(text) > 1 and text[1] == ":"):
        text = os.path.join(cwd, text)
    return os.path.normpath(text)


def locations(client: str | None = None, *, platform: str | None = None,
              home: str | None = None, cwd: str | None = None,
              environ: Mapping[str, str] | None = None) -> list[tuple[str, str, bool]]:
    """``(client, path, project)`` of every documented location on this OS, user files first."""
    if client is not None and client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; known clients: {', '.join(CLIENTS)}")
    system = _system(platform or sys.platform)
    home = home or str(Path.home())
    cwd = cwd or os.getcwd()
    env = os.environ if environ is None else environ
    found = [(loc.client, expand(loc.template, home=home, cwd=cwd, environ=env), loc.project)
             for loc in LOCATIONS
             if system in loc.systems and (client is None or loc.client == client)]
    return sorted(found, key=lambda row: (CLIENTS.index(row[0]), row[2]))


def describe(path: str) -> tuple[bool, int | None, str | None]:
    """``(exists, servers, format)`` of one file; a file that cannot be read or parsed
    exists with ``servers`` and ``format`` None (loading it names the mistake)."""
    from toolbench._bench.clients.files import load_file
    from toolbench._bench.clients.formats import count_servers, detect
    from toolbench._bench.servers.config import ConfigError

    if not os.path.isfile(path):
        return False, None, None
    try:
        data = load_file(path)
        fmt = detect(data, path)[0]
    except ConfigError:
        return True, None, None
    return True, count_servers(data), fmt


def client_configs(*, platform: str | None = None, home: str | None = None,
                   cwd: str | None = None,
                   environ: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Where the MCP clients on this machine keep their servers: one row per documented
    config file of each client (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf,
    Codex, Gemini CLI, Zed) on this OS, and the project files in the working directory
    (``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json``, ...).

    Only reads: nothing is created or written. A file that cannot be parsed shows
    ``exists`` True with no ``servers`` (``load_config`` on it names the mistake).

    Args:
        platform, home, cwd, environ: this machine's by default (tests and other OSes' paths).

    Returns:
        A DataFrame with ``client``, ``path``, ``exists``, ``servers`` (how many the file
        names) and ``format`` (``mcpServers``, ``vscode``, ``codex`` or ``zed``).

    Example:
        >>> tb.client_configs().query("exists")                     # doctest: +SKIP
        >>> bench.load_config(client="cursor")                      # doctest: +SKIP
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for client, path, _project in locations(platform=platform, home=home, cwd=cwd,
                                            environ=environ):
        exists, servers, fmt = describe(path)
        rows.append({"client": client, "path": path, "exists": exists,
                     "servers": pd.NA if servers is None else servers, "format": fmt})
    frame = pd.DataFrame(rows, columns=["client", "path", "exists", "servers", "format"])
    frame["servers"] = frame["servers"].astype("Int64")
    return frame


def find_config(client: str, *, cwd: str | None = None) -> str:
    """The file ``load_config(client=...)`` reads: the project's file when the working
    directory has one, else the first user file that exists; else a ``FileNotFoundError``
    naming every place looked at."""
    places = locations(client, cwd=cwd)
    for _client, path, _project in sorted(places, key=lambda row: not row[2]):
        if os.path.isfile(path):
            return path
    looked = "; ".join(path for _c, path, _p in places)
    raise FileNotFoundError(f"no {client} config found; looked at {looked}")
