"""The dependency floors in pyproject.toml are true: no lower than what the code and the
``mcp`` SDK need, and pinned as they are in ``.ci/floors.txt`` (which CI installs once)."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import requires
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def floors() -> dict[str, Version]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    found = {}
    for line in project["dependencies"]:
        req = Requirement(line)
        lows = [Version(s.version) for s in req.specifier if s.operator == ">="]
        assert lows, f"{line!r} has no floor"
        found[req.name.lower()] = max(lows)
    return found


def test_the_floors_are_at_least_the_mcp_sdks() -> None:
    """Issue 37, item 21: ``pydantic>=2.7`` while mcp 2.3 needs 2.12 (and anyio, pandas too:
    see pyproject.toml's comments)."""
    ours = floors()
    for line in requires("mcp") or []:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = req.name.lower()
        lows = [Version(s.version) for s in req.specifier if s.operator == ">="]
        if name in ours and lows:
            assert ours[name] >= max(lows), f"{name}: ours >={ours[name]}, mcp's >={max(lows)}"
    assert ours["pydantic"] >= Version("2.12") and ours["anyio"] >= Version("4.15")
    assert ours["pandas"] >= Version("2.2.2")


def test_ci_installs_exactly_the_floors() -> None:
    pinned = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pinned[name.strip().lower()] = Version(version)
    assert pinned == floors()
    assert re.search(r"floors\.txt", (ROOT / ".ci" / "run").read_text(encoding="utf-8"))
