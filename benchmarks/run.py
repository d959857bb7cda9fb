"""The one runner: every benchmark, one table of medians and ratios, results.json and a chart.

    python -m benchmarks            # the full run (several minutes)
    python -m benchmarks --quick    # everything small, under a minute; asserts nothing about speed

Each benchmark module exposes ``run(quick) -> dict``. Modules built on benchmarks/common.py
return measurements with every repeat kept; the single-topic scripts (bench_mcp,
bench_pegboard) return their own figures, which are reported as they are. bench_toolset
is run once per round here, so workload 7 has repeats like the others.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks import common

MODULES = ("bench_bench", "bench_journal", "bench_peers", "bench_sweep", "bench_cluster",
           "bench_toolset", "bench_mcp", "bench_pegboard", "bench_neighbours")
"""Order matters a little: the heavy stdio work runs before the small in-process scripts;
bench_neighbours (50 MB replies, notification floods) runs last so its load touches no other."""
W7 = "7. Toolset lanes under a saturated slow lane"
PEERS = ("mcp", "ClientSessionGroup", "fastmcp", "langchain", "pandas")
"""Subjects that are not toolbench (drawn blue); everything else is toolbench's own code."""
PACKAGES = ("toolbench", "mcp", "fastmcp", "anyio", "pandas", "matplotlib", "pydantic",
            "jsonschema", "distributed")


def machine() -> dict[str, Any]:
    """What the figures depend on: cores, Python, versions, and how busy the box was."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    mcp1 = common.BENCH_DIR / ".venv-mcp1" / "bin" / "python"
    if mcp1.exists():
        try:
            out = subprocess.run([str(mcp1), "-c", "from importlib.metadata import version as v;"
                                  "print(v('mcp'), v('langchain-mcp-adapters'))"],
                                 capture_output=True, text=True, timeout=60, check=True)
            mcp_1x, adapters = out.stdout.split()
            versions["mcp (mcp<2 venv)"], versions["langchain-mcp-adapters"] = mcp_1x, adapters
        except (subprocess.SubprocessError, OSError, ValueError):
            pass
    return {
        "git": _git(),
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "packages": versions,
        "load_average_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _git() -> str | None:
    """The commit measured, and whether the working tree differed from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=common.REPO,
                              capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "toolbench"],
                               cwd=common.REPO, capture_output=True, text=True, timeout=10)
    except (subprocess.SubprocessError, OSError):
        return None
    return head.stdout.strip() + (" (toolbench/ modified)" if dirty.stdout.strip() else "")


def _toolset_rounds(mod: Any, quick: bool, rounds: int) -> dict[str, Any]:
    """bench_toolset.run once per round, folded into measurements (workload 7)."""
    figures = common.Figures()
    raw = []
    for _ in range(rounds):
        f = mod.run(quick)
        raw.append(f)
        for key, label in (("fast_with_lanes", "fast requests, lanes (slow 6, fast 2)"),
                           ("fast_one_pool", "fast requests, one pool (no lanes)")):
            figures.add(W7, f"{label}: p50", "ms", f[key]["p50_ms"])
            figures.add(W7, f"{label}: p95", "ms", f[key]["p95_ms"])
        figures.add(W7, "Toolset.deliver throughput (no-op)", "req/s", f["deliver_per_s"])
        figures.add(W7, "Toolset.call throughput (no-op)", "req/s", f["call_per_s"])
    figures.ratio("fast p95 with lanes / one pool, slow lane saturated", W7,
                  "fast requests, lanes (slow 6, fast 2): p95",
                  "fast requests, one pool (no lanes): p95")
    out = figures.as_dict()
    out["workload"] = raw[-1].get("workload")
    return out


def run_all(quick: bool, only: list[str] | None = None) -> dict[str, Any]:
    results: dict[str, Any] = {"quick": quick, "machine": machine(), "modules": {},
                               "measurements": [], "ratios": [], "skipped": [], "missing": [],
                               "failed": [], "scripts": {}}
    for name in MODULES:
        if only and name not in only:
            continue
        print(f"== {name}", flush=True)
        try:
            mod = importlib.import_module(f"benchmarks.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"benchmarks.{name}":
                print(f"  missing: benchmarks/{name}.py is not there", flush=True)
                results["missing"].append(name)
                continue
            raise
        started = time.perf_counter()
        try:
            if name == "bench_toolset":
                data = _toolset_rounds(mod, quick, common.rounds_for(quick, full=5, small=2))
            else:
                data = mod.run(quick)
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            traceback.print_exc()
            results["failed"].append({"module": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        elapsed = time.perf_counter() - started
        results["modules"][name] = {"elapsed_s": round(elapsed, 2)}
        print(f"  done in {elapsed:.1f} s", flush=True)
        if "measurements" in data:
            for m in data["measurements"]:
                results["measurements"].append({**m, "module": name})
            results["ratios"].extend({**r, "module": name} for r in data.get("ratios", []))
            results["skipped"].extend(data.get("skipped", []))
            results["notes"] = results.get("notes", []) + data.get("notes", [])
            if "workload" in data:
                results["scripts"][name] = {"workload": data["workload"]}
        else:
            results["scripts"][name] = data
    results["machine"]["load_average_at_end"] = (list(os.getloadavg())
                                                 if hasattr(os, "getloadavg") else None)
    return results


# -- printing ---------------------------------------------------------------------------------
def _fmt(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _flat(prefix: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for key, sub in value.items():
            out.extend(_flat(f"{prefix}.{key}" if prefix else str(key), sub))
        return out
    return [(prefix, value)]


def table(results: dict[str, Any]) -> str:
    lines: list[str] = []
    m = results["machine"]
    lines.append(f"machine: {m['cores']} cores, {m['implementation']} {m['python']}, "
                 f"{m['platform']}; load average at start {m['load_average_at_start']}; "
                 f"commit {m.get('git')}")
    lines.append("packages: " + ", ".join(f"{k} {v}" for k, v in m["packages"].items() if v))
    for workload, rows in _grouped(results).items():
        lines.append("")
        lines.append(workload)
        lines.append(f"  {'subject':<58}{'median':>12}{'min–max':>22}  unit")
        for row in rows:
            lines.append(_row(row))
    return _tail(results, lines)


def _grouped(results: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Measurements by workload, in first-seen order (peers from other venvs join theirs)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in results["measurements"]:
        groups.setdefault(row["workload"], []).append(row)
    return groups


def _row(row: dict[str, Any]) -> str:
    spread = f"{_fmt(row['min'])}–{_fmt(row['max'])}"
    return (f"  {row['subject'][:58]:<58}{_fmt(row['median']):>12}{spread:>22}  "
            f"{row['unit']} (n={row['rounds']})")


def _tail(results: dict[str, Any], lines: list[str]) -> str:
    lines.append("")
    lines.append("ratios (medians of the same run)")
    for r in results["ratios"]:
        target = ""
        if r["target"] is not None:
            target = f"target ≤ {r['target']}: {'met' if r['met'] else 'MISSED'}"
        lines.append(f"  {r['name'][:70]:<70}{r['value']:>8.3f}  {target}")
    for name, data in results["scripts"].items():
        if name == "bench_toolset":
            continue
        lines.append("")
        lines.append(f"{name} (its own repeats and medians)")
        for key, value in _flat("", data):
            shown = f"{value:,.3f}" if isinstance(value, float) else str(value)
            lines.append(f"  {key:<60}{shown:>16}")
    for s in results["skipped"]:
        lines.append(f"skipped {s['subject']}: {s['reason']}")
    for name in results["missing"]:
        lines.append(f"missing: benchmarks/{name}.py")
    for f in results["failed"]:
        lines.append(f"FAILED {f['module']}: {f['error']}")
    return "\n".join(lines)


# -- the chart --------------------------------------------------------------------------------
def chart(results: dict[str, Any], path: Path) -> None:
    """One panel per workload: median bars with min–max whiskers; toolbench orange, peers blue."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list[dict[str, Any]]] = {}
    for workload, rows_ in _grouped(results).items():
        units = sorted({r["unit"] for r in rows_})
        for unit in units:  # one axis per unit: ms and req/s do not share a scale
            title = workload if len(units) == 1 else f"{workload} [{unit}]"
            groups[title] = [r for r in rows_ if r["unit"] == unit]
    cols = 2
    rows = (len(groups) + cols - 1) // cols
    heights = [max(len(g) for g in list(groups.values())[i * cols:(i + 1) * cols])
               for i in range(rows)]
    fig, axes = plt.subplots(rows, cols, figsize=(17, 0.42 * sum(heights) + 1.6 * rows),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (workload, items) in zip(axes.flat, groups.items(), strict=False):
        labels = [i["subject"] for i in items]
        med = [i["median"] for i in items]
        lo = [i["median"] - i["min"] for i in items]
        hi = [i["max"] - i["median"] for i in items]
        colors = ["tab:blue" if i["subject"].startswith(PEERS) else "tab:orange"
                  for i in items]
        y = range(len(items))
        ax.barh(y, med, xerr=[lo, hi], color=colors, capsize=3)
        ax.set_yticks(list(y), labels, fontsize=8)
        ax.invert_yaxis()
        units = sorted({i["unit"] for i in items})
        ax.set_xlabel(", ".join(units), fontsize=8)
        ax.set_title(workload, fontsize=9, loc="left")
        ax.tick_params(axis="x", labelsize=8)
        if max(med) / max(min(med), 1e-12) > 50:
            ax.set_xscale("log")
        for yi, value in zip(y, med, strict=True):
            ax.annotate(_fmt(value), (value, yi), fontsize=7, xytext=(3, -8),
                        textcoords="offset points")
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    m = results["machine"]
    fig.suptitle(f"toolbench benchmarks (median, whiskers min–max) · {m['cores']} cores · "
                 f"Python {m['python']} · mcp {m['packages'].get('mcp')}"
                 f"{' · QUICK' if results['quick'] else ''}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="everything small (a smoke test, under a minute); no timing asserted")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {MODULES}")
    parser.add_argument("--out", default=str(common.BENCH_DIR),
                        help="where results.json and chart.png go (default: benchmarks/)")
    parser.add_argument("--chart-only", action="store_true",
                        help="redraw chart.png (and reprint the table) from results.json")
    args = parser.parse_args(argv)
    if args.chart_only:
        results = json.loads((Path(args.out) / "results.json").read_text())
        print(table(results))
        chart(results, Path(args.out) / "chart.png")
        return 0
    only = [s.strip() for s in args.only.split(",") if s.strip()] or None
    unknown = sorted(set(only or []) - set(MODULES))
    if unknown:
        parser.error(f"--only: unknown benchmarks {unknown}; known: {list(MODULES)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results = run_all(args.quick, only)
    results["elapsed_s"] = round(time.perf_counter() - started, 1)
    print()
    print(table(results))
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(results, indent=1, default=str) + "\n")
    tmp.replace(out / "results.json")
    try:
        chart(results, out / "chart.png")
    except Exception as exc:  # the figures are in results.json either way
        print(f"chart not drawn: {type(exc).__name__}: {exc}")
    print(f"\nwrote {out / 'results.json'} and {out / 'chart.png'} "
          f"in {results['elapsed_s']} s total")
    return 1 if results["failed"] else 0




if __name__ == "__main__":
    sys.exit(main())
