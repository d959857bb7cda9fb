"""scripts/show_over_time.py: against the real demo servers (stdio children) it prints a
PinWarning, a ``tb.diff`` and the ``Refused`` of a changed tool's call and of a changed
resource's read, as a user sees them in a terminal (the output the closing note quotes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolbench import demo

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "show_over_time.py"


@pytest.mark.slow
def test_the_script_prints_a_diff_and_the_refusals() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                         timeout=240, env={**os.environ, **demo.python_path_env()})
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "PinWarning: server 'geo_precise': 1 pinned tool changed ('distance')" in out
    assert "parameter removed: unit; parameter added: units" in out
    assert ">>> print(tb.diff(before, after))" in out and "[2 rows x 8 columns]" in out
    assert ("toolbench._core.errors.Refused: geo_precise/distance: not sent: tool "
            "geo_precise/distance changed since it was pinned (description, input_schema)"
            in out)
    assert ("toolbench._core.errors.Refused: not sent: resource beyond/beyond://readme "
            "changed since it was pinned (description)") in out
    assert out.count("disposition: did_not_happen") == 2
    assert "{'result': 343.923}" in out  # approved: the call goes through
