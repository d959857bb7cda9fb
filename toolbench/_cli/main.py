"""The ``toolbench`` command: the catalog, a call or a comparison from a terminal.

It uses ``./mcp.json`` when present and the bundled demo servers otherwise, so the first
command a newcomer types shows something real without any setup. A command starts only the
servers it needs: starting a server can take seconds, and a broken server elsewhere in the
config should not stand between the user and the one tool they asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from toolbench._core.html import counted as _counted
from toolbench._core.ids import did_you_mean

if TYPE_CHECKING:
    import pandas as pd

    from toolbench._core.client import ToolSpec
    from toolbench._notebook.bench import Bench

WIDTH = 48
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUG = 0, 1, 2, 3
SEPARATOR = "-"
"""The pegboard separator the command uses (the Bench default): names are SERVER-TOOL."""
DEMO_EXAMPLE = ("distance", "--arg from_city=London --arg to_city=Paris")
"""A demo tool offered by several servers, and arguments that every one of them accepts."""

EXIT_HELP = """\
exit status:
  0  success
  1  a tool failed (call: the call raised; compare: a row failed), or a server failed to
     start (its error and stderr are printed on stderr)
  2  usage error: a bad command line, --arg or --json, a bad config file, or a name no
     server has; nothing was called
  3  a bug in toolbench (a traceback is printed); please report it
"""

CALL_HELP = """\
NAME is the tool's pegboard name, SERVER-TOOL: the server's name in the config, a dash,
and the tool's own name ("toolbench catalog" lists them). A reference tool://SERVER/TOOL
names the same tool by its parts, so it stays unambiguous when a server or tool name
itself contains a dash. Only the server that owns NAME is started: the one whose name (or
"namespace" in the config) begins NAME, plus any configured without a prefix; when several
could own it (geo and geo-x both begin geo-x-dist), just those are started, together.

examples (the bundled demo servers):
  toolbench call geo-distance --arg from_city=London --arg to_city=Paris
  toolbench call tool://geo/distance --json '{"from_city": "London", "to_city": "Paris"}'
  toolbench call geo_precise-bearing --arg from_city=London --arg to_city=Paris

""" + EXIT_HELP

COMPARE_HELP = """\
NAME is a tool's own name (distance), or any pegboard name or tool:// reference of it;
every server offering a tool of that name is called with the same arguments. Every server
in the config is started, since only a server knows which tools it has.

example (the bundled demo servers):
  toolbench compare distance --arg from_city=London --arg to_city=Paris

""" + EXIT_HELP


class UsageError(Exception):
    """The command line or the config is wrong; nothing was called (exit status 2)."""


# -- output -------------------------------------------------------------------------------
def _text_table(df: pd.DataFrame, columns: Sequence[str]) -> str:
    if df.empty:
        return "(none)"
    view = df[[c for c in columns if c in df.columns]].copy()
    for column in view.columns:
        view[column] = view[column].map(_short)
    return str(view.to_string(index=False))


def _short(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):  # None or NaN
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.1f}"  # latency_ms; full precision stays in the library's tables
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = _safe(" ".join(text.split()))
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _safe(text: str) -> str:
    """Server text fit for a terminal: control characters (ESC, BEL, CR, BS, C1...) other
    than newline and tab are shown escaped (``\\x1b``), never sent to the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _err(message: str) -> None:
    print(f"toolbench: {_safe(message)}", file=sys.stderr)


def _command_name() -> str:
    """How to run toolbench again from this shell, as the user can type it.

    The quick start never activates its venv, so a bare ``toolbench`` is "command not
    found" there: the name is ``toolbench`` only when that name on ``PATH`` is this very
    command; else the path this one was started by (``.venv/bin/toolbench``, relative to the
    current folder as typed), or this interpreter with ``-m toolbench``.
    """
    argv0 = sys.argv[0] if sys.argv else ""
    found = shutil.which("toolbench")
    if Path(argv0).name == "toolbench":  # the console script
        try:
            if found is not None and os.path.samefile(found, argv0):
                return "toolbench"
        except OSError:
            pass
        return shlex.quote(argv0)
    if found is not None and Path(found).parent == Path(sys.executable).parent:
        return "toolbench"  # python -m toolbench, and this environment's script is on PATH
    return f"{shlex.quote(sys.executable)} -m toolbench"


def _activate_hint(command: str) -> str:
    """One line on typing plain ``toolbench``, when the command is a venv's script path."""
    if command == "toolbench" or command.endswith(" -m toolbench"):
        return ""
    activate = Path(sys.argv[0]).parent / "activate"
    if not activate.is_file():
        return ""
    return f"  (or run `source {shlex.quote(str(activate))}` once to type plain `toolbench`)\n"


# -- arguments ----------------------------------------------------------------------------
def _refuse_constant(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not JSON")


def _parse_args(pairs: Sequence[str], raw_json: str | None) -> dict[str, Any]:
    """The call's arguments, checked before any server starts (a mistake is a usage error)."""
    arguments: dict[str, Any] = {}
    if raw_json is not None:
        try:
            loaded = json.loads(raw_json, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--json is not valid JSON: {exc.msg} (column {exc.colno}) in "
                             f"{raw_json!r}") from exc
        except ValueError as exc:  # NaN, Infinity
            raise UsageError(f"--json is not valid JSON: {exc} in {raw_json!r}") from exc
        if not isinstance(loaded, dict):
            raise UsageError(f"--json must be a JSON object like '{{\"key\": 1}}', not "
                             f"{raw_json!r}")
        arguments.update(loaded)
    seen: set[str] = set()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--arg {pair!r} must look like KEY=VALUE (for example "
                             f"--arg from_city=London)")
        if key in seen or key in arguments:
            where = "--arg" if key in seen else "--json"
            raise UsageError(f"argument {key!r} is given twice (in --arg {pair!r} and in "
                             f"{where}); give it once")
        seen.add(key)
        try:
            arguments[key] = json.loads(value, parse_constant=_refuse_constant)
        except ValueError:  # not JSON (nor NaN/Infinity): the text itself
            arguments[key] = value
    return arguments


# -- which servers ------------------------------------------------------------------------
@dataclass
class _Source:
    """Where the servers come from: the raw config entries, so a subset can be started."""

    label: str
    key: str
    entries: dict[str, Any]
    is_demo: bool

    def subset(self, names: Sequence[str]) -> dict[str, Any]:
        return {self.key: {name: self.entries[name] for name in names}}

    def check_server(self, name: str) -> None:
        if name not in self.entries:
            hint = did_you_mean(name, self.entries)
            raise UsageError(f"no server {name!r} in {self.label}{hint} (servers: "
                             f"{', '.join(self.entries) or 'none'})")


def _source(config: str | None, use_demo: bool) -> _Source:
    """The demo servers, ``--config``, or ``./mcp.json``; a bad file is a usage error."""
    from toolbench._bench.servers import config as _config

    if use_demo and config is not None:
        raise UsageError("--demo and --config exclude each other; give one")
    path = config if config is not None else (
        None if use_demo or not Path("mcp.json").is_file() else "mcp.json")
    if path is None:
        from toolbench import demo

        return _Source("the bundled demo servers", "mcpServers",
                       dict(demo.config()["mcpServers"]), is_demo=True)
    parsed = _config.parse(path)  # checks the whole file (ConfigError names the JSON path)
    data = _config.load_json(path)
    key = "mcpServers" if "mcpServers" in data else "servers"
    entries = {name: entry for name, entry in data[key].items() if name not in parsed.disabled}
    return _Source(path, key, entries, is_demo=False)


def _namespace(name: str, entry: Any) -> object:
    return entry.get("namespace", name) if isinstance(entry, Mapping) else name


def _owners(source: _Source, name: str) -> list[str]:
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
    owners = []
    for server, entry in source.entries.items():
        ns = _namespace(server, entry)
        if ns is None or ns == "" or not isinstance(ns, str) or name.startswith(ns + SEPARATOR):
            owners.append(server)
    if not owners:
        prefixes = {str(_namespace(s, e)): s for s, e in source.entries.items()}
        head = name.split(SEPARATOR, 1)[0]
        hint = (did_you_mean(head, prefixes, tail=name[len(head):]) if SEPARATOR in name
                else "")
        raise UsageError(
            f"no server in {source.label} owns {name!r}: a name is SERVER{SEPARATOR}TOOL "
            f"(servers: {', '.join(source.entries) or 'none'}) or tool://SERVER/TOOL{hint} "
            f"(`{_command_name()} catalog` lists every name)"
        )
    return owners


def _start(source: _Source, names: Sequence[str] | None = None) -> tuple[Bench, int]:
    """A bench with ``names`` (default: every server) started; failures reported on stderr.

    Returns the bench and how many servers failed to start.
    """
    from toolbench._notebook.bench import Bench

    bench = Bench()
    try:
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
        _err(f"error: {error}" if said else f"error: server {row.name!r} failed to start: "
             f"{error}")
        tail = str(row.stderr_tail or "").strip()
        if tail and tail not in error:
            print(f"--- stderr of {row.name!r} (last lines) ---\n{_safe(tail)}",
                  file=sys.stderr)
    return len(failed)


# -- commands -----------------------------------------------------------------------------
def _catalog(args: argparse.Namespace, source: _Source) -> int:
    if args.server is not None:
        source.check_server(args.server)
    bench, failed = _start(source, None if args.server is None else [args.server])
    with bench:
        df = bench.catalog(server=args.server, search=args.search)
        print(_text_table(df, ["name", "server", "parameters", "description"]))
    return EXIT_FAILED if failed else EXIT_OK


def _resolvable(bench: Bench, name: str) -> bool:
    from toolbench._core.ids import ToolId

    tid = ToolId.parse(name)
    if tid is not None:
        return any(e.tool == tid.tool for e in bench.pegboard.entries(tid.server))
    return name in bench.pegboard


def _call(args: argparse.Namespace, source: _Source) -> int:
    arguments = _parse_args(args.arg, args.json)
    owners = _owners(source, args.name)
    bench, failed = _start(source, owners)
    with bench:
        if not _resolvable(bench, args.name):
            if failed:
                _err(f"error: cannot call {args.name!r}: its server failed to start (above)")
                return EXIT_FAILED
            raise UsageError(_unknown_name(bench, args.name))
        _refuse_ambiguous(bench, args.name, owners)
        _check_parameters(args.name, arguments, [_spec_of(bench, args.name)])
        result = bench.call(args.name, arguments)
        data = result.data
        print(_safe(data if isinstance(data, str)
                    else json.dumps(data, indent=2, default=str)))
    return EXIT_FAILED if failed else EXIT_OK


def _refuse_ambiguous(bench: Bench, name: str, owners: Sequence[str]) -> None:
    """Two servers can own ``name`` (``one`` with ``x-echo``, ``one-x`` with ``echo``): the
    one that registered first would win by a race, so it is a usage error naming both."""
    if len(owners) < 2 or name.startswith("tool://"):
        return
    holder = bench.pegboard.entry(name).tool_id.server
    rows = bench.servers
    clashed = [str(r.name) for r in rows.itertuples(index=False)
               if r.name in owners and r.name != holder and r.status == "failed"
               and "NameCollision" in str(r.error) and name in str(r.error)]
    if clashed:
        both = ", ".join(repr(s) for s in [holder, *clashed])
        raise UsageError(f"{name!r} can be owned by several servers ({both}); name the one "
                         f"you mean as tool://SERVER/TOOL (for example tool://{holder}/"
                         f"{bench.pegboard.entry(name).tool_id.tool}), or give the servers "
                         "distinct namespaces in the config")


def _spec_of(bench: Bench, name: str) -> ToolSpec:
    """The spec of a name ``_resolvable`` found (a pegboard name or a tool:// reference)."""
    from toolbench._core.ids import ToolId

    tid = ToolId.parse(name)
    if tid is None:
        return bench.pegboard.entry(name).spec
    return next(e.spec for e in bench.pegboard.entries(tid.server) if e.tool == tid.tool)


def _check_parameters(name: str, arguments: Mapping[str, Any],
                      specs: Sequence[ToolSpec]) -> None:
    """Refuse an argument that no tool in ``specs`` has as a parameter (a typo, usually).

    A server may well ignore an unknown key and answer as if it was never given, so the
    command refuses it before calling, naming the known parameters (a usage error). A schema
    that admits any key (``additionalProperties`` or ``patternProperties``) accepts it.
    """
    known: set[str] = set()
    for spec in specs:
        schema = spec.input_schema if isinstance(spec.input_schema, Mapping) else {}
        extra = schema.get("additionalProperties")
        if (extra is not None and extra is not False) or schema.get("patternProperties"):
            return
        properties = schema.get("properties")
        known.update(properties if isinstance(properties, Mapping) else ())
    unknown = [key for key in arguments if key not in known]
    if not unknown:
        return
    listed = ", ".join(sorted(known)) or "none"
    noun = "parameter" if len(unknown) == 1 else "parameters"
    hint = did_you_mean(unknown[0], sorted(known))
    raise UsageError(f"{name!r} has no {noun} {', '.join(map(repr, unknown))}{hint} (its "
                     f"parameters: {listed}); nothing was called")


def _unknown_name(bench: Bench, name: str) -> str:
    from toolbench._core.errors import ToolError
    from toolbench._core.ids import ToolId

    tid = ToolId.parse(name)
    if tid is not None:
        tools = sorted(e.tool for e in bench.pegboard.entries(tid.server))
        hint = did_you_mean(tid.tool, tools)
        return f"server {tid.server!r} has no tool {tid.tool!r}{hint} (its tools: " \
               f"{', '.join(tools) or 'none'})"
    try:
        bench.pegboard.entry(name)
    except ToolError as exc:  # the pegboard's message suggests close names
        return str(exc)
    return f"no tool {name!r}"


def _compare(args: argparse.Namespace, source: _Source) -> int:
    from toolbench._core.errors import Unreachable

    arguments = _parse_args(args.arg, args.json)
    if args.name.startswith("tool://"):
        _owners(source, args.name)  # a malformed reference or unknown server: usage error
    bench, failed = _start(source)
    with bench:
        specs = _compared_specs(bench, args.name)
        if specs:
            _check_parameters(args.name, arguments, specs)
        try:
            df = bench.compare(args.name, arguments, progress=False)
        except Unreachable as exc:  # no server offers the name
            if failed:
                _err(f"error: {exc} (and {_counted(failed, 'server')} failed to start, "
                     "above)")
                return EXIT_FAILED
            raise UsageError(str(exc)) from exc
        print(_text_table(df, ["case", "server", "ok", "latency_ms", "text", "error"]))
        bad = df[~df["ok"].astype(bool)]
        if len(bad):
            _err(f"{len(bad)} of {_counted(len(df), 'call')} failed:")
            for r in bad.itertuples():  # in full: the table cuts long errors short
                print(_safe(f"  case {r.case}, {r.server}: {r.error_type}: {r.error}"),
                      file=sys.stderr)
            return EXIT_FAILED
    return EXIT_FAILED if failed else EXIT_OK


def _compared_specs(bench: Bench, name: str) -> list[ToolSpec]:
    """The specs of every tool ``compare`` would call for ``name`` (none: compare says why)."""
    from toolbench._core.ids import ToolId

    tid = ToolId.parse(name)
    if tid is not None:
        original = tid.tool
    elif name in bench.pegboard:
        original = bench.pegboard.entry(name).tool
    else:
        original = name
    return [e.spec for e in bench.pegboard.entries() if e.tool == original]


def _demo(args: argparse.Namespace, source: _Source) -> int:
    bench, failed = _start(source)
    with bench:
        print(_text_table(bench.servers, ["name", "transport", "status", "tools"]))
        print()
        print(_text_table(bench.catalog(), ["name", "parameters", "description"]))
        tool, example = DEMO_EXAMPLE
        if f"geo-{tool}" in bench.pegboard.same_named().get(tool, []):
            # --demo only when ./mcp.json would otherwise win: the hint must work as printed.
            # The command as it runs here: the quick start's venv is not activated.
            flag = " --demo" if Path("mcp.json").is_file() else ""
            command = _command_name()
            print(f"\nSeveral servers offer `{tool}`. Compare them, or call one:\n"
                  f"  {command} compare {tool} {example}{flag}\n"
                  f"  {command} call geo-{tool} {example}{flag}\n"
                  + _activate_hint(command), end="")
    return EXIT_FAILED if failed else EXIT_OK


def _lab_command(lab_args: Sequence[str], euid: int | None) -> list[str]:
    """``jupyter lab`` with the user's arguments, and ``--allow-root`` when run as root.

    Jupyter refuses to start as root without that flag; in a container, root is the norm.
    """
    extra = ["--allow-root"] if euid == 0 and "--allow-root" not in lab_args else []
    return [sys.executable, "-m", "jupyterlab", *extra, *lab_args]


def _lab_position(argv: Sequence[str]) -> int | None:
    """Where ``lab`` stands in ``argv``, if it is the command.

    Everything after it goes to jupyter lab untouched: argparse would take ``--no-browser``
    for an option of its own and refuse it.
    """
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "lab":
            return i
        if token == "--config":
            i += 2
        elif token.startswith("--config=") or token == "--demo":
            i += 1
        else:
            return None
    return None


def _lab(lab_args: Sequence[str]) -> int:
    import importlib.util

    if importlib.util.find_spec("jupyterlab") is None:
        _err("error: JupyterLab is not installed here; install it with "
             "pip install 'toolbench[lab]'")
        return EXIT_FAILED
    geteuid = getattr(os, "geteuid", None)
    command = _lab_command(lab_args, geteuid() if geteuid is not None else None)
    if "--allow-root" in command and "--allow-root" not in lab_args:
        _err("running as root, so passing --allow-root to jupyter lab")
    folder = Path("notebooks") if Path("notebooks").is_dir() else Path.cwd()
    from toolbench import _child

    return _child.run(command, cwd=os.fspath(folder))  # JupyterLab ends with this command


# -- parsing ------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    # --config and --demo are accepted before or after the command: SUPPRESS keeps a
    # subcommand's unset option from overwriting the value given before it.
    servers = argparse.ArgumentParser(add_help=False)
    servers.add_argument("--config", default=argparse.SUPPRESS, metavar="FILE",
                         help="an mcpServers/servers JSON file (default ./mcp.json when it "
                              "exists, else the bundled demo servers)")
    servers.add_argument("--demo", action="store_true", default=argparse.SUPPRESS,
                         help="use the bundled demo servers even when ./mcp.json exists")
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="toolbench", parents=[servers], formatter_class=raw,
        description="Explore, call and compare MCP tools. Uses ./mcp.json when present, "
                    "else the bundled demo servers.",
        epilog="examples:\n  toolbench demo\n  toolbench catalog --search distance\n"
               f"  toolbench call geo-distance {DEMO_EXAMPLE[1]}\n"
               "  toolbench call --help\n\n" + EXIT_HELP,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    cat_help = "list every tool of every server"
    cat = sub.add_parser("catalog", parents=[servers], formatter_class=raw, help=cat_help,
                         description=cat_help, epilog=EXIT_HELP)
    cat.add_argument("--server", help="only this server's tools (only it is started)")
    cat.add_argument("--search", help="only tools whose name, title or description contains "
                                      "this (any case)")
    for name, help_text, epilog, what in (
        ("call", "call one tool and print its result", CALL_HELP,
         "SERVER-TOOL (geo-distance) or tool://SERVER/TOOL"),
        ("compare", "call a tool name on every server that offers it", COMPARE_HELP,
         "a tool's own name (distance)"),
    ):
        p = sub.add_parser(name, parents=[servers], formatter_class=raw, help=help_text,
                           description=help_text, epilog=epilog)
        p.add_argument("name", metavar="NAME", help=what)
        p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                       help="one argument, repeatable; VALUE is read as JSON when it parses "
                            "(2, true, [1,2]), else as text")
        p.add_argument("--json", metavar="OBJECT", help="the arguments as one JSON object")
    demo_help = "start the bundled demo servers and show what they offer"
    sub.add_parser("demo", formatter_class=raw, epilog=EXIT_HELP, help=demo_help,
                   description=demo_help)
    from toolbench._bench.signin_commands import add_auth_command

    add_auth_command(sub)
    lab_help = ("open JupyterLab on the tutorial notebooks (./notebooks when it exists); "
                "as root it adds --allow-root, which jupyter lab needs to start as root")
    lab = sub.add_parser("lab", help=lab_help, description=lab_help)
    lab.add_argument("lab_args", nargs=argparse.REMAINDER, metavar="JUPYTER_LAB_ARGS",
                     help="passed on to jupyter lab as they are (--no-browser, --port 8899)")
    from toolbench._bench.replay.recording import add_cli

    add_cli(sub)
    from toolbench._cli.report import add_report_parser

    add_report_parser(sub, [servers])
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit status. A UsageError propagates (status 2)."""
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    lab_at = _lab_position(argv)
    if lab_at is not None and argv[lab_at + 1:] not in (["-h"], ["--help"]):
        return _lab(argv[lab_at + 1:])
    args = parser.parse_args(argv)
    if args.command is None:  # a usage error: say what the commands are, exit 2
        parser.print_help(sys.stderr)
        _err("error: a command is required (catalog, call, compare, demo or lab)")
        return EXIT_USAGE
    if args.command == "serve-recording":
        from toolbench._bench.replay.recording import run_cli

        return run_cli(args)
    config: str | None = getattr(args, "config", None)
    use_demo: bool = getattr(args, "demo", False)
    if args.command == "demo":
        if config is not None:
            raise UsageError("`toolbench demo` always uses the bundled demo servers; for "
                             f"{config} use `{_command_name()} catalog --config {config}`")
        use_demo = True
    if args.command in ("call", "compare"):
        _parse_args(args.arg, args.json)  # before reading a config or starting anything
    if args.command == "auth":
        from toolbench._bench.signin_commands import auth_command

        return auth_command(args)
    source = _source(config, use_demo)
    if args.command == "report":
        from toolbench._cli.report import report_command

        return report_command(args, source, _start)
    commands = {"catalog": _catalog, "call": _call, "compare": _compare, "demo": _demo}
    return commands[args.command](args, source)


def main(argv: Sequence[str] | None = None) -> None:
    """Exit statuses: 0 success, 1 a tool or server failed, 2 usage error, 3 a bug."""
    try:
        code = run(argv)
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:
        from toolbench._transports.mcp.errors import leaves

        errors = leaves(exc)
        code = max(_status(error) for error in errors)
        if code == EXIT_BUG:  # TypeError, KeyError, ...: a bug here, never the user's mistake
            traceback.print_exc()
            _err("internal error: this is a bug in toolbench, not a mistake in your command; "
                 "please report it with the traceback above")
        else:
            for error in errors:
                _err(f"error: {_describe(error)}")
    sys.exit(code)


def _status(exc: BaseException) -> int:
    """The exit status an exception means; anything unforeseen is a bug (3)."""
    from toolbench._core.errors import ToolError

    if isinstance(exc, (UsageError, ValueError)):  # ConfigError, NameCollision, bad values
        return EXIT_USAGE
    if isinstance(exc, (ToolError, OSError)):
        return EXIT_FAILED
    return EXIT_BUG


def _describe(exc: BaseException) -> str:
    from toolbench._core.errors import ToolError

    if isinstance(exc, ToolError):
        return f"{type(exc).__name__} ({exc.disposition}): {exc}"
    return str(exc)
