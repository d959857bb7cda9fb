"""A result's ``_meta`` reaches its view (DESIGN.md, "The bridge": ``tool-result`` is the
result as received, its ``_meta`` included; ``Result.meta`` keeps it too), checked with the
real PyPI ``anywidget-mcp``, whose views get their runtime data only from ``_meta``, in a
real Jupyter kernel."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_bench_kernel import run_notebook, text_of

from toolbench._bench.apps.opened import Opened, wire_result
from toolbench._bench.journal.record import RESULT_META, make_record, utcnow
from toolbench._core.client import Result

ROOT = Path(__file__).parent.parent
COUNTER = [sys.executable, str(ROOT / "tests" / "servers" / "anywidget_counter.py")]


def test_the_wire_form_and_a_record_keep_the_results_meta() -> None:
    meta = {"anywidget": {"protocolVersion": 3, "payload": {"x": [1, 2]}}}
    result = Result([], None, False, 0.001, None, meta=meta)
    assert wire_result(result) == {"content": [], "isError": False, "_meta": meta}
    assert "_meta" not in wire_result(Result([], None, False))
    record = make_record(call_id="c1", batch=None, started=utcnow(), server="s", tool="t",
                         name="s-t", arguments={}, latency_s=0.001,
                         provenance={"cell": 3}, result=result)
    assert record.provenance == {"cell": 3, RESULT_META: meta}
    opened = Opened.of_record(record)
    assert opened.result == {"content": [], "isError": False, "_meta": meta}
    plain = make_record(call_id="c2", batch=None, started=utcnow(), server="s", tool="t",
                        name="s-t", arguments={}, latency_s=0.001, provenance=None,
                        result=Result([], None, False))
    assert plain.provenance is None and "_meta" not in (Opened.of_record(plain).result or {})
    server_info = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    protocol_only = make_record(call_id="c3", batch=None, started=utcnow(), server="s",
                                tool="t", name="s-t", arguments={}, latency_s=0.001,
                                provenance={"cell": 1},
                                result=Result([], None, False, meta=server_info))
    assert protocol_only.provenance == {"cell": 1}  # every SDK 2 result has it: not kept
    both = Result([], None, False, meta={**server_info, **meta})
    assert wire_result(both)["_meta"] == {**server_info, **meta}  # the view gets it all
    kept = make_record(call_id="c4", batch=None, started=utcnow(), server="s", tool="t",
                       name="s-t", arguments={}, latency_s=0.001, provenance=None, result=both)
    assert kept.provenance == {RESULT_META: meta}


BOOT = (
    "import json\n"
    "def boot(view, result, n):\n"
    "    marker = [b['text'] for b in result.content if 'bootstrap:' in b.get('text', '')]\n"
    "    view.handle({'jsonrpc': '2.0', 'id': 1, 'method': 'ui/initialize', 'params': {}})\n"
    "    view.handle({'jsonrpc': '2.0', 'method': 'ui/notifications/initialized'})\n"
    "    sent = [m for m in view.bridge.outbox\n"
    "            if m.get('method') == 'ui/notifications/tool-result']\n"
    "    reply = view.handle({'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call', 'params': {\n"
    "        'name': 'anywidget_bootstrap', 'arguments': {\n"
    "            'bootstrap_id': marker[0].rsplit(':', 1)[1], 'operation_id': f'op-{n}'}}})\n"
    "    runtime = reply['result'].get('_meta', {}).get('anywidget', {})\n"
    "    return {'sent_meta': sent[0]['params'].get('_meta'), 'result_meta': result.meta,\n"
    "            'root': runtime.get('payload', {}).get('rootModelId'),\n"
    "            'error': reply['result'].get('isError')}\n"
)


@pytest.mark.slow
def test_anywidget_mcp_views_get_their_runtime_data_from_meta_in_a_kernel() -> None:
    """The view's first steps, as its own script takes them: ``tool-result`` carries the
    result's ``_meta`` (the tool's ``ui`` link), then its ``tools/call`` of
    ``anywidget_bootstrap`` is answered with the ``_meta.anywidget`` runtime payload (what
    was dropped before: "Widget bootstrap returned no runtime data"). A view opened again
    from the record (``bench.app``) gets the same ``_meta``."""
    pytest.importorskip("anywidget_mcp")  # the test extra (the floors venv has none)
    cells = [
        "import toolbench as tb\n" + BOOT +
        f"bench = tb.Bench(timeout=60)\nbench.connect('aw', {COUNTER!r})\n"
        "result = bench.call('aw-counter')\n"
        "print('FRESH', json.dumps(boot(result.app, result, 1)))",
        "again = bench.app(result.call_id)\n"
        "again.handle({'jsonrpc': '2.0', 'method': 'ui/notifications/initialized'})\n"
        "sent = [m for m in again.bridge.outbox if m.get('method') ==\n"
        "        'ui/notifications/tool-result']\n"
        "rec = bench.records.iloc[-1]\n"
        "print('AGAIN', json.dumps({'meta': sent[0]['params'].get('_meta'),\n"
        "      'boot_meta': sorted(rec['provenance']['result_meta']['anywidget'])}))\n"
        "bench.close()",
    ]
    nb = run_notebook(cells)
    errors = [o for c in nb for o in c.outputs if o.get("output_type") == "error"]
    assert not errors, errors
    fresh = json.loads(text_of(nb[0]).split("FRESH", 1)[1])
    ui = {"ui": {"resourceUri": "ui://anywidget-mcp/app.html"}}
    assert fresh["result_meta"] == ui and fresh["sent_meta"] == ui, fresh
    assert fresh["error"] is False and len(fresh["root"]) == 32, fresh
    again = json.loads(text_of(nb[1]).split("AGAIN", 1)[1])
    assert again["meta"] == ui, again
    assert {"protocolVersion", "instanceId", "payload"} <= set(again["boot_meta"]), again


def test_a_views_blob_resources_are_allowed_and_nothing_else_it_names_that_way() -> None:
    """``anywidget-mcp`` declares ``resourceDomains: ["blob:"]`` to load its widgets'
    modules: a blob: URL holds only what the frame made, so it is kept for resources (with
    or without an egress allowlist), and nowhere else (connect-src stays 'none')."""
    from toolbench._bench.apps.policy import build_policy
    from toolbench._core.ids import Egress

    for egress in (None, Egress(["example.com"])):
        policy = build_policy({"csp": {"resourceDomains": ["blob:", "blob:https://x.com"],
                                       "connectDomains": ["blob:"]}}, egress)
        directives = dict(part.split(" ", 1) for part in policy.csp.split("; "))
        assert directives["script-src"] == "'unsafe-inline' blob:"
        assert directives["connect-src"] == "'none'"
        assert len(policy.warnings) == 2, policy.warnings  # the other two were dropped
