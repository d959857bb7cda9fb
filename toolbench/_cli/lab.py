"""``toolbench lab``: JupyterLab on the tutorial notebooks, run as a child that the command
ends with.

Everything after ``lab`` goes to jupyter lab untouched, so ``main`` finds the command
(:func:`position`) before argparse reads the line: argparse would take ``--no-browser`` for
an option of its own and refuse it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from toolbench._cli.command import EXIT_FAILED, Commands
from toolbench._cli.terminal import err


def add(sub: Commands, servers: argparse.ArgumentParser) -> None:
    """``lab [JUPYTER_LAB_ARGS...]`` (its parser serves ``lab --help``)."""
    lab_help = ("open JupyterLab on the tutorial notebooks (./notebooks when it exists); "
                "as root it adds --allow-root, which jupyter lab needs to start as root")
    parser = sub.add_parser("lab", help=lab_help, description=lab_help)
    parser.add_argument("lab_args", nargs=argparse.REMAINDER, metavar="JUPYTER_LAB_ARGS",
                        help="passed on to jupyter lab as they are (--no-browser, --port 8899)")
    parser.set_defaults(run=lambda args: lab(args.lab_args))


def lab_command(lab_args: Sequence[str], euid: int | None) -> list[str]:
    """``jupyter lab`` with the user's arguments, and ``--allow-root`` when run as root.

    Jupyter refuses to start as root without that flag; in a container, root is the norm.
    """
    extra = ["--allow-root"] if euid == 0 and "--allow-root" not in lab_args else []
    return [sys.executable, "-m", "jupyterlab", *extra, *lab_args]


def position(argv: Sequence[str]) -> int | None:
    """Where ``lab`` stands in ``argv``, if it is the command (after ``--config FILE`` or
    ``--demo`` at most)."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "lab":
            return i
        if token == "--config":
            i += 2
        elif token.startswith("--config=") or token == "--demo":
            i += 1
        else:
            return None
    return None


def lab(lab_args: Sequence[str]) -> int:
    import importlib.util

    if importlib.util.find_spec("jupyterlab") is None:
        err("error: JupyterLab is not installed here; install it with "
            "pip install 'toolbench[lab]'")
        return EXIT_FAILED
    geteuid = getattr(os, "geteuid", None)
    command = lab_command(lab_args, geteuid() if geteuid is not None else None)
    if "--allow-root" in command and "--allow-root" not in lab_args:
        err("running as root, so passing --allow-root to jupyter lab")
    folder = Path("notebooks") if Path("notebooks").is_dir() else Path.cwd()
    from toolbench import _child

    return _child.run(command, cwd=os.fspath(folder))  # JupyterLab ends with this command
