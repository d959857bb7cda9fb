"""The ``toolbench`` command, run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ECHO = Path(__file__).parent / "servers" / "echo_server.py"


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolbench", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    config = {"mcpServers": {
        "one": {"command": sys.executable, "args": [str(ECHO)]},
        "two": {"command": sys.executable, "args": [str(ECHO)]},
    }}
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    return tmp_path


def test_catalog_uses_local_mcp_json(project: Path) -> None:
    out = run(["catalog"], project)
    assert out.returncode == 0, out.stderr
    assert "one-echo" in out.stdout and "two-echo" in out.stdout


def test_call_with_args_and_json(project: Path) -> None:
    out = run(["call", "one-add", "--arg", "a=2", "--json", '{"b": 40}'], project)
    assert out.returncode == 0, out.stderr
    assert "42" in out.stdout


def test_compare(project: Path) -> None:
    out = run(["compare", "echo", "--arg", "text=hello"], project)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("hello") >= 2 and "one" in out.stdout and "two" in out.stdout


@pytest.mark.parametrize(("args", "words"), [
    (["call", "one-ech", "--arg", "text=x"], "did you mean"),
    (["call", "one-add", "--arg", "a"], "key=value"),
    (["call", "one-add", "--json", "[1]"], "JSON object"),
    (["call", "one-add", "--arg", "a=notanumber", "--arg", "b=1"], "Refused"),
])
def test_errors_are_one_clear_line(project: Path, args: list[str], words: str) -> None:
    out = run(args, project)
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toolbench: error:")
    assert words in lines[0]


def test_help_on_every_command(tmp_path: Path) -> None:
    for command in ([], ["catalog"], ["call"], ["compare"], ["demo"], ["lab"]):
        out = run([*command, "--help"], tmp_path)
        assert out.returncode == 0 and "usage: toolbench" in out.stdout


def test_demo_without_config_uses_bundled_servers(tmp_path: Path) -> None:
    out = run(["demo"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "geo" in out.stdout and "connected" in out.stdout and "distance" in out.stdout


def test_bad_config_file(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text("{not json")
    out = run(["catalog"], tmp_path)
    assert out.returncode == 1 and "mcp.json" in out.stderr
