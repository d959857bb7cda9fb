"""Execute the tutorial notebooks top to bottom in a kernel that runs *this* interpreter.

Used by ``tests/test_notebooks.py`` (imported by path) and by ``scripts/check_binder.sh`` (run
inside a fresh Binder-like venv, where only nbclient, which JupyterLab brings, is available).

Why a private kernelspec: the kernel named ``python3`` is looked up in JUPYTER_PATH, then the
user's own folder, then the venv. A user-level ``python3`` kernelspec pointing at another
Python would silently run the notebooks somewhere else. A spec written to a temporary folder
and handed to the kernel manager leaves no room for that.

Each run appends one extra cell (not saved anywhere) that prints the kernel's interpreter and
the kernel's child processes. A notebook may leave its bench open on purpose (01 does, so its
explorer still works after Run All); what must never happen is a server that outlives the
kernel. So the runner notes the children's pids, and after the kernel has shut down it fails
the notebook if any of them is still running (toolbench ends its servers at interpreter exit).

Usage: ``python scripts/run_notebooks.py [notebook ...]`` (default: every notebooks/*.ipynb).
Exit status 1 if any notebook fails or leaves child processes.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
MARK = "toolbench-check:"
PROBE_MARK = "toolbench-probe:"

CHECK_CELL = f"""\
import json as _json, os as _os, sys as _sys, time as _time

def _kids(pids=None):
    found = []
    for _pid in _os.listdir("/proc") if _os.path.isdir("/proc") else []:
        if not _pid.isdigit():
            continue
        try:
            with open(f"/proc/{{_pid}}/stat") as _f:
                _ppid = int(_f.read().rsplit(")", 1)[1].split()[1])
            if _ppid == _os.getpid():
                with open(f"/proc/{{_pid}}/cmdline", "rb") as _f:
                    found.append(_f.read().replace(b"\\0", b" ").decode(errors="replace")[:160])
                if pids is not None:
                    pids.append(int(_pid))
        except (OSError, ValueError, IndexError):
            continue
    return found

_deadline = _time.monotonic() + 5
while _kids() and _time.monotonic() < _deadline:  # a closing child may take a moment
    _time.sleep(0.05)
_pids = []
_children = _kids(_pids)
print({MARK!r}, _json.dumps({{"executable": _sys.executable, "children": _children,
                              "pids": _pids}}))
"""


def _kernel_spec_dir(tmp: Path) -> Path:
    kernels = tmp / "kernels"
    spec = kernels / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }))
    return kernels


def execute(path: Path, *, timeout: float = 180.0,
            probe: str | None = None) -> tuple[Any, float, dict[str, Any]]:
    """Run ``path``; return the executed notebook (extra cells removed), seconds, check info.

    ``probe`` is code run after the last cell, in the same kernel, that prints
    ``PROBE_MARK`` and a JSON value: tests use it to read the notebook's variables. Its value
    is ``info["probe"]``. Raises nbclient's ``CellExecutionError`` if a cell fails.
    """
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    if probe is not None:
        nb.cells.append(nbformat.v4.new_code_cell(probe))
    nb.cells.append(nbformat.v4.new_code_cell(CHECK_CELL))
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("JUPYTER_PLATFORM_DIRS", None)
    with tempfile.TemporaryDirectory(prefix="toolbench-kernel-") as tmp:
        specs = KernelSpecManager(kernel_dirs=[str(_kernel_spec_dir(Path(tmp)))])
        km = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)
        client = NotebookClient(
            nb, km=km, kernel_name="python3", timeout=timeout,
            resources={"metadata": {"path": str(path.parent)}},
        )
        started = time.perf_counter()
        client.execute(env=env, cleanup_kc=True)  # we made the manager: nbclient must still stop it
        seconds = time.perf_counter() - started
    info: dict[str, Any] = _marked(path, nb.cells.pop(), MARK)
    info["survivors"] = _survivors(info.get("pids", []), info.get("children", []))
    if probe is not None:
        info["probe"] = _marked(path, nb.cells.pop(), PROBE_MARK)
    return nb, seconds, info


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie awaiting its parent)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _survivors(pids: list[int], names: list[str], grace: float = 15.0) -> list[str]:
    """The kernel's children still running ``grace`` seconds after the kernel shut down."""
    deadline = time.monotonic() + grace
    alive = [(p, n) for p, n in zip(pids, names, strict=False) if _running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [(p, n) for p, n in alive if _running(p)]
    return [n for _, n in alive]


def _marked(path: Path, cell: Any, mark: str) -> Any:
    """The JSON value that ``cell`` printed after ``mark``."""
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
    line = next((ln for ln in text.splitlines() if ln.startswith(mark)), None)
    if line is None:
        raise RuntimeError(f"{path.name}: no {mark!r} line from an added cell: {text!r}")
    return json.loads(line[len(mark):])


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(NOTEBOOKS.glob("*.ipynb"))
    if not paths:
        print(f"no notebooks found under {NOTEBOOKS}", file=sys.stderr)
        return 1
    failed = 0
    for path in paths:
        try:
            _, seconds, info = execute(path)
        except Exception as exc:  # report every notebook, then fail
            failed += 1
            print(f"FAIL {path.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        if info["executable"] != sys.executable:
            failed += 1
            print(f"FAIL {path.name}: ran in {info['executable']}, not {sys.executable}",
                  file=sys.stderr)
        elif info["survivors"]:
            failed += 1
            print(f"FAIL {path.name}: servers outlived the kernel: {info['survivors']}",
                  file=sys.stderr)
        else:
            left = f" ({len(info['children'])} servers left open, ended with the kernel)" \
                if info["children"] else ""
            print(f"ok   {path.name}  {seconds:5.1f} s{left}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
