"""The bench's frames in a notebook: outside MathJax, failures in full (issue 37, 5 and 7)."""

from __future__ import annotations

import pandas as pd

from toolbench._notebook.views.frames import NO_MATH, frame_repr_html, is_bench_frame

LONG = ("server 'time' failed to start (stdio mcp-server-time --local-timezone UTC): "
        "FileNotFoundError: [Errno 2] No such file or directory: 'mcp-server-<b>time</b>'")


def servers() -> pd.DataFrame:
    return pd.DataFrame([{"name": "ok", "transport": "stdio", "status": "connected",
                          "error": None, "stderr_tail": ""},
                         {"name": "time", "transport": "stdio", "status": "failed",
                          "error": LONG, "stderr_tail": "Traceback <i>x</i>"}])


def test_a_failed_servers_whole_error_is_in_a_details_escaped() -> None:
    html = frame_repr_html(servers())
    assert html is not None and html.startswith(f"<div class='{NO_MATH}'>")
    assert html.count("<details class='toolbench-failure'>") == 1
    details = html[html.index("<details"):]
    assert "mcp-server-&lt;b&gt;time&lt;/b&gt;&#x27;" in details and "<b>time</b>'" not in details
    assert "Traceback &lt;i&gt;x&lt;/i&gt;" in details


def test_only_the_benchs_frames_change() -> None:
    assert is_bench_frame(servers())
    assert not is_bench_frame(pd.DataFrame({"a": ["$x$"]}))
    marked = pd.DataFrame({"a": ["$x$"]})
    marked.attrs["toolbench"] = "snapshot"
    assert is_bench_frame(marked)
    catalog = pd.DataFrame({"name": ["t-a"], "tool": ["a"], "parameters": [[]],
                            "input_schema": [{"$defs": {}, "$ref": "#/$defs/x"}]})
    html = frame_repr_html(catalog)
    assert html is not None and NO_MATH in html and "$ref" in html


def test_the_records_table_shows_who_opened_a_views_call_within_pandas_cut() -> None:
    """pandas cuts a cell at 50 characters: the provenance of a call a view made starts with
    who opened it, so the cut keeps it; the frame itself keeps the dict."""
    from toolbench._bench.journal.record import frame, make_record, utcnow

    opener = "0123456789abcdef0123456789abcdef"
    prov = {"app": {"uri": "ui://atlas/map.html", "opened_by": opener}, "cell": 7,
            "result_meta": {"big": "x" * 500}}
    record = make_record(call_id="c1", batch=None, started=utcnow(), server="atlas",
                         tool="distance", name="atlas-distance", arguments={},
                         latency_s=0.001, provenance=prov)
    df = frame([record])
    for shown in (df, df[["tool", "ok", "provenance"]]):
        html = frame_repr_html(shown)
        assert html is not None and f"opened by {opener}" in html
        assert "x" * 60 not in html
    assert df["provenance"].iloc[0] == prov
