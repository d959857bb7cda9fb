"""Strip outputs, execution counts and widget state from notebooks, in place.

Committed notebooks carry no outputs: outputs are large, machine-specific (timings, temp
paths) and would make every re-run a diff. ``--check`` changes nothing and exits 1 if any
notebook still has outputs (``tests/test_notebooks.py`` asserts the same).

Usage: ``python scripts/strip_notebooks.py [--check] [notebook ...]`` (default:
notebooks/*.ipynb).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
KEEP_METADATA = ("kernelspec", "language_info")


def dirty(nb: Any) -> list[str]:
    """What in ``nb`` would be stripped, as short descriptions (empty when clean)."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            found.append(f"cell {index} has outputs")
        if cell.get("execution_count") is not None:
            found.append(f"cell {index} has an execution count")
        if cell.get("metadata"):
            found.append(f"cell {index} has metadata {sorted(cell.metadata)}")
    extra = sorted(set(nb.metadata) - set(KEEP_METADATA))
    if extra:
        found.append(f"notebook metadata {extra}")
    return found


def strip(nb: Any) -> Any:
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata = {}
    for key in set(nb.metadata) - set(KEEP_METADATA):
        del nb.metadata[key]
    return nb


def main(argv: list[str]) -> int:
    import nbformat

    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"] or sorted(NOTEBOOKS.glob("*.ipynb"))
    status = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        problems = dirty(nb)
        if not problems:
            continue
        if check:
            status = 1
            print(f"{path}: {'; '.join(problems)}", file=sys.stderr)
        else:
            nbformat.write(strip(nb), path)
            print(f"stripped {path}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
