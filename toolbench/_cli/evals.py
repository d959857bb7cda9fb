"""``toolbench eval``: run eval cases against the servers with the user's model, for CI.

``toolbench eval CASES --model pkg.module:function`` starts the servers the other commands
would (``./mcp.json``, ``--config FILE`` or the bundled demo servers; ``--server NAME``,
repeatable, starts only those), runs ``bench.evaluate`` and prints each server's scores and
the rows that failed. ``--fail-under 0.9`` exits 1 when a server's pass rate is under 0.9 (or
a server failed to start), so a server's author can gate CI on how well a model uses their
tools. ``--json`` prints the scores and every row as one JSON object (ASCII only).

The model is the user's: ``--model`` names a callable to import, ``module:attribute`` as
uvicorn and gunicorn take an app (the current directory is importable, so
``--model evals.model:ask`` finds ``./evals/model.py``). toolbench calls no provider itself.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from typing import TYPE_CHECKING, Any

from toolbench._cli.command import EXIT_FAILED, EXIT_OK, Commands, UsageError
from toolbench._cli.servers import source_of, start
from toolbench._cli.terminal import err, safe

if TYPE_CHECKING:
    import pandas as pd

HELP = "score the servers by how well a model uses their tools (eval cases, for CI)"
SHOWN_FAILURES = 20
"""The most failed rows the text output lists (``--json`` has them all)."""
EPILOG = """\
A case is {"id", "prompt", "expect": [{"tool", "arguments", "match"}], "forbid", "order"}
with bare tool names (distance), so one case runs on every server that has the tool. CASES
is a .json, .jsonl or .yaml file (YAML: pip install 'toolbench[evals]').

examples:
  toolbench eval cases.yaml --model mymodels:gpt4o
  toolbench eval cases.json --model mymodels:gpt4o --server mine --fail-under 0.9
  toolbench eval cases.json --model mymodels:gpt4o --repeats 3 --json > eval.json
  toolbench eval cases.json --model mymodels:gpt4o --steps 4 --retries 5 --rate 10/s

exit status:
  0  every server's pass rate is at least --fail-under (or no --fail-under)
  1  a server's pass rate is under --fail-under, or a server failed to start (on stderr)
  2  usage error: a bad command line, cases file or config, a --model that cannot be
     imported, or a tool no server has
  3  a bug in toolbench (a traceback is printed); please report it
"""


def add(sub: Commands, servers: argparse.ArgumentParser) -> None:
    """``eval CASES --model MODULE:FUNCTION [--server NAME]... [--fail-under RATE] ...``."""
    p = sub.add_parser("eval", parents=[servers], help=HELP, description=HELP, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", metavar="CASES", help="a .json, .jsonl or .yaml file of cases")
    p.add_argument("--model", required=True, metavar="MODULE:FUNCTION",
                   help="the model to import: a function(messages, tools) in the OpenAI chat "
                        "format, e.g. mymodels:gpt4o")
    p.add_argument("--server", action="append", default=[], metavar="NAME",
                   help="evaluate only this server (repeatable; only these are started)")
    p.add_argument("--repeats", type=int, default=1, metavar="N",
                   help="run each case N times on each server (default 1)")
    p.add_argument("--steps", type=int, default=1, metavar="N",
                   help="model replies per run; 1 (default) scores the first reply and calls "
                        "no tool")
    p.add_argument("--concurrency", type=int, default=4, metavar="N",
                   help="model requests in flight at once (default 4)")
    p.add_argument("--retries", type=int, default=0, metavar="N",
                   help="with --steps > 1: try a tool call again up to N times when the "
                        "server was busy (HTTP 429/503 before it ran anything; default 0)")
    p.add_argument("--rate", default=None, metavar="R",
                   help="with --steps > 1: at most R tool calls per server, e.g. 10/s or "
                        "600/min (default: no limit)")
    p.add_argument("--journal", default=None, metavar="FILE",
                   help="append each finished row to FILE (e.g. eval.jsonl)")
    p.add_argument("--resume", action="store_true",
                   help="with --journal: ask only for the rows FILE does not hold")
    p.add_argument("--fail-under", type=_rate, default=None, metavar="RATE",
                   help="exit 1 when a server's pass rate is under RATE (0 to 1, e.g. 0.9)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: each server's scores and every row")
    p.set_defaults(run=evaluate)


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"a pass rate from 0 to 1 (0.9 is 90 %), not {text!r}")
    return value


def load_model(spec: str) -> Any:
    """The callable ``module:attribute`` names; a usage error says what is wrong."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise UsageError(f"--model {spec!r}: write MODULE:FUNCTION, e.g. mymodels:gpt4o")
    if os.getcwd() not in sys.path:  # ./mymodels.py, as `python -m` would find it
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"--model {spec!r}: cannot import {module_name!r}: {exc}") from exc
    except Exception as exc:  # the user's module failed as it ran (no API key, a typo)
        raise UsageError(f"--model {spec!r}: importing {module_name!r} raised "
                         f"{type(exc).__name__}: {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise UsageError(f"--model {spec!r}: {module_name!r} has no {attribute!r}")
        found = getattr(found, part)
    if not callable(found):
        raise UsageError(f"--model {spec!r} is a {type(found).__name__}, not a function("
                         "messages, tools)")
    return found


def evaluate(args: argparse.Namespace) -> int:
    """Start the servers, evaluate, print; the exit status says whether to fail CI."""
    from toolbench._bench.calls.retry import check_retries
    from toolbench._bench.models.cases import read_cases
    from toolbench._core.rates import parse_rate

    if args.resume and args.journal is None:
        raise UsageError("--resume needs --journal FILE")
    try:  # before a server starts; evaluate checks them again by the same rules
        check_retries(args.retries)
        parse_rate(args.rate)
    except ValueError as exc:
        raise UsageError(f"--{str(exc).removeprefix('invalid ')}") from exc
    source = source_of(args)
    names: list[str] = list(dict.fromkeys(args.server))
    for name in names:
        source.check_server(name)
    try:
        cases = read_cases(args.cases)  # a bad file fails before a server starts
    except ImportError as exc:  # a YAML file without pyyaml: say what to install
        raise UsageError(str(exc)) from exc
    model = load_model(args.model)
    bench, failed = start(source, names or None)
    with bench:
        up = [str(n) for n, s in zip(bench.servers["name"], bench.servers["status"],
                                     strict=True) if s == "connected"]
        if not up:
            err("error: no server started; nothing was evaluated")
            return EXIT_FAILED
        rows = bench.evaluate(model, cases, servers=up, repeats=args.repeats,
                              steps=args.steps, concurrency=args.concurrency,
                              journal=args.journal, resume=args.resume, progress=False,
                              retries=args.retries, rate=args.rate)
    scores = rows.tb.scores()
    under = [] if args.fail_under is None else [
        str(s) for s, rate in zip(scores.index, scores["pass_rate"], strict=True)
        if not rate >= args.fail_under]
    if args.json:
        print(json.dumps(_payload(scores, rows, args.fail_under, under), indent=2,
                         ensure_ascii=True, default=str))
    else:
        print(_text(scores, rows))
    if under:
        err(f"{len(under)} server{'s' * (len(under) != 1)} under --fail-under "
            f"{args.fail_under:g}: {', '.join(under)}")
    return EXIT_FAILED if under or failed else EXIT_OK


def _payload(scores: pd.DataFrame, rows: pd.DataFrame, fail_under: float | None,
             under: list[str]) -> dict[str, Any]:
    return {"servers": _records(scores.reset_index()), "rows": _records(rows),
            "fail_under": fail_under, "under": under}


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN becomes null."""
    out: list[dict[str, Any]] = []
    for record in df.to_dict("records"):
        row = {str(k): v for k, v in record.items()}
        for key, value in row.items():
            if isinstance(value, float) and math.isnan(value):
                row[key] = None
        out.append(row)
    return out


def _text(scores: pd.DataFrame, rows: pd.DataFrame) -> str:
    lines = []
    for server, s in scores.iterrows():
        lines.append(safe(
            f"{server}: {int(s['passed'])}/{int(s['rows'])} passed ({_pct(s['pass_rate'])}; "
            f"95 % interval {_pct(s['pass_low'])} to {_pct(s['pass_high'])}); tool choice "
            f"precision {_pct(s['precision'])}, recall {_pct(s['recall'])}; arguments "
            f"{_pct(s['args_accuracy'])}; {int(s['errors'])} model errors"))
    failed = rows[~rows["passed"].astype(bool)]
    if len(failed):
        lines.append(f"\nfailed rows ({len(failed)}"
                     + (f", the first {SHOWN_FAILURES}" if len(failed) > SHOWN_FAILURES else "")
                     + "):")
        for r in failed.head(SHOWN_FAILURES).to_dict("records"):
            why = r["error"] or (f"forbidden {r['forbidden']}" if r["forbidden"] else
                                 "arguments" if r["tool_ok"] and not r["args_ok"] else
                                 "order" if r["tool_ok"] and not r["order_ok"] else
                                 "tool choice")
            lines.append(safe(f"  {r['case']} on {r['server']} (repeat {r['repeat']}): "
                              f"expected {r['expected']}, called {r['called']}: {why}"))
    return "\n".join(lines)


def _pct(value: Any) -> str:
    return "—" if value is None or value != value else f"{value:.0%}"
