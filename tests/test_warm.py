"""The schema checker made ready at connect, off the loop (toolbench._bench.calls.warm),
issue #37 item 14: the first call after connect no longer waits for jsonschema's import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CODE = """
import sys, threading, time
import toolbench as tb
from toolbench._core.schema import preload
with tb.Bench() as bench:
    bench.connect("time", [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])
    ready = preload.ready()
    began = time.perf_counter()
    bench.call("time-get_current_time", timezone="UTC")
    print(ready, time.perf_counter() - began)
"""


@pytest.mark.slow
def test_the_first_call_after_connect_does_not_wait_for_the_import() -> None:
    """A fresh interpreter (jsonschema not yet imported), a quick real stdio server."""
    pytest.importorskip("mcp_server_time")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    ready, first = out[0] == "True", float(out[1])
    assert ready, "connect returned before the schema checker was ready"
    assert first < 0.3, f"the first call took {first:.3f} s"


def test_the_warmer_builds_a_connected_servers_validators() -> None:
    import toolbench as tb
    from toolbench._core.schema import validate as _validate

    box = tb.ToolBox()

    @box.tool(server="w")
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    with tb.Bench() as bench:
        bench.connect("w", box)
        schema = bench.pegboard.entry("w-add").spec.input_schema
        entry = _validate._entry(schema)
        assert entry.built and entry.validator is not None
