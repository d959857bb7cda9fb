"""Which servers a command starts: the demo's, ``--config``'s or ``./mcp.json``'s, and of
those only the ones it needs.

Starting a server can take seconds, and a broken server elsewhere in the config should not
stand between the user and the one tool they asked for; so ``call`` starts the owners of a
name, ``catalog --server`` one server, and only ``compare`` and ``demo`` start them all.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench._bench.clients.locations import CLIENTS
from toolbench._bench.servers.config import ClientConfig, ConfigWarning
from toolbench._bench.servers.failed import FAILED_WARNING
from toolbench._cli.command import UsageError
from toolbench._cli.terminal import command_name, err, safe
from toolbench._core.ids import did_you_mean

if TYPE_CHECKING:
    from toolbench._notebook.bench import Bench

SEPARATOR = "-"
"""The pegboard separator the command uses (the Bench default): names are SERVER-TOOL."""


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--config`` and ``--demo``, accepted before or after the command: SUPPRESS keeps a
    subcommand's unset option from overwriting the value given before it."""
    parser.add_argument("--config", default=argparse.SUPPRESS, metavar="FILE",
                        help="a config file of toolbench's or any MCP client's format "
                             "(default ./mcp.json when it exists, else the bundled demo "
                             "servers)")
    parser.add_argument("--input", action="append", default=argparse.SUPPRESS,
                        metavar="ID=VALUE", help="the answer to a VS Code ${input:ID} "
                        "(repeatable; a terminal does not ask)")
    parser.add_argument("--demo", action="store_true", default=argparse.SUPPRESS,
                        help="use the bundled demo servers even when ./mcp.json exists")
    parser.add_argument("--from", dest="client", default=argparse.SUPPRESS, metavar="CLIENT",
                        choices=CLIENTS, help="another MCP client's own config: "
                        + ", ".join(CLIENTS) + " (tb.client_configs() shows where each is)")


@dataclass
class Source:
    """Where the servers come from: the raw config entries, so a subset can be started."""

    label: str
    key: str
    entries: dict[str, Any]
    is_demo: bool
    read: Mapping[str, Any] | None = None
    """The config as read (a ``ClientConfig``: its file's name, its inputs' answers)."""

    def subset(self, names: Sequence[str]) -> dict[str, Any]:
        chosen = {self.key: {name: self.entries[name] for name in names}}
        if isinstance(self.read, ClientConfig):
            made = ClientConfig(chosen)
            made.source, made.label, made.environ = (self.read.source, self.read.label,
                                                     self.read.environ)
            return made
        return chosen

    def check_server(self, name: str) -> None:
        if name not in self.entries:
            hint = did_you_mean(name, self.entries)
            raise UsageError(f"no server {name!r} in {self.label}{hint} (servers: "
                             f"{', '.join(self.entries) or 'none'})")


def source_of(args: argparse.Namespace) -> Source:
    """The servers the command line names (``--config``, ``--demo``, else the default)."""
    return source(getattr(args, "config", None), getattr(args, "demo", False),
                  getattr(args, "client", None), getattr(args, "input", None))


def _inputs(pairs: Sequence[str] | None) -> dict[str, str]:
    found: dict[str, str] = {}
    for pair in pairs or ():
        ident, sep, value = pair.partition("=")
        if not sep or not ident:
            raise UsageError(f"--input {ident!r} has no value: write --input ID=VALUE")
        found[ident] = value
    return found


def source(config: str | None, use_demo: bool, client: str | None = None,
           inputs: Sequence[str] | None = None) -> Source:
    """The demo servers, ``--config`` (any client's format), ``--from CLIENT``'s own file,
    or ``./mcp.json``; a bad file is a usage error."""
    from toolbench._bench.clients.reading import read_client_config
    from toolbench._bench.servers import config as _config

    if sum((use_demo, config is not None, client is not None)) > 1:
        raise UsageError("--demo, --config and --from exclude each other; give one")
    path = config if config is not None else (
        None if use_demo or client is not None or not Path("mcp.json").is_file()
        else "mcp.json")
    if path is None and client is None:
        from toolbench import demo

        return Source("the bundled demo servers", "mcpServers",
                      dict(demo.config()["mcpServers"]), is_demo=True)
    try:
        read = read_client_config(path, client=client, inputs=_inputs(inputs), ask=False)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    parsed = _config.parse(read)  # checks the whole file (ConfigError names the JSON path)
    key = "mcpServers" if "mcpServers" in read else "servers"
    entries = {name: entry for name, entry in read[key].items() if name not in parsed.disabled}
    label = getattr(read, "source", path) or str(path)
    return Source(label, key, entries, is_demo=False, read=read)


def _namespace(name: str, entry: Any) -> object:
    return entry.get("namespace", name) if isinstance(entry, Mapping) else name


def owners(source: Source, name: str) -> list[str]:
    """The servers that may offer ``name``; only these are started for ``call``.

    ``tool://SERVER/TOOL`` names its server. A pegboard name SERVER-TOOL belongs to every
    server whose namespace (its name, or the config's ``namespace``), followed by the
    separator, begins the name, and to every server configured without a prefix. Usually
    that is one server. When several qualify (``geo`` and ``geo-x`` both begin
    ``geo-x-dist``) they are all started at once, and the pegboard, which refuses clashing
    names, settles which one owns the name exactly as it would with every server started.
    """
    from toolbench._core.ids import ToolId

    if name.startswith("tool://"):
        tid = ToolId.parse(name)
        if tid is None:
            raise UsageError(f"malformed reference {name!r}: expected tool://SERVER/TOOL, "
                             f"for example tool://geo/distance")
        source.check_server(tid.server)
        return [tid.server]
    found = []
    for server, entry in source.entries.items():
        ns = _namespace(server, entry)
        if ns is None or ns == "" or not isinstance(ns, str) or name.startswith(ns + SEPARATOR):
            found.append(server)
    if not found:
        prefixes = {str(_namespace(s, e)): s for s, e in source.entries.items()}
        head = name.split(SEPARATOR, 1)[0]
        hint = (did_you_mean(head, prefixes, tail=name[len(head):]) if SEPARATOR in name
                else "")
        raise UsageError(
            f"no server in {source.label} owns {name!r}: a name is SERVER{SEPARATOR}TOOL "
            f"(servers: {', '.join(source.entries) or 'none'}) or tool://SERVER/TOOL{hint} "
            f"(`{command_name()} catalog` lists every name)"
        )
    return found


def start(source: Source, names: Sequence[str] | None = None) -> tuple[Bench, int]:
    """A bench with ``names`` (default: every server) started; failures reported on stderr.

    Returns the bench and how many servers failed to start.
    """
    from toolbench._notebook.bench import Bench

    bench = Bench()
    try:
        with warnings.catch_warnings():  # each failure is printed in full below
            warnings.filterwarnings("ignore", message=FAILED_WARNING, category=ConfigWarning)
            bench.load_config(source.subset(list(source.entries) if names is None else names))
    except BaseException:
        bench.close()
        raise
    return bench, _report_failed_servers(bench)


def _report_failed_servers(bench: Bench) -> int:
    """Print each failed server's whole error and its stderr tail; return how many failed."""
    failed = bench.servers
    failed = failed[failed["status"] == "failed"]
    for row in failed.itertuples(index=False):
        error = str(row.error or "no error message").rstrip()
        said = f"server {row.name!r}" in error  # the error usually names the server itself
        err(f"error: {error}" if said else f"error: server {row.name!r} failed to start: "
            f"{error}")
        tail = str(row.stderr_tail or "").strip()
        if tail and tail not in error:
            print(f"--- stderr of {row.name!r} (last lines) ---\n{safe(tail)}",
                  file=sys.stderr)
    return len(failed)
