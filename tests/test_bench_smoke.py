"""`python -m benchmarks --quick` still runs end to end and covers every workload.

A smoke test only: CI machines are noisy, so nothing here looks at how fast anything was.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WORKLOADS = (
    "Bench.call vs mcp.Client.call_tool, in process (auto)",
    "Bench.call vs mcp.Client.call_tool, in process (legacy)",
    "1. sequential call latency, in process",
    "1. sequential call latency, stdio",
    "2. ",
    "3. fan-out of one tool to 2 servers at 50–250 ms",
    "3. fan-out of one tool to 2 servers, no latency",
    "4. connect and discover",
    "5. catalog of",
    "6. recording",
    "7. Toolset lanes under a saturated slow lane",
)


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_quick_run_writes_every_workload(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["quick"] is True
    assert results["failed"] == []
    workloads = {m["workload"] for m in results["measurements"]}
    for prefix in WORKLOADS:
        assert any(w.startswith(prefix) for w in workloads), (prefix, sorted(workloads))
    for m in results["measurements"]:
        assert m["rounds"] >= 2 and m["min"] <= m["median"] <= m["max"], m
    subjects = {m["subject"] for m in results["measurements"]}
    assert {"toolbench Bench.call", "mcp.Client (SDK, floor)",
            "ClientSessionGroup (SDK)"} <= subjects
    names = {r["name"] for r in results["ratios"]}
    assert "Bench.map / SDK + CapacityLimiter, 20 ms x cap 8" in names
    assert "Bench.compare / slowest server alone (Bench.call), 50–250 ms" in names
    # The single-topic scripts are included (when present) and the machine is described.
    for script in ("bench_mcp", "bench_pegboard"):
        if (REPO / "benchmarks" / f"{script}.py").exists():
            assert script in results["scripts"]
    assert results["machine"]["cores"] >= 1 and results["machine"]["packages"]["mcp"]
    # --quick never builds the mcp<2 venv; it says so instead.
    assert any("mcp<2" in s["reason"] for s in results["skipped"])
    png = (tmp_path / "chart.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert "ratios (medians of the same run)" in proc.stdout
