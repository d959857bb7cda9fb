"""A fresh process: jsonschema's slow import neither uses a first call's timeout nor the loop."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_FIRST_CALLS = r'''
import json, sys, threading, time
import anyio
from mcp.server.mcpserver import MCPServer
import toolbench as tb

srv = MCPServer("slow")

@srv.tool()
async def nap(seconds: float) -> str:
    await anyio.sleep(seconds)
    return "awake"

assert "jsonschema" not in sys.modules  # importing toolbench does not pay for it
bench = tb.Bench()
# The kernel's thread needs jsonschema while the preload thread is importing it: it waits
# (two threads importing it at once get "partially initialized module" errors).
from toolbench._core.schema.validate import schema_problems
assert schema_problems({"type": "object", "properties": {"n": {"type": "integer"}}},
                       check_metaschema=True) == []
bench.connect("s", srv)
threads = {t.name for t in threading.enumerate()}
t0 = time.monotonic()
try:
    bench.call("s-nap", seconds=5, timeout=0.3)
except tb.ToolError as exc:
    error = type(exc).__name__
first = time.monotonic() - t0
with_bad_args = bench.map("s-nap", [{"seconds": "x"}], progress=False).iloc[0]
row = bench.records.iloc[0]
print(json.dumps({"error": error, "disposition": row["disposition"], "first_s": first,
                  "preload_thread": "toolbench-preload" in threads or "jsonschema" in sys.modules,
                  "refused": [with_bad_args["error_type"], with_bad_args["disposition"]]}))
bench.close()
'''


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_first_call_of_a_fresh_process_keeps_its_timeout() -> None:
    """Before: the first call imported jsonschema inside its timeout, on the shared loop, and
    a call with timeout=0.3 failed as "not sent" (Unreachable) after up to 10 s."""
    done = subprocess.run([sys.executable, "-c", _FIRST_CALLS], capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["error"] == "TimedOut" and seen["disposition"] == "in_doubt", seen
    assert seen["preload_thread"], seen
    assert seen["refused"] == ["Refused", "did_not_happen"], seen  # still checked locally
