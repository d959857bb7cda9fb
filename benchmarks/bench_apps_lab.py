"""MCP Apps in a real JupyterLab (issue 34): from a call's return to the view's
``ui/notifications/initialized``, for the real ``server-basic-vanillajs`` (npm, pinned).

``bench_apps`` times the bridge without a browser; this is the part a person waits for: the
cell's call returns, the ``AppView`` widget is made and displayed, Lab renders it, the
sandboxed frame loads its ``srcdoc``, the view's own script posts ``ui/initialize``, the
kernel answers, and the view posts ``ui/notifications/initialized`` (then gets the call's
input and result). Aim: at most 500 ms.

A JupyterLab is started on a temporary notebook (headless Chromium through playwright, as in
tests/test_browser_apps.py) whose first cell connects the server over stdio and whose next
``rounds`` cells each run ``result = bench.call('basic-get-time')`` and display ``result``
(its view above its card). One cell per round, run one at a time, each waited for: re-running
one cell would overlap the round with the previous frame's teardown (view.js keeps it 2 s
and a moved iframe reloads). The first round is reported on its own (cold: the first widget
of the page, anywidget's ES module, the kernel's first view).

Where a round's time goes, all from the same wall clock (kernel ``time.time()``, page
``Date.now()``, one machine), each from the call's return (``STEPS``): the widget made in the
kernel; the iframe in the page's DOM; the frame's ``load``; ``ui/initialize`` posted by the
frame; it reaching the widget's comm handler, then the bridge (the view's traffic log,
``view.log``); ``initialized`` posted; it reaching the comm handler, then the bridge (the
figure). Each step's share is the median over rounds of its time minus the step before's.
A control: the same document in a bare sandboxed frame on the same page (no widget, no
kernel), ``srcdoc`` to ``load``, ``CONTROLS`` times per run.

Issue 46 (the first view at once): each round also records the kernel's view warm-up state
before its call (``none`` for code without it), and each run the page's hidden warm-up frames.
``--before DIR`` measures the code before beside this checkout: each run is then two fresh
Labs, one whose kernel imports toolbench from ``DIR`` (first on ``PYTHONPATH``) and one from
here, taking turns at going first. ``--first-gap`` waits between the connecting cell and the
first round (0, the default, is Run All's pace: the warm-up runs beside the first call).

    python -m benchmarks.bench_apps_lab [--rounds 10] [--runs 1] [--json out.json]
    git worktree add /tmp/before-view 71a951c
    python -m benchmarks.bench_apps_lab --runs 10 --before /tmp/before-view [--first-gap 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # tests/ helpers (Lab and Chromium), run as a module or a script
    sys.path.insert(0, str(REPO))

NAME = "apps_lab_bench.ipynb"
PACKAGE = "server-basic-vanillajs"
WAIT_MS = 60_000
"""Every browser wait is bounded by this."""
SETTLE_S = 1.0
"""Pause after a round, so the next starts on a quiet kernel and page."""
STEPS = ("widget made", "iframe in DOM", "iframe load", "ui/initialize posted",
         "ui/initialize at comm", "ui/initialize at bridge", "initialized posted",
         "initialized at comm", "initialized at bridge")
"""A round's steps in order. "at comm": the widget's comm handler on the kernel's thread (a
second ``on_msg`` callback, run just after ``AppView``'s own has handed the message to
toolbench's loop); "at bridge": the bridge's traffic log on that loop (the figure)."""

RECORDER = """
(() => {
  // Stamps (Date.now(): the kernel's wall clock too) of each view frame's life in the page.
  const frames = [];
  const seen = new WeakSet();
  window.__tbFrames = frames;
  const track = (el) => {
    if (seen.has(el)) return;
    seen.add(el);
    const row = { inserted: Date.now(), load: null, posted: {} };
    frames.push(row);
    el.__tbRow = row;
    el.addEventListener("load", () => { if (row.load === null) row.load = Date.now(); });
  };
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) {
      if (!(n instanceof Element)) continue;
      const found = n.matches('iframe[title="MCP App view"]') ? [n]
        : n.querySelectorAll('iframe[title="MCP App view"]');
      for (const f of found) track(f);
    }
  }).observe(document, { childList: true, subtree: true });
  window.addEventListener("message", (event) => {
    const d = event.data;
    if (!d || typeof d.method !== "string") return;
    for (const f of document.querySelectorAll('iframe[title="MCP App view"]')) {
      if (f.contentWindow === event.source && f.__tbRow && !(d.method in f.__tbRow.posted)) {
        f.__tbRow.posted[d.method] = Date.now();
      }
    }
  }, true);
})();
"""
CONTROLS = 5
ALONE = """
() => new Promise((resolve, reject) => {
  // The control: the same document in a bare sandboxed frame on the same page, no widget,
  // no kernel: from setting srcdoc to the frame's load (its inline script has run by then).
  const html = document.querySelector('iframe[title="MCP App view"]').srcdoc;
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.style.width = "800px";
  frame.style.height = "400px";
  const started = Date.now();
  const timer = setTimeout(() => { frame.remove(); reject(new Error("no load in 30 s")); },
                           30000);
  frame.addEventListener("load", () => {
    clearTimeout(timer);
    resolve(Date.now() - started);
    frame.remove();
  });
  frame.srcdoc = html;
  document.body.append(frame);
})
"""
"""How long the view's own document takes alone in this browser (``CONTROLS`` times)."""
WARM_FRAMES = "() => document.querySelectorAll('.toolbench-app-warm iframe').length"
"""Issue 46's hidden warm-up frames in the page (one after a warm-up, none before it)."""


def server_command() -> list[str]:
    """``node …/dist/index.js --stdio`` for the pinned example server (as the tests run it)."""
    from tests.servers.everything import cache_dir
    from tests.test_apps_servers import APPS_VERSION

    node = shutil.which("node")
    root = cache_dir() / "node_modules" / "@modelcontextprotocol" / PACKAGE
    package = root / "package.json"
    if node is None or not package.is_file():
        raise SystemExit(f"needs node and @modelcontextprotocol/{PACKAGE}@{APPS_VERSION}: "
                         f"npm install --prefix {cache_dir()} --no-audit --no-fund "
                         f"@modelcontextprotocol/{PACKAGE}@{APPS_VERSION}")
    found = json.loads(package.read_text(encoding="utf-8")).get("version")
    if found != APPS_VERSION:
        raise SystemExit(f"{PACKAGE} is {found!r}; the tests and this benchmark pin "
                         f"{APPS_VERSION!r}")
    return [node, str(root / "dist" / "index.js"), "--stdio"]


def cells(command: list[str], rounds: int, out: Path) -> list[str]:
    """Setup, one cell per round, and the cell that writes every kernel-side stamp to ``out``."""
    setup = ("# setup\nimport json, time\nimport toolbench as tb\n"
             "bench = tb.Bench(timeout=60)\n"
             f"bench.connect('basic', {command!r})\n"
             "ROUNDS = []\n"
             "def _stamp(row):\n"
             "    def on_msg(_w, content, _b):\n"
             "        m = content.get('message') if isinstance(content, dict) else None\n"
             "        key = m.get('method') if isinstance(m, dict) else None\n"
             "        if isinstance(key, str):\n"
             "            row['comm'].setdefault(key, time.time())\n"
             "    return on_msg\n"
             "def _warm_state():  # issue 46's warm-up (absent before it: 'none')\n"
             "    try:\n"
             "        from toolbench._notebook.view_warmup import warm_views\n"
             "    except ImportError:\n"
             "        return 'none'\n"
             "    return warm_views.state\n"
             "print('ready', bench.catalog()['tool'].tolist())")
    one = ("# round {n}\n_warm_before = _warm_state()\n"
           "result = bench.call('basic-get-time')\n"
           "_row = {'returned': time.time(), 'comm': {}, 'warm_state': _warm_before}\n"
           "_view = result.app\n"
           "_row['widget'] = time.time()\n"
           "_view.on_msg(_stamp(_row))\n"
           "ROUNDS.append((_row, _view))\n"
           "result")
    collect = ("# collect\n_out = []\n"
               "for _row, _view in ROUNDS:\n"
               "    _log = [(d, m, t.timestamp()) for t, d, m in\n"
               "            _view.log[['time', 'direction', 'method']].itertuples(index=False)]\n"
               "    _out.append({**_row, 'log': _log})\n"
               f"open({str(out)!r}, 'w').write(json.dumps(_out))\n"
               "print('COLLECTED', len(_out))")
    return [setup, *(one.replace("{n}", f"{n:02d}") for n in range(1, rounds + 1)), collect]


def _at_bridge(log: list[list[Any]], method: str) -> float | None:
    return next((t for d, m, t in log if d == "in" and m == method), None)


def steps(kernel: dict[str, Any], page: dict[str, Any] | None) -> dict[str, float | None]:
    """Each step of one round in ms after the call returned (None: not seen)."""
    zero = kernel["returned"]

    def ms(t: float | None) -> float | None:
        return None if t is None else (t - zero) * 1000

    posted = (page or {}).get("posted", {})

    def page_ms(key: str) -> float | None:
        return None if page is None or page.get(key) is None else ms(page[key] / 1000)

    return {
        "widget made": ms(kernel["widget"]),
        "iframe in DOM": page_ms("inserted"),
        "iframe load": page_ms("load"),
        "ui/initialize posted": ms(posted["ui/initialize"] / 1000)
        if "ui/initialize" in posted else None,
        "ui/initialize at comm": ms(kernel["comm"].get("ui/initialize")),
        "ui/initialize at bridge": ms(_at_bridge(kernel["log"], "ui/initialize")),
        "initialized posted": ms(posted["ui/notifications/initialized"] / 1000)
        if "ui/notifications/initialized" in posted else None,
        "initialized at comm": ms(kernel["comm"].get("ui/notifications/initialized")),
        "initialized at bridge": ms(_at_bridge(kernel["log"], "ui/notifications/initialized")),
    }


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile, nearest rank (the largest for q=1)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


@contextlib.contextmanager
def lab(rounds: int) -> Iterator[tuple[str, Path]]:
    """A JupyterLab serving the benchmark's notebook; yields its URL and the stamps' file."""
    import nbformat

    from tests.test_browser import serve_lab

    command = server_command()
    tmp = Path(tempfile.mkdtemp(prefix="toolbench-bench-apps-lab-"))
    out = tmp / "rounds.json"

    def put(served: Path) -> None:
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(s) for s in cells(command, rounds, out)]
        notebook.metadata["kernelspec"] = {"name": "python3",
                                           "display_name": "Python 3 (ipykernel)",
                                           "language": "python"}
        nbformat.write(notebook, str(served / NAME))

    try:
        with serve_lab(put, "toolbench-bench-apps-lab-") as url:
            yield url, out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _cell(page: Any, mark: str) -> Any:
    """The cell whose first line is ``# mark`` (found by its text: ``.jp-Cell`` by position
    did not find the round's frame here)."""
    return page.locator(".jp-Cell", has_text=f"# {mark}")


def _run_cell(page: Any, mark: str) -> Any:
    cell = _cell(page, mark)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    return cell


def one_run(rounds: int, first_gap: float = 0.0) -> dict[str, Any]:
    """One Lab, ``rounds`` rounds; every round's steps and the load around it.
    ``first_gap``: seconds between the setup cell's end and the first round (a person
    reading; 0: Run All's pace)."""
    from playwright.sync_api import expect, sync_playwright

    from tests.test_browser import CHROMIUM, CHROMIUM_ARGS

    load_before = os.getloadavg()
    with lab(rounds) as (url, out), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.add_init_script(RECORDER)
            page.goto(f"{url}/lab/tree/{NAME}?reset", timeout=WAIT_MS)
            idle = page.get_by_text("Python 3 (ipykernel) | Idle")
            expect(idle).to_be_visible(timeout=WAIT_MS)
            setup = _run_cell(page, "setup")
            expect(setup.locator(".jp-OutputArea-output")).to_contain_text("ready",
                                                                           timeout=WAIT_MS)
            expect(idle).to_be_visible(timeout=WAIT_MS)
            time.sleep(first_gap)
            for i in range(1, rounds + 1):
                cell = _run_cell(page, f"round {i:02d}")
                frame = cell.locator(".jp-OutputArea-output iframe").content_frame
                expect(frame.locator("#server-time")).not_to_have_text(
                    "Loading...", timeout=WAIT_MS)
                expect(idle).to_be_visible(timeout=WAIT_MS)
                time.sleep(SETTLE_S)
            frames = page.evaluate("() => window.__tbFrames")
            warm_frames = page.evaluate(WARM_FRAMES)
            alone = [page.evaluate(ALONE) for _ in range(CONTROLS)]
            collect = _run_cell(page, "collect")
            expect(collect.locator(".jp-OutputArea-output")).to_contain_text("COLLECTED",
                                                                             timeout=WAIT_MS)
            kernel = json.loads(out.read_text(encoding="utf-8"))
        finally:
            browser.close()
    load_after = os.getloadavg()
    if len(frames) != rounds or len(kernel) != rounds:
        raise RuntimeError(f"{rounds} rounds, but {len(frames)} frames in the page and "
                           f"{len(kernel)} views in the kernel")
    found = [steps(k, f) for k, f in zip(kernel, frames, strict=True)]
    missing = [n for n, row in enumerate(found, 1) if row["initialized at bridge"] is None]
    if missing:
        raise RuntimeError(f"rounds {missing}: the bridge never logged initialized")
    return {"rounds": found,
            "warm_states": [k.get("warm_state") for k in kernel],
            "warm_frames": warm_frames, "first_gap_s": first_gap,
            "srcdoc_alone_ms": alone,
            "load_before": load_before, "load_after": load_after}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Cold (each run's first round) and warm (the others) figures, per run and pooled."""
    per_run = []
    for run in runs:
        warm = [r["initialized at bridge"] for r in run["rounds"][1:]]
        per_run.append({"cold_ms": run["rounds"][0]["initialized at bridge"],
                        "warm_p50_ms": pct(warm, 0.5), "warm_p90_ms": pct(warm, 0.9),
                        "warm_worst_ms": max(warm),
                        "srcdoc_alone_ms": statistics.median(run["srcdoc_alone_ms"]),
                        "load_before": run["load_before"],
                        "load_after": run["load_after"]})
    medians: dict[str, dict[str, float | None]] = {}
    shares: dict[str, dict[str, float | None]] = {}
    for label, pick in (("cold", lambda rs: rs[:1]), ("warm", lambda rs: rs[1:])):
        chosen = [r for run in runs for r in pick(run["rounds"])]
        medians[label] = {step: statistics.median(v) if (v := [
            r[step] for r in chosen if r[step] is not None]) else None for step in STEPS}
        shares[label] = {}
        for before, step in zip(("returned", *STEPS), STEPS, strict=False):
            got = [r[step] - (0.0 if before == "returned" else r[before]) for r in chosen
                   if r[step] is not None and (before == "returned" or r[before] is not None)]
            shares[label][step] = statistics.median(got) if got else None
    return {"per_run": per_run, "step_medians_ms": medians, "step_shares_ms": shares}


@contextlib.contextmanager
def kernel_code(checkout: Path | None) -> Iterator[None]:
    """The kernel imports toolbench from ``checkout`` (first on its ``PYTHONPATH``: a Lab
    started now inherits it), or from wherever this Python finds it (None)."""
    if checkout is None:
        yield
        return
    kept = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout), kept) if p)
    try:
        yield
    finally:
        if kept is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = kept


def report(label: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Print one subject's runs (each Lab, cold and warm medians, each step); its summary."""
    result = summary(runs)
    print(f"== {label}")
    for n, row in enumerate(result["per_run"], 1):
        print(f"run {n}: cold {row['cold_ms']:.0f} ms; warm p50 {row['warm_p50_ms']:.0f} / "
              f"p90 {row['warm_p90_ms']:.0f} / worst {row['warm_worst_ms']:.0f} ms; "
              f"the document alone {row['srcdoc_alone_ms']:.0f} ms "
              f"(load {row['load_before'][0]:.2f} -> {row['load_after'][0]:.2f})")
    colds = [row["cold_ms"] for row in result["per_run"]]
    warms = [r["initialized at bridge"] for run in runs for r in run["rounds"][1:]]
    print(f"cold (first view of each Lab): median {statistics.median(colds):.0f} ms, "
          f"{min(colds):.0f}-{max(colds):.0f} over {len(colds)} Labs; warm: median "
          f"{statistics.median(warms):.0f} ms over {len(warms)} rounds")
    print("per step, median ms after the call's return (and its share: minus the step before)")

    def shown(value: float | None) -> str:
        return "   -   " if value is None else f"{value:7.1f}"

    for step in STEPS:
        at, share = result["step_medians_ms"], result["step_shares_ms"]
        print(f"  {step:<24} cold {shown(at['cold'][step])} ({shown(share['cold'][step])})"
              f"   warm {shown(at['warm'][step])} ({shown(share['warm'][step])})")
    return {"runs": runs, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=1, help="fresh Labs, one after another")
    parser.add_argument("--json", type=Path, help="write every round's steps here")
    parser.add_argument("--first-gap", type=float, default=0.0,
                        help="seconds from the setup cell's end to the first round (0: as "
                             "Run All; a person reading takes longer)")
    parser.add_argument("--before", type=Path,
                        help="a checkout of the code before (git worktree add DIR <commit>): "
                             "each run is then a pair of fresh Labs, one whose kernel imports "
                             "toolbench from DIR and one from this checkout, in turns")
    args = parser.parse_args()
    if not 2 <= args.rounds <= 99:
        parser.error("--rounds must be 2 to 99 (the first is cold)")
    if not 0 <= args.first_gap <= 60:
        parser.error("--first-gap must be 0 to 60 seconds")
    if args.before is not None and not (args.before / "toolbench" / "__init__.py").is_file():
        parser.error(f"--before {args.before}: no toolbench/__init__.py there")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"uptime before: {uptime.strip()}")
    subjects: dict[str, Path | None] = {"after": None}
    if args.before is not None:
        subjects = {"before": args.before.resolve(), "after": None}
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in subjects}
    for n in range(1, args.runs + 1):  # each printed as it ends: a long batch shows progress
        order = list(subjects) if n % 2 else list(reversed(subjects))  # drift hits both
        for label in order:
            with kernel_code(subjects[label]):
                run = one_run(args.rounds, args.first_gap)
            runs[label].append(run)
            first = run["rounds"][0]["initialized at bridge"]
            warm = statistics.median(r["initialized at bridge"] for r in run["rounds"][1:])
            print(f"  lab {n} {label}: cold {first:.0f} ms, warm p50 {warm:.0f} ms, warm-up "
                  f"{run['warm_states'][0]!r} at round 1, {run['warm_frames']} warm "
                  f"frame(s), load {os.getloadavg()[0]:.2f}", flush=True)
    results = {label: report(label if args.before else "this checkout", subject_runs)
               for label, subject_runs in runs.items()}
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"uptime after: {uptime.strip()}")
    if args.json:
        args.json.write_text(json.dumps(results if args.before else results["after"],
                                        indent=1))


if __name__ == "__main__":
    main()
