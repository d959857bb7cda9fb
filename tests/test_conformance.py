"""The official MCP conformance runner's client scenarios, through toolbench's public API.

Every client scenario that ``--requirements 2025-11-25`` (18) and ``--requirements 2026-07-28``
(32) score, each at its revision's wire, plus ``auth/client-credentials-basic``,
``auth/client-credentials-jwt`` and ``json-schema-2020-12-preservation`` at both: the driver is
tests/conformance/client.py, the runner tests/conformance/run.py (a few at a time).

All 50 pass, ``sep-2322-client-request-state`` included, which mcp 2.3.0's own client fails (it
rejects a 2026-07-28 result without ``resultType``; see toolbench/_transports/mcp/compat.py).
"""

from __future__ import annotations

import os
import sys

import pytest
from conformance import run

pytestmark = pytest.mark.slow

why = run.installed()


@pytest.mark.skipif(why is not None, reason=f"{why}")
@pytest.mark.timeout(1800)
def test_every_client_scenario_passes_through_the_public_api() -> None:
    counts = {revision: len(run.scenarios(revision)) for revision in run.REVISIONS}
    assert counts == {"2025-11-25": 18, "2026-07-28": 32}  # the pinned runner's sets
    jobs = int(os.environ.get("TOOLBENCH_CONFORMANCE_JOBS", "3"))
    outcomes = run.run_all(f"{sys.executable} {run.DRIVER}", jobs)
    assert len(outcomes) == 18 + 32 + 2 * len(run.EXTRAS)
    failed = [f"{o.revision} {o.scenario}: {o.summary}\n{o.output[-1500:]}"
              for o in outcomes if not o.passed]
    print(run.table(outcomes))
    assert not failed, "\n\n".join(failed)
