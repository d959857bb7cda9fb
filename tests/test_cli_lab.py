"""``toolbench lab``, in process (tests/test_cli.py runs the command)."""

from __future__ import annotations

from toolbench._cli.lab import lab_command, position


def test_lab_command_adds_allow_root_only_for_root() -> None:
    assert "--allow-root" in lab_command(["--no-browser"], 0)
    assert "--allow-root" not in lab_command(["--no-browser"], 1000)
    assert lab_command(["--allow-root"], 0).count("--allow-root") == 1


def test_lab_is_found_before_argparse_after_the_server_options_only() -> None:
    """Everything after ``lab`` is jupyter's (argparse would refuse --no-browser)."""
    assert position(["lab", "--no-browser"]) == 0
    assert position(["--config", "x.json", "--demo", "lab"]) == 3
    assert position(["--config=x.json", "lab", "--port", "8899"]) == 1
    assert position(["catalog", "lab"]) is None
    assert position(["--search", "lab"]) is None
