"""df.tb on real compare and records frames from in-process MCP servers."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as ServerToolError
from test_display import SCRIPT, no_live_markup

import toolbench as tb
from toolbench._notebook.accessor import TableAccessor

CASES = [{"x": 1.0}, {"x": 2.0}, {"x": 3.0}, {"x": -1.0}]
CLOSE = 1.004  # "close" is 0.4 % off
failing = {"on": True}


def exact(x: float) -> float:
    return x * 2


def close(x: float) -> float:
    return x * 2 * CLOSE


def odd(x: float) -> float:
    """Right for small x, wrong for big x, fails for negative x while ``failing`` is on."""
    if x < 0 and failing["on"]:
        raise ServerToolError(f"negative {x} " + SCRIPT)
    return x * 3 if x > 2 else x * 2


def make(label: str, fn: Any) -> MCPServer:
    srv = MCPServer(label)

    @srv.tool()
    def measure(x: float) -> float:
        """A number from x."""
        return float(fn(x))

    @srv.tool()
    def label_of(x: float) -> str:
        """A word from x."""
        return "big" if fn(x) > 6.01 else "small"

    return srv


@pytest.fixture(scope="module")
def bench() -> Iterator[tb.Bench]:
    with tb.Bench() as b:
        for name, fn in (("exact", exact), ("close", close), ("odd", odd)):
            b.connect(name, make(name, fn))
        yield b


@pytest.fixture(scope="module")
def table(bench: tb.Bench) -> pd.DataFrame:
    failing["on"] = True
    return bench.compare("measure", CASES)


@pytest.mark.slow
def test_import_registers_df_tb_without_importing_pandas() -> None:
    code = """
import sys
import toolbench
assert "pandas" not in sys.modules, "import toolbench imported pandas"
import pandas as pd
assert pd.DataFrame({"a": [1]}).tb.kind == "table"
assert not any(type(f).__name__ == "_PandasHook" for f in sys.meta_path), "hook left behind"
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    # pandas first, toolbench second: registered at once.
    code = "import pandas as pd, toolbench; print(pd.DataFrame().tb.kind)"
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "table", out.stderr


@pytest.mark.slow
def test_a_tb_accessor_of_another_library_is_left_alone() -> None:
    code = """
import warnings
import pandas as pd

@pd.api.extensions.register_dataframe_accessor("tb")
class Theirs:
    def __init__(self, df):
        self.df = df

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import toolbench
assert pd.DataFrame.tb is Theirs
print([str(w.message) for w in caught])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "DataFrame.tb is taken by another library" in out.stdout


def test_accessor_is_ours_in_this_process(table: pd.DataFrame) -> None:
    assert isinstance(table.tb, TableAccessor)
    assert table.tb.kind == "compare"
    from toolbench._notebook import accessor as _accessor

    _accessor.register()  # again: nothing changes, nothing warns
    assert pd.DataFrame.tb is TableAccessor


def test_show_uses_the_compare_and_records_views(bench: tb.Bench, table: pd.DataFrame) -> None:
    html = table.tb.show()._repr_mimebundle_()["text/html"]
    no_live_markup(html)
    assert "toolbench-compare" in html and "median latency per server" in html
    assert "servers disagree on 4 of 4 cases" in html
    records = bench.records.tb.show(max_rows=3)._repr_mimebundle_()
    assert "<caption>records</caption>" in records["text/html"]
    assert f"showing 3 of {len(bench.records)} rows" in records["text/html"]
    assert "text/plain" in records


def test_answers_pivot_one_row_per_case(table: pd.DataFrame) -> None:
    answers = table.tb.answers()
    assert list(answers.columns) == ["close", "exact", "odd"]
    assert list(answers.index) == [0, 1, 2, 3] and answers.index.name == "case"
    for case, arguments in enumerate(CASES):
        x = arguments["x"]
        assert answers.loc[case, "exact"] == exact(x)
        assert answers.loc[case, "close"] == pytest.approx(close(x))
    assert answers.loc[2, "odd"] == odd(3.0)
    assert math.isnan(answers.loc[3, "odd"])  # the failed call has no answer
    assert answers.dtypes.eq(float).all()


def test_answers_against_a_reference(table: pd.DataFrame) -> None:
    diff = table.tb.answers(reference="exact")
    assert list(diff.columns) == ["close", "odd"]
    assert diff.loc[1, "close"] == pytest.approx(close(2.0) - exact(2.0))
    assert diff.loc[2, "odd"] == pytest.approx(odd(3.0) - exact(3.0))
    assert diff.loc[0, "odd"] == 0 and math.isnan(diff.loc[3, "odd"])
    percent = table.tb.answers(reference="exact", percent=True)
    assert percent["close"].to_list() == pytest.approx([(CLOSE - 1) * 100] * 4)
    assert percent.loc[2, "odd"] == pytest.approx(50.0)
    with pytest.raises(ValueError, match=r"reference 'nobody' is not a server.*close, exact"):
        table.tb.answers(reference="nobody")
    with pytest.raises(ValueError, match="percent=True needs a reference"):
        table.tb.answers(percent=True)


def test_answers_of_text_and_a_retry_appended(bench: tb.Bench, table: pd.DataFrame) -> None:
    words = bench.compare("label_of", CASES)
    answers = words.tb.answers()
    assert answers.loc[2].to_dict() == {"close": "big", "exact": "small", "odd": "big"}
    assert answers.loc[3, "odd"] is None
    same = words.tb.answers(reference="exact")
    assert same.loc[2].to_dict() == {"close": False, "odd": False}
    assert same.loc[0].to_dict() == {"close": True, "odd": True}
    # A retry appended to the frame (with the original case number): the success counts.
    failing["on"] = False
    try:
        retry = bench.compare("measure", [CASES[3]], servers=["odd"])
    finally:
        failing["on"] = True
    both = pd.concat([table, retry.assign(case=3)], ignore_index=True)
    assert both.tb.answers().loc[3, "odd"] == exact(-1.0)  # odd's answer once it works
    assert both.tb.summary().loc["odd", "calls"] == 5


def test_answers_field_and_wrong_frames(bench: tb.Bench, table: pd.DataFrame) -> None:
    assert table.tb.answers(field="result").equals(table.tb.answers())
    with pytest.raises(ValueError, match=r"no structured field 'nope'.*fields: result"):
        table.tb.answers(field="nope")
    with pytest.raises(ValueError, match=r"needs a compare frame.*records frame lacks case"):
        bench.records.tb.answers()


def expected_latency(frame: pd.DataFrame, server: str) -> tuple[float, float]:
    values = frame.loc[frame["server"] == server, "latency_ms"].astype(float).to_numpy()
    return float(np.median(values)), float(np.percentile(values, 90))


def test_summary_per_server(table: pd.DataFrame) -> None:
    summary = table.tb.summary()
    assert list(summary.index) == ["close", "exact", "odd"]
    assert list(summary.columns) == ["calls", "success_rate", "median_ms", "p90_ms",
                                     "agrees_with_majority"]
    assert summary["calls"].to_dict() == {"close": 4, "exact": 4, "odd": 4}
    assert summary.loc["odd", "success_rate"] == 0.75 and summary.loc["exact", "success_rate"] == 1
    for server in summary.index:
        median, p90 = expected_latency(table, server)
        assert summary.loc[server, "median_ms"] == pytest.approx(median)
        assert summary.loc[server, "p90_ms"] == pytest.approx(p90)
    # Exact equality: exact and odd agree on x=1 and x=2; nobody has a majority on x=3; odd
    # failed x=-1 and exact alone is not a majority of three.
    assert summary["agrees_with_majority"].to_dict() == {"close": 0.0, "exact": 0.5, "odd": 0.5}
    # Within 1 %, close counts as exact: odd is out on x=3 (wrong) and x=-1 (failed).
    loose = table.tb.summary(rtol=0.01)["agrees_with_majority"].to_dict()
    assert loose == {"close": 1.0, "exact": 1.0, "odd": 0.5}
    versus = table.tb.summary(reference="exact")["agrees_with_exact"].to_dict()
    assert versus == {"close": 0.0, "exact": 1.0, "odd": 0.5}
    with pytest.raises(ValueError, match="rtol must be a finite number >= 0, not nan"):
        table.tb.summary(rtol=math.nan)


def test_summary_of_records(bench: tb.Bench, table: pd.DataFrame) -> None:
    records = bench.records
    summary = records.tb.summary()
    assert "agrees_with_majority" not in summary.columns
    counts = records.groupby("server").size().to_dict()
    assert summary["calls"].to_dict() == counts
    with pytest.raises(ValueError, match="needs a compare frame"):
        records.tb.summary(reference="exact")


def test_files_hold_json_not_python_reprs(bench: tb.Bench, table: pd.DataFrame,
                                          tmp_path: Path) -> None:
    records = bench.records
    records.tb.to_csv(tmp_path / "records.csv")
    records.tb.to_parquet(tmp_path / "records.parquet")
    text = (tmp_path / "records.csv").read_text()
    assert '{""x"": 1.0}' in text  # JSON, quoted the CSV way
    assert "{'x'" not in text and "'type': 'text'" not in text
    for back in (pd.read_csv(tmp_path / "records.csv"),
                 pd.read_parquet(tmp_path / "records.parquet")):
        assert list(back.columns) == list(records.columns)
        assert [json.loads(a) for a in back["arguments"]] == list(records["arguments"])
        assert [json.loads(c) for c in back["content"]] == list(records["content"])
        provenance = [None if pd.isna(p) else json.loads(p) for p in back["provenance"]]
        assert provenance == [p for p in records["provenance"]]
        assert back["latency_ms"].to_list() == pytest.approx(records["latency_ms"].to_list())
    parquet = pd.read_parquet(tmp_path / "records.parquet")
    assert parquet["started"].equals(records["started"])
    # Summary and answers keep their meaningful index; a compare frame round-trips too.
    table.tb.summary().tb.to_csv(tmp_path / "summary.csv")
    assert pd.read_csv(tmp_path / "summary.csv")["server"].to_list() == ["close", "exact", "odd"]
    table.tb.to_parquet(tmp_path / "compare.parquet")
    back = pd.read_parquet(tmp_path / "compare.parquet")
    assert [json.loads(a) for a in back["arguments"]] == list(table["arguments"])
    assert back["structured.result"].equals(table["structured.result"].astype(float))


def test_mixed_columns_become_json_text(tmp_path: Path) -> None:
    df = pd.DataFrame({"mixed": ["a", 1, None, True], "n": [1, 2, 3, 4],
                       "nested": [{"k": [1, 2]}, None, [1], "s"]}, dtype=object)
    ready = df.tb.json_ready()
    assert ready["mixed"].to_list() == ['"a"', "1", None, "true"]
    assert ready["nested"].to_list() == ['{"k": [1, 2]}', None, "[1]", '"s"']
    assert ready["n"].to_list() == [1, 2, 3, 4]
    df.tb.to_parquet(tmp_path / "mixed.parquet")  # pyarrow would refuse the raw mix
    back = pd.read_parquet(tmp_path / "mixed.parquet")
    assert [None if pd.isna(v) else json.loads(v) for v in back["mixed"]] == ["a", 1, None, True]


def test_failed_calls_are_not_votes_in_the_majority() -> None:
    def answering(label: str, answer: str | None) -> MCPServer:
        srv = MCPServer(label)

        @srv.tool()
        def verdict(x: float) -> str:
            """An answer, or a failure."""
            if answer is None:
                raise ServerToolError("no verdict")
            return answer

        return srv

    with tb.Bench() as b:
        for label, answer in (("a", "X"), ("b", "X"), ("c", "Y"), ("d", None)):
            b.connect(label, answering(label, answer))
        df = b.compare("verdict", [{"x": 1.0}])
    assert sorted(df["ok"]) == [False, True, True, True]
    rates = df.tb.summary()["agrees_with_majority"].to_dict()
    # X is two of the three answers: the majority; the failed call votes for nobody.
    assert rates == {"a": 1.0, "b": 1.0, "c": 0.0, "d": 0.0}
