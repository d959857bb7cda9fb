"""``toolbench call`` and ``toolbench compare``: one tool called from a terminal, or one tool
name called on every server that offers it.

The arguments (``--arg KEY=VALUE``, ``--json``) are read and checked before any config is
read or any server starts, and an argument the tool has no parameter for is refused before
the call: a server may well ignore an unknown key and answer as if it was never given.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from toolbench._cli.command import EXIT_FAILED, EXIT_HELP, EXIT_OK, Commands, UsageError
from toolbench._cli.servers import owners, source_of, start
from toolbench._cli.terminal import err, safe, text_table
from toolbench._core.html import counted
from toolbench._core.ids import did_you_mean

if TYPE_CHECKING:
    from toolbench._core.client import ToolSpec
    from toolbench._notebook.bench import Bench

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


def add(sub: Commands, servers: argparse.ArgumentParser) -> None:
    """``call NAME`` and ``compare NAME``, each with ``--arg`` and ``--json``."""
    raw = argparse.RawDescriptionHelpFormatter
    for name, help_text, epilog, what, run in (
        ("call", "call one tool and print its result", CALL_HELP,
         "SERVER-TOOL (geo-distance) or tool://SERVER/TOOL", call),
        ("compare", "call a tool name on every server that offers it", COMPARE_HELP,
         "a tool's own name (distance)", compare),
    ):
        p = sub.add_parser(name, parents=[servers], formatter_class=raw, help=help_text,
                           description=help_text, epilog=epilog)
        p.add_argument("name", metavar="NAME", help=what)
        p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                       help="one argument, repeatable; VALUE is read as JSON when it parses "
                            "(2, true, [1,2]), else as text")
        p.add_argument("--json", metavar="OBJECT", help="the arguments as one JSON object")
        p.set_defaults(run=run)


# -- arguments ------------------------------------------------------------------------------
def _refuse_constant(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not JSON")


def parse_arguments(pairs: Sequence[str], raw_json: str | None) -> dict[str, Any]:
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


def check_parameters(name: str, arguments: Mapping[str, Any],
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


# -- call -----------------------------------------------------------------------------------
def call(args: argparse.Namespace) -> int:
    arguments = parse_arguments(args.arg, args.json)  # before reading a config
    source = source_of(args)
    owning = owners(source, args.name)
    bench, failed = start(source, owning)
    with bench:
        if not _resolvable(bench, args.name):
            if failed:
                err(f"error: cannot call {args.name!r}: its server failed to start (above)")
                return EXIT_FAILED
            raise UsageError(_unknown_name(bench, args.name))
        _refuse_ambiguous(bench, args.name, owning)
        check_parameters(args.name, arguments, [_spec_of(bench, args.name)])
        result = bench.call(args.name, arguments)
        data = result.data
        print(safe(data if isinstance(data, str)
                   else json.dumps(data, indent=2, default=str)))
    return EXIT_FAILED if failed else EXIT_OK


def _resolvable(bench: Bench, name: str) -> bool:
    from toolbench._core.ids import ToolId

    tid = ToolId.parse(name)
    if tid is not None:
        return any(e.tool == tid.tool for e in bench.pegboard.entries(tid.server))
    return name in bench.pegboard


def _refuse_ambiguous(bench: Bench, name: str, owning: Sequence[str]) -> None:
    """Two servers can own ``name`` (``one`` with ``x-echo``, ``one-x`` with ``echo``): the
    one that registered first would win by a race, so it is a usage error naming both."""
    if len(owning) < 2 or name.startswith("tool://"):
        return
    holder = bench.pegboard.entry(name).tool_id.server
    rows = bench.servers
    clashed = [str(r.name) for r in rows.itertuples(index=False)
               if r.name in owning and r.name != holder and r.status == "failed"
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


# -- compare --------------------------------------------------------------------------------
def compare(args: argparse.Namespace) -> int:
    from toolbench._core.errors import Unreachable

    arguments = parse_arguments(args.arg, args.json)  # before reading a config
    source = source_of(args)
    if args.name.startswith("tool://"):
        owners(source, args.name)  # a malformed reference or unknown server: usage error
    bench, failed = start(source)
    with bench:
        specs = _compared_specs(bench, args.name)
        if specs:
            check_parameters(args.name, arguments, specs)
        try:
            df = bench.compare(args.name, arguments, progress=False)
        except Unreachable as exc:  # no server offers the name
            if failed:
                err(f"error: {exc} (and {counted(failed, 'server')} failed to start, above)")
                return EXIT_FAILED
            raise UsageError(str(exc)) from exc
        print(text_table(df, ["case", "server", "ok", "latency_ms", "text", "error"]))
        bad = df[~df["ok"].astype(bool)]
        if len(bad):
            err(f"{len(bad)} of {counted(len(df), 'call')} failed:")
            for r in bad.itertuples():  # in full: the table cuts long errors short
                print(safe(f"  case {r.case}, {r.server}: {r.error_type}: {r.error}"),
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
