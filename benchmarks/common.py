"""What every benchmark shares: the servers it talks to, the timing, and the figures' shape.

A figure is a :class:`Measurement`: one subject (``toolbench Bench.call``, ``mcp.Client``,
...) in one workload, with every repeat kept, so the runner can report the median and the
min–max instead of one lucky number. A :class:`Ratio` compares two medians of the same run.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
LATENCY_SERVER = BENCH_DIR / "servers" / "latency_server.py"

def server_argv(latency_ms: float = 0.0, name: str = "latency",
                python: str | None = None) -> list[str]:
    """The command that starts the latency server over stdio (the same script for every peer)."""
    return [python or sys.executable, str(LATENCY_SERVER), "--latency-ms", str(latency_ms),
            "--name", name]


def inprocess_server(name: str = "inproc") -> Any:
    """The in-process twin of the latency server (no waiting): the same tools, no child."""
    # The server is a script run by path (also inside the mcp<2 peers' venv), not a module of
    # this package: load it from its file, without touching sys.path.
    spec = importlib.util.spec_from_file_location("latency_server", LATENCY_SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(name, 0.0)


@dataclass
class Measurement:
    """One subject in one workload: every repeat, in ``unit``."""

    workload: str
    subject: str
    unit: str
    samples: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload, "subject": self.subject, "unit": self.unit,
            "median": self.median, "min": min(self.samples), "max": max(self.samples),
            "rounds": len(self.samples), "samples": list(self.samples), "note": self.note,
        }


@dataclass
class Ratio:
    """``numerator`` / ``denominator`` medians (same run); ``target`` is an upper bound."""

    name: str
    value: float
    target: float | None = None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        met = None if self.target is None else self.value <= self.target
        return {"name": self.name, "value": self.value, "target": self.target, "met": met,
                "note": self.note}


class Figures:
    """What one benchmark module hands the runner: measurements, ratios, skips, notes."""

    def __init__(self) -> None:
        self.measurements: dict[tuple[str, str], Measurement] = {}
        self.ratios: list[Ratio] = []
        self.skipped: list[dict[str, str]] = []
        self.notes: list[str] = []

    def add(self, workload: str, subject: str, unit: str, value: float, note: str = "") -> None:
        key = (workload, subject)
        m = self.measurements.get(key)
        if m is None:
            m = self.measurements[key] = Measurement(workload, subject, unit, note=note)
        m.samples.append(value)

    def median(self, workload: str, subject: str) -> float:
        return self.measurements[(workload, subject)].median

    def ratio(self, name: str, workload: str, num: str, den: str, target: float | None = None,
              note: str = "") -> None:
        """Ratio of two medians, if both were measured (a skipped peer leaves no ratio)."""
        if (workload, num) in self.measurements and (workload, den) in self.measurements:
            self.ratios.append(Ratio(name, self.median(workload, num) / self.median(workload, den),
                                     target, note))

    def skip(self, subject: str, reason: str) -> None:
        print(f"  skipped {subject}: {reason}", flush=True)
        self.skipped.append({"subject": subject, "reason": reason})

    def as_dict(self) -> dict[str, Any]:
        return {
            "measurements": [m.as_dict() for m in self.measurements.values()],
            "ratios": [r.as_dict() for r in self.ratios],
            "skipped": self.skipped,
            "notes": self.notes,
        }


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def per_call_us(total_s: float, calls: int) -> float:
    return total_s / calls * 1e6


def rounds_for(quick: bool, full: int = 5, small: int = 2) -> int:
    return small if quick else full


def progress(message: str) -> None:
    print(f"  {message}", flush=True)


def mcp_config(servers: Mapping[str, list[str]]) -> dict[str, Any]:
    """An ``mcpServers`` config (the desktop-client format) for commands keyed by name."""
    return {"mcpServers": {name: {"command": argv[0], "args": argv[1:]}
                           for name, argv in servers.items()}}


def names(prefix: str, count: int) -> Iterable[str]:
    return (f"{prefix}{i:02d}" for i in range(count))
