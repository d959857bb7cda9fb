"""``toolbench eval`` (``toolbench._cli.evals``), run as a real process against the demo
servers: ``--fail-under`` exits 1 for a server under the bar and 0 when all clear it;
``--json``; a model that cannot be imported and a case no server can run are usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

MODEL = textwrap.dedent('''
    """A stand-in model: right on geo_precise, a wrong tool on geo."""
    import json

    def answer(messages, tools):
        names = [t["function"]["name"] for t in tools]
        name = "geo_precise-distance" if "geo_precise-distance" in names else "geo-city"
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function", "function": {
                "name": name, "arguments": json.dumps({"from_city": "London",
                                                       "to_city": "Paris"})}}]}

    broken = 42
''')
FAILING_IMPORT = "raise RuntimeError('OPENAI_API_KEY is not set')\n"
CASES = [{"id": f"c{i}", "prompt": f"How far is London from Paris? ({i})",
          "expect": [{"tool": "distance", "arguments": {"from_city": "London"}}]}
         for i in range(3)]


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolbench", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=180, env=dict(os.environ))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "stand_in.py").write_text(MODEL)
    (tmp_path / "cases.json").write_text(json.dumps(CASES))
    return tmp_path


BOTH = ["eval", "cases.json", "--model", "stand_in:answer", "--demo",
        "--server", "geo", "--server", "geo_precise"]


# One process per test: three start-ups of the interpreter and the demo servers in one test
# outlasted the 120 s budget at load 20 on 2 cores.
@pytest.mark.slow
def test_fail_under_exits_1_for_a_server_under_the_bar(project: Path) -> None:
    bad = run([*BOTH, "--fail-under", "0.9"], project)
    assert bad.returncode == 1, bad.stderr
    assert "1 server under --fail-under 0.9: geo" in bad.stderr
    assert "geo: 0/3 passed" in bad.stdout and "geo_precise: 3/3 passed" in bad.stdout
    assert "c0 on geo (repeat 0): expected ['distance'], called ['city']: tool choice" \
        in bad.stdout


@pytest.mark.slow
def test_fail_under_exits_0_when_every_server_clears_the_bar(project: Path) -> None:
    good = run(["eval", "cases.json", "--model", "stand_in:answer", "--demo",
                "--server", "geo_precise", "--fail-under", "0.9", "--repeats", "2"], project)
    assert good.returncode == 0, good.stderr
    assert "geo_precise: 6/6 passed (100%; 95 % interval 61% to 100%)" in good.stdout
    assert "geo:" not in good.stdout  # only the named server was started


@pytest.mark.slow
def test_without_fail_under_nothing_fails(project: Path) -> None:
    no_bar = run(BOTH, project)
    assert no_bar.returncode == 0, no_bar.stderr
    assert "geo: 0/3 passed" in no_bar.stdout


@pytest.mark.slow
def test_json_holds_scores_and_every_row(project: Path) -> None:
    out = run(["eval", "cases.json", "--model", "stand_in:answer", "--demo", "--server", "geo",
               "--server", "geo_precise", "--fail-under", "0.5", "--json"], project)
    assert out.returncode == 1, out.stderr
    payload = json.loads(out.stdout)
    assert out.stdout.isascii()
    servers = {s["server"]: s for s in payload["servers"]}
    assert servers["geo"]["pass_rate"] == 0.0 and servers["geo_precise"]["pass_rate"] == 1.0
    assert servers["geo"]["pass_high"] < 0.6 and servers["geo_precise"]["pass_low"] > 0.4
    assert payload["under"] == ["geo"] and payload["fail_under"] == 0.5
    assert len(payload["rows"]) == 6
    assert {r["server"] for r in payload["rows"] if not r["passed"]} == {"geo"}


TYPO = [{"id": "t", "prompt": "p", "expect": ["distnce"]}]


# One process each: seven interpreter start-ups in one test outlasted the 120 s budget beside
# two CPU burners on 2 cores.
@pytest.mark.slow
@pytest.mark.parametrize(("args", "said"), [
    (["cases.json", "--model", "stand_in", "--demo"], "write MODULE:FUNCTION"),
    (["cases.json", "--model", "no_such_module:answer", "--demo"],
     "cannot import 'no_such_module'"),
    (["cases.json", "--model", "stand_in:missing", "--demo"], "'stand_in' has no 'missing'"),
    (["cases.json", "--model", "stand_in:broken", "--demo"], "is a int, not a function"),
    (["cases.json", "--model", "needs_key:ask", "--demo"],
     "importing 'needs_key' raised RuntimeError: OPENAI_API_KEY is not set"),
    (["typo.json", "--model", "stand_in:answer", "--demo", "--server", "geo"],
     "case 't': key 'expect[0]': no server (geo) has a tool named 'distnce'"),
    (["cases.json", "--model", "stand_in:answer", "--fail-under", "90"],
     "a pass rate from 0 to 1"),
], ids=["no-function", "no-module", "no-attribute", "not-callable", "import-raises",
        "unknown-tool", "bad-bar"])
def test_bad_input_is_a_usage_error_before_anything_runs(project: Path, args: list[str],
                                                         said: str) -> None:
    (project / "needs_key.py").write_text(FAILING_IMPORT)
    (project / "typo.json").write_text(json.dumps(TYPO))
    out = run(["eval", *args], project)
    assert out.returncode == 2, out.stderr
    assert said in out.stderr


LOOKUP = textwrap.dedent('''
    """Looks up the number at the end of the prompt on the limited server, then answers."""
    def ask(messages, tools):
        if messages[-1]["role"] == "tool":
            return {"role": "assistant", "content": "done"}
        n = int(messages[-1]["content"].split()[-1])
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "1", "type": "function",
             "function": {"name": "lim-lookup", "arguments": {"n": n}}}]}
''')


@pytest.mark.slow
def test_retries_and_rate_reach_the_tool_calls_of_an_eval(project: Path) -> None:
    from tests.serving import limited_server, limited_stats

    (project / "lookup.py").write_text(LOOKUP)
    (project / "lim.json").write_text(json.dumps([
        {"id": f"c{n}", "prompt": f"look up {n}",
         "expect": [{"tool": "lookup", "arguments": {"n": n}}]} for n in range(3)]))
    with limited_server("--rate", "4", "--burst", "1", "--retry-after", "0.05") as url:
        (project / "mcp.json").write_text(json.dumps({"mcpServers": {"lim": {"url": url}}}))
        out = run(["eval", "lim.json", "--model", "lookup:ask", "--config", "mcp.json",
                   "--steps", "2", "--retries", "50", "--fail-under", "1", "--json"], project)
        stats = limited_stats(url)
    assert out.returncode == 0, out.stderr
    assert [r["passed"] for r in json.loads(out.stdout)["rows"]] == [True] * 3
    # Three rows at once on a server with room for one: 429s, retried, none run twice.
    assert stats["served"] == 3 and stats["repeated"] == 0 and stats["limited"] >= 1
    for bad, said in ((["--retries", "-1"], "--retries -1: a whole number, 0 or more"),
                      (["--rate", "fast"], "--rate 'fast': a rate is a text")):
        out = run(["eval", "lim.json", "--model", "lookup:ask", "--config", "mcp.json", *bad],
                  project)
        assert out.returncode == 2 and said in out.stderr, out.stderr
