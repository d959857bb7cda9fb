"""``toolbench report``: the catalog report (``df.tb.report()``) from a terminal, for CI.

It starts the servers the other commands would (``./mcp.json``, ``--config FILE`` or the
bundled demo servers; ``--server NAME``, repeatable, starts only those), reports their
catalogs, prints the per-server table and every finding, and exits 1 when a finding reaches
``--fail-on`` (``error`` or ``warning``) or a server failed to start, so a server's author
can run it in CI. ``--json`` prints the same as one JSON object (ASCII only: a hidden
character in a server's text arrives as ``\\u200b``, never raw on the terminal).

It starts servers as ``catalog`` does (``servers.py``), and prints through ``terminal.py``.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from toolbench._cli.command import EXIT_FAILED, EXIT_OK, Commands
from toolbench._cli.servers import source_of, start
from toolbench._cli.terminal import err, safe

if TYPE_CHECKING:
    import pandas as pd

FAIL_ON = ("error", "warning")
TOKENIZERS = ("auto", "cl100k_base", "estimate")

HELP = "report each server's catalog: its cost in tokens, its documentation, its findings"
EPILOG = """\
Every finding names a rule (`python -c "import toolbench; print(toolbench.report_rules())"`
lists them). The rules only report: nothing is blocked.

examples:
  toolbench report                              # ./mcp.json, else the demo servers
  toolbench report --config servers.json --server mine --fail-on warning
  toolbench report --json > report.json

exit status:
  0  no finding reaches --fail-on (or no --fail-on), and every server started
  1  a finding reaches --fail-on, or a server failed to start (on stderr)
  2  usage error: a bad command line or config file, or an unknown --server
  3  a bug in toolbench (a traceback is printed); please report it
"""


def add(sub: Commands, servers: argparse.ArgumentParser) -> None:
    """``report [--server NAME]... [--fail-on error|warning] [--json] [--tokenizer T]``."""
    p = sub.add_parser("report", parents=[servers], help=HELP, description=HELP,
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", action="append", default=[], metavar="NAME",
                   help="report only this server (repeatable; only these are started)")
    p.add_argument("--fail-on", choices=FAIL_ON, default=None,
                   help="exit 1 when a finding is this severe or worse (error, or error and "
                        "warning)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: the servers, every tool and its findings")
    p.add_argument("--tokenizer", choices=TOKENIZERS, default="auto",
                   help="how tokens are counted: cl100k_base (pip install "
                        "'toolbench[tokens]'), the estimate, or auto (the best installed)")
    p.set_defaults(run=report)


def report(args: argparse.Namespace) -> int:
    """Start the servers, report them, print; the exit status says whether to fail CI."""
    from toolbench._bench.report.report import report as report_of
    from toolbench._bench.report.rules import reaches
    from toolbench._bench.report.tokens import counter

    source = source_of(args)
    names: list[str] = list(dict.fromkeys(args.server))
    for name in names:
        source.check_server(name)
    tokenizer = None if args.tokenizer == "auto" else str(args.tokenizer)
    counter(tokenizer)  # a tokenizer that is not installed: a usage error before any start
    bench, failed = start(source, names or None)
    with bench:
        catalog = bench.catalog()
        servers = bench.servers
        failed_names = [str(n) for n in servers.loc[servers["status"] == "failed", "name"]]
    tools = report_of(catalog, tokenizer=tokenizer)
    summary = report_of(tools, by="server")
    findings = _findings(tools)
    reached = [f for f in findings if args.fail_on and reaches(f["severity"], args.fail_on)]
    if args.json:
        print(json.dumps(_payload(tools, summary, failed_names, args.fail_on, len(reached)),
                         indent=2, ensure_ascii=True, default=str))
    else:
        print(_text(summary, findings))
    if reached:
        noun = "finding reaches" if len(reached) == 1 else "findings reach"
        err(f"{len(reached):,} {noun} {args.fail_on!r} (--fail-on {args.fail_on})")
    return EXIT_FAILED if reached or failed else EXIT_OK


def _findings(tools: pd.DataFrame) -> list[dict[str, str]]:
    """Every finding with its server and tool, the worst first."""
    from toolbench._bench.report.rules import SEVERITIES

    out: list[dict[str, str]] = []
    for server, tool, found in zip(tools["server"], tools["tool"], tools["findings"],
                                   strict=True):
        out.extend({"server": str(server), "tool": str(tool), **f} for f in found)
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    out.sort(key=lambda f: (rank.get(f["severity"], len(rank)), f["server"], f["tool"]))
    return out


def _payload(tools: pd.DataFrame, summary: pd.DataFrame, failed: list[str],
             fail_on: str | None, reached: int) -> dict[str, Any]:
    return {
        "servers": _records(summary),
        "tools": _records(tools),
        "failed_servers": failed,
        "fail_on": fail_on,
        "findings_reaching_fail_on": reached,
    }


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts: NaN (no parameters) becomes null."""
    rows: list[dict[str, Any]] = [{str(k): v for k, v in r.items()}
                                  for r in df.to_dict("records")]
    for row in rows:
        for key, value in row.items():
            if isinstance(value, float) and value != value:
                row[key] = None
    return rows


def _text(summary: pd.DataFrame, findings: list[dict[str, str]]) -> str:
    if summary.empty:
        return "(no tools)"
    shown = summary.copy()
    shown["tokens"] = [f"{int(t):,}" for t in shown["tokens"]]
    shown["documented"] = ["—" if d != d else f"{d:.0%}" for d in shown["documented"]]
    tokenizers = ", ".join(sorted(set(map(str, shown.pop("tokenizer")))))
    lines = [safe(shown.to_string(index=False)), f"(tokens counted with {tokenizers})", ""]
    counts = {s: sum(1 for f in findings if f["severity"] == s)
              for s in ("error", "warning", "info")}
    lines.append(f"findings: {counts['error']} errors, {counts['warning']} warnings, "
                 f"{counts['info']} infos" + (":" if findings else ""))
    for f in findings:
        lines.append(safe(f"  {f['severity']:<8} {f['server']}/{f['tool']}  {f['rule']}: "
                           f"{f['message']}"))
    return "\n".join(lines)
