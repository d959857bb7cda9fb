"""The tutorial notebooks, executed top to bottom in a real kernel running this venv's Python.

Each notebook runs once per session (``scripts/run_notebooks.py`` does the running: a private
kernelspec, so a user-level ``python3`` kernel elsewhere cannot be picked up). The tests then
read what a reader would see (the outputs), plus a *probe*: a cell appended in memory that
prints the notebook's own variables as JSON, so the checks do not depend on table layout.
After the probe, a check cell reports the kernel's interpreter and its child processes, so a
notebook that forgets ``bench.close()`` fails here instead of orphaning demo servers.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("nbclient")
pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
EXPECTED = ["01_explore", "02_compare", "03_gather", "04_build_your_own"]

pytestmark = pytest.mark.slow


def _script(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = _script("run_notebooks")
stripper = _script("strip_notebooks")

PROBE_HEAD = f"import json as _j\nprint({runner.PROBE_MARK!r}, _j.dumps("

PROBES = {
    "01_explore": PROBE_HEAD + """{
    "closed": repr(bench).startswith("<Bench closed"),
    "failures": sorted(map(list, bench.records.loc[~bench.records["ok"],
                                                   ["error_type", "disposition"]].values)),
    "calls": len(bench.records),
    "cells": sorted({p["cell"] for p in bench.records["provenance"]}),
}))""",
    "02_compare": PROBE_HEAD + """{
    "rows": len(table), "cases": len(cases),
    "failed": sorted(map(list, failures[["server", "disposition", "error_type"]].values)),
    "retried_ok": bool(retry["ok"].all()),
    "geo_worst": float(error_pct["geo"].abs().max()),
    "flaky_worst": float(error_pct["flaky"].abs().max()),
    "missing_answers": int(answers.isna().sum().sum()),
    "closed": repr(bench).startswith("<Bench closed"),
}))""",
    "03_gather": PROBE_HEAD + """{
    "cases": len(cases), "first": len(first), "result": len(result), "rounds": rounds,
    "left": sorted([r["arguments"].get("unit", ""), r["error_type"], r["disposition"]]
                   for _, r in result[~result["ok"]].iterrows()),
    "same_order": [dict(a) for a in result["arguments"]] == cases,
    "tight": sorted(set(tight.loc[~tight["ok"], "disposition"])),
    "error_types": sorted(set(records["error_type"].dropna())),
    "servers": sorted(set(records["server"])),
    "routes": len(km), "sphere_worst": float(km["error %"].abs().max()),
    "workdir_exists": workdir.exists(),
    "closed": repr(bench).startswith("<Bench closed"),
}))""",
    "04_build_your_own": PROBE_HEAD + """{
    "transports": dict(zip(bench.servers["name"], bench.servers["transport"])),
    "visits": visits,
    "population_ms": sorted(populations["latency_ms"].tolist()),
    "city_ms": sorted(places["latency_ms"].tolist()),
    "difference_m": km["difference (m)"].abs().max().item(),
    "closed": repr(bench).startswith("<Bench closed"),
}))""",
}


@cache
def run(name: str) -> tuple[Any, float, dict[str, Any]]:
    """Execute one notebook (once per test session) with its probe."""
    return runner.execute(NOTEBOOKS / f"{name}.ipynb", timeout=90, probe=PROBES[name])


def outputs(nb: Any, marker: str) -> str:
    """Everything a reader sees under the first code cell whose source contains ``marker``."""
    for cell in nb.cells:
        if cell.cell_type == "code" and marker in cell.source:
            parts = []
            for out in cell.outputs:
                parts.append(out.get("text", ""))
                data = out.get("data", {})
                parts += [data.get("text/plain", ""), data.get("text/html", "")]
                parts += [mime for mime in data if mime.startswith(("image/", "application/"))]
            return "\n".join(parts)
    raise AssertionError(f"no code cell contains {marker!r}")


def check_clean_run(name: str) -> tuple[Any, dict[str, Any]]:
    nb, seconds, info = run(name)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.get("output_type") == "error"]
    assert not errors, errors
    assert info["executable"] == sys.executable, "the kernel ran another Python"
    assert info["children"] == [], f"{name} left processes behind: {info['children']}"
    assert info["probe"]["closed"], f"{name} must close its bench at the end"
    print(f"{name}: {seconds:.1f} s")
    return nb, info["probe"]


def test_the_expected_notebooks_exist_and_are_stripped() -> None:
    import nbformat

    found = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    assert found == EXPECTED
    for name in found:
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        nbformat.validate(nb)
        assert stripper.dirty(nb) == [], f"{name}.ipynb is committed with outputs"
        assert nb.metadata["kernelspec"]["name"] == "python3"
        kinds = [c.cell_type for c in nb.cells]
        assert kinds[0] == "markdown", "a tutorial opens with an explanation"
        assert kinds.count("markdown") >= kinds.count("code") // 2, "explain between cells"


def test_strip_removes_outputs_counts_and_widget_state() -> None:
    import nbformat

    nb, _, _ = run("04_build_your_own")
    executed = nbformat.from_dict(nb)
    executed.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    assert stripper.dirty(executed)
    stripped = stripper.strip(executed)
    assert stripper.dirty(stripped) == []
    assert all(c.outputs == [] for c in stripped.cells if c.cell_type == "code")
    assert "widgets" not in stripped.metadata


def test_01_explore() -> None:
    nb, probe = check_clean_run("01_explore")
    assert outputs(nb, "bench = tb.Bench.demo()").count("connected") >= 3
    assert "geo_precise-distance" in outputs(nb, "catalog = bench.catalog()")
    searched = outputs(nb, 'catalog(search="distance")')
    assert "flaky-distance" in searched and "geo-city" not in searched
    assert "9558.575" in outputs(nb, 'result = bench.call("geo-distance"')
    assert "data:image/png;base64," in outputs(nb, '"geo-world_map"')
    assert "bearing of 31.7°" in outputs(nb, "await bench.acall(")
    assert "Server: geo" in outputs(nb, 'distance = bench.tools["geo-distance"]')
    failures = outputs(nb, "def attempt(")
    for word in ("ToolFailed", "landed", "Refused", "did_not_happen", "TimedOut", "in_doubt"):
        assert word in failures
    assert "application/vnd.jupyter.widget-view+json" in outputs(nb, "bench.explore()")
    closed = outputs(nb, "bench.close()")
    assert closed.count("closed") >= 3 and "connected" not in closed
    assert probe["failures"] == [["Refused", "did_not_happen"], ["TimedOut", "in_doubt"],
                                 ["ToolFailed", "landed"]]
    assert len(probe["cells"]) >= 5, "provenance names the cell of each call"


def test_02_compare() -> None:
    nb, probe = check_clean_run("02_compare")
    assert "flaky-distance" in outputs(nb, "bench.pegboard.same_named()")
    assert probe["rows"] == 3 * probe["cases"] == 36
    assert probe["failed"], "the seeded flaky server fails some calls on purpose"
    assert all(row == ["flaky", "landed", "ToolFailed"] for row in probe["failed"])
    assert probe["retried_ok"] and probe["missing_answers"] == 0
    assert 0.1 < probe["geo_worst"] < 0.6, "the sphere is off by up to about 0.5 %"
    assert probe["flaky_worst"] > 5, "the flat map is off by percent on long routes"
    assert "image/png" in outputs(nb, "fig, (left, right)")
    assert "ToolFailed" in outputs(nb, "failures = table[")


def test_03_gather() -> None:
    nb, probe = check_clean_run("03_gather")
    assert probe["cases"] == probe["first"] == probe["result"] == 242
    assert probe["same_order"], "a resumed map keeps one row per case, in order"
    assert 2 <= probe["rounds"] <= 5
    assert probe["left"] == [["", "ToolFailed", "landed"],
                             ["furlongs", "Refused", "did_not_happen"]]
    assert "in_doubt" in probe["tight"]
    assert probe["error_types"] == ["Refused", "TimedOut", "ToolFailed"]
    assert probe["servers"] == ["flaky", "geo", "geo_precise"]
    assert probe["routes"] == 240 and probe["sphere_worst"] < 0.6
    assert not probe["workdir_exists"], "the temporary journal folder is removed"
    assert "application/vnd.jupyter.widget-view+json" in outputs(nb, "first = bench.map(")
    assert "holds 243 records" in outputs(nb, "with tb.Bench(journal=journal) as reader")
    assert "image/png" in outputs(nb, "def answers(server)")


def test_04_build_your_own() -> None:
    nb, probe = check_clean_run("04_build_your_own")
    assert probe["transports"] == {"geo": "stdio", "mine": "toolbox", "atlas": "toolset"}
    assert probe["visits"] == {"Paris": 40}, "ctx.exclusive must not lose a visit"
    # The archive lane admits one request at a time and each sleeps 100 ms, so the eighth
    # population answer cannot arrive before 800 ms: a lower bound from the cap, not a timing.
    assert probe["population_ms"][-1] >= 790
    assert probe["difference_m"] <= 1
    manifest = outputs(nb, 'bench.call("atlas-help")')
    assert "'population'" in manifest and "'inputSchema'" in manifest
    assert "atlas-population: ToolFailed (landed): KeyError: 'Atlantis'" in outputs(
        nb, 'print(bench.call("mine-distance"')
    behaviour = outputs(nb, 'from_city="sao paulo"')
    assert "KeyError" in behaviour and "3454.358" in behaviour


def test_04_toolbox_schema_keeps_field_constraints() -> None:
    nb, _, _ = run("04_build_your_own")
    text = outputs(nb, 'print(bench.call("mine-distance"')
    assert "mine-convert: Refused (did_not_happen)" in text  # furlongs: not in the enum
    assert text.count("mine-convert: Refused (did_not_happen)") == 2  # -1: below the minimum


def test_binder_installs_the_project_with_what_the_notebooks_import() -> None:
    import ast
    import tomllib

    import nbformat

    binder = ROOT / "binder"
    lines = [ln.strip() for ln in (binder / "requirements.txt").read_text().splitlines()]
    assert [ln for ln in lines if ln and not ln.startswith("#")] == [".[lab]"]
    assert (binder / "runtime.txt").read_text().strip() == "python-3.12"
    assert not (binder / "environment.yml").exists(), "it would override requirements.txt"

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {
        req.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip().lower()
        for req in [*project["dependencies"], *project["optional-dependencies"]["lab"]]
    }
    declared |= {"numpy"}  # pandas' own dependency
    imported: set[str] = set()
    for path in NOTEBOOKS.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            source = "\n".join(ln for ln in cell.source.splitlines() if not ln.startswith("%"))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Import):
                    imported |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names} - {"toolbench"}
    assert third_party, "the parser found no imports at all"
    assert third_party <= declared, f"Binder would not install {sorted(third_party - declared)}"
