"""Finding a stdio server's program (toolbench._transports.wire.command), issue #37 item 2:
a bare name is looked up on PATH, then in this Python's scripts folder; when found in neither,
the error names where it looked and how to install it or point to it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from toolbench._transports.wire.command import CommandNotFound, find_command

ROOT = Path(__file__).resolve().parents[1]


def test_a_name_on_path_wins_and_a_path_is_kept() -> None:
    assert find_command("sh", {"PATH": "/bin:/usr/bin"}).endswith("/sh")
    assert find_command("./relative/prog") == "./relative/prog"


def test_a_name_in_the_scripts_folder_is_found_off_path() -> None:
    scripts = Path(sysconfig.get_path("scripts"))
    name = next(p.name for p in sorted(scripts.iterdir()) if os.access(p, os.X_OK)
                and p.is_file() and p.name.startswith("py"))
    assert find_command(name, {"PATH": "/nonexistent"}) == str(scripts / name)


def test_a_missing_program_names_where_it_looked_and_how_to_install() -> None:
    with pytest.raises(CommandNotFound) as caught:
        find_command("toolbench-no-such-program-37", {"PATH": "/nonexistent-a:/nonexistent-b"})
    text = str(caught.value)
    assert "program 'toolbench-no-such-program-37' not found" in text
    assert "/nonexistent-a:/nonexistent-b" in text and sysconfig.get_path("scripts") in text
    assert f"{sys.executable} -m pip install" in text and "full path" in text
    assert isinstance(caught.value, FileNotFoundError)


@pytest.mark.slow
def test_a_pip_installed_server_starts_by_name_without_the_venv_on_path() -> None:
    """mcp-server-time is installed in the venv (the test extra); the kernel's PATH lacks the
    venv's bin, as under ``toolbench lab``."""
    scripts = Path(sysconfig.get_path("scripts"))
    if not (scripts / "mcp-server-time").exists():
        pytest.skip("mcp-server-time is not installed in this environment")
    code = (
        "import toolbench as tb\n"
        "with tb.Bench() as b:\n"
        "    print(int(b.connect('time', 'mcp-server-time --local-timezone UTC')))\n"
        "    print(b.call('time-get_current_time', timezone='UTC').data['timezone'])\n"
        "    try:\n"
        "        b.connect('x', 'toolbench-no-such-program-37', connect_timeout=10)\n"
        "    except tb.Unreachable as exc:\n"
        "        print(exc)\n"
    )
    env = {**os.environ, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.splitlines()
    assert out[0] == "2" and out[1] == "UTC"
    assert "program 'toolbench-no-such-program-37' not found: looked on PATH (/usr/bin:/bin)" \
        in out[2] and str(scripts) in out[2]
