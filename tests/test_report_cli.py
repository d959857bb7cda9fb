"""``toolbench report`` (``toolbench._cli.report``), run as a real process: ``--fail-on`` fails
CI on the hostile fixture server and passes on a clean one; ``--json``; bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SERVERS = Path(__file__).parent / "servers"
HOSTILE = SERVERS / "hostile_catalog_server.py"


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolbench", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=180, env=dict(os.environ))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    servers: dict[str, Any] = {
        "hostile": {"command": sys.executable, "args": [str(HOSTILE)]},
        "clean": {"command": sys.executable, "args": ["-m", "toolbench.demo.geo"]},
    }
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return tmp_path


@pytest.mark.slow
def test_fail_on_error_exits_1_on_the_hostile_fixture_and_0_on_a_clean_server(
        project: Path) -> None:
    bad = run(["report", "--server", "hostile", "--fail-on", "error"], project)
    assert bad.returncode == 1, bad.stderr
    assert "4 findings reach 'error' (--fail-on error)" in bad.stderr
    assert "poisoning-instructions" in bad.stdout and "hostile/get_weather" in bad.stdout
    assert "\u202e" not in bad.stdout and "\U000e0049" not in bad.stdout  # nothing hidden
    good = run(["report", "--server", "clean", "--fail-on", "error"], project)
    assert good.returncode == 0, good.stderr
    assert "findings: 0 errors, 0 warnings, 0 infos" in good.stdout
    assert "hostile" not in good.stdout  # only the named server was started
    # no --fail-on: the report is printed and nothing fails
    both = run(["report"], project)
    assert both.returncode == 0, both.stderr
    assert "clean" in both.stdout and "hostile" in both.stdout


@pytest.mark.slow
def test_fail_on_warning_counts_warnings_and_errors(project: Path) -> None:
    out = run(["report", "--server", "hostile", "--fail-on", "warning"], project)
    assert out.returncode == 1 and "5 findings reach 'warning'" in out.stderr


@pytest.mark.slow
def test_json_holds_servers_tools_and_findings_in_ascii(project: Path) -> None:
    out = run(["report", "--json", "--tokenizer", "estimate"], project)
    assert out.returncode == 0, out.stderr
    assert out.stdout.isascii()
    data = json.loads(out.stdout)
    assert set(data) == {"servers", "tools", "failed_servers", "fail_on",
                         "findings_reaching_fail_on"}
    servers = {s["server"]: s for s in data["servers"]}
    assert servers["hostile"]["errors"] == 4 and servers["clean"]["errors"] == 0
    assert servers["hostile"]["tokenizer"] == "estimate"
    tools = {t["name"]: t for t in data["tools"]}
    assert {f["rule"] for f in tools["hostile-add_numbers"]["findings"]} == {
        "poisoning-invisible-unicode"}
    assert set(tools["clean-distance"]) == {
        "name", "server", "tool", "tokens", "tokenizer", "description_chars", "parameters",
        "documented", "findings"}
    assert data["failed_servers"] == [] and data["fail_on"] is None


@pytest.mark.slow
def test_a_server_that_fails_to_start_fails_the_report(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {
        "broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}}}))
    out = run(["report", "--json"], tmp_path)
    assert out.returncode == 1
    assert json.loads(out.stdout)["failed_servers"] == ["broken"]
    assert "broken" in out.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("args", "words"), [
    (["report", "--server", "nope"], "no server 'nope' in mcp.json"),
    (["report", "--fail-on", "info"], "invalid choice: 'info'"),
    (["report", "--tokenizer", "gpt2"], "invalid choice: 'gpt2'"),
])
def test_usage_errors_exit_2_before_any_server_starts(project: Path, args: list[str],
                                                      words: str) -> None:
    out = run(args, project)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert words in out.stderr and out.stdout == ""


@pytest.mark.slow
def test_help_names_the_options_and_the_exit_statuses(tmp_path: Path) -> None:
    out = run(["report", "--help"], tmp_path)
    assert out.returncode == 0
    for words in ("--fail-on {error,warning}", "--json", "--server NAME", "--config FILE",
                  "0  no finding reaches --fail-on", "1  a finding reaches --fail-on"):
        assert words in out.stdout, words
    top = run(["--help"], tmp_path)
    assert "report" in top.stdout
