from __future__ import annotations

import subprocess
import sys

import pytest

import toolbench


def test_all_is_sorted_and_complete() -> None:
    assert toolbench.__all__ == sorted(toolbench.__all__)
    for name in toolbench.__all__:
        assert hasattr(toolbench, name), name
    public = {n for n in vars(toolbench) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(toolbench, n)).__name__ == "module"}
    assert public - modules == set(toolbench.__all__)


@pytest.mark.slow
def test_core_import_is_light() -> None:
    code = (
        "import sys, toolbench; "
        "heavy = [m for m in ('pandas', 'ipywidgets', 'IPython') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
