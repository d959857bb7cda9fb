"""The import graph follows DESIGN.md's layers, and the folders name them.

Each layer is a folder of ``toolbench/`` (or one module, for the shared loop), and a module's
layer is the folder it lives in. Every ``import`` counts, including those inside functions (a
lazy import is still an arrow); only imports under ``if TYPE_CHECKING:`` do not, since they
never run. No arrow goes up a layer, and no two modules import each other, even indirectly.
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "toolbench"

LAYERS: dict[int, tuple[str, ...]] = {
    0: ("_core",),  # ids, errors, escaping, the client protocol, schema checks: no I/O
    1: ("_transports",),  # McpClient, ToolBox, Toolset
    2: ("_routing",),  # ToolRouter, PegBoard, what a connect target opens
    3: ("_loop",),  # the shared loop
    4: ("_bench",),  # the bench: calls, records, the journal, config, the cluster
    5: ("_notebook", "_cli", "_child", "__main__", "demo"),  # display, widgets; the command
    # (and the child it runs JupyterLab as); demos
}
"""Top-level folder or module → layer, bottom-up, as DESIGN.md's "Layers" draws them."""

def _module_name(path: Path) -> str:
    """``toolbench/_core/ids.py`` → ``_core.ids``; a package is named by its folder."""
    parts = [p for p in path.relative_to(PACKAGE).with_suffix("").parts if p != "__init__"]
    if parts and parts[0] == "demo":
        return "demo"  # the bundled servers count as one unit
    return ".".join(parts) or "toolbench"


def _is_module(name: str) -> bool:
    base = PACKAGE.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _layer(name: str) -> int:
    top = name.split(".")[0]
    for layer, names in LAYERS.items():
        if top in names:
            return layer
    raise AssertionError(f"toolbench.{name} has no layer: add its folder to LAYERS in "
                         f"{__file__}")


def _imports() -> dict[str, set[str]]:
    """module → the toolbench modules it imports at run time."""
    found: dict[str, set[str]] = collections.defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path)
        if module == "toolbench":
            continue  # the package's front door imports everything, by design
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(sub) for node in ast.walk(tree)
                       if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                       for sub in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for name in names:
                parts = name.split(".")
                if parts[0] != "toolbench" or len(parts) < 2:
                    continue
                target = "demo" if parts[1] == "demo" else ".".join(parts[1:])
                a_module = target == "demo" or target in ("_loop", "_cli") or (
                    "." in target and _is_module(target))  # not a package's empty front
                if a_module and target != module:
                    found[module].add(target)
    return found


def _cycles(edges: dict[str, set[str]]) -> set[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.add(frozenset(component))

    for node in list(edges):
        if node not in index:
            visit(node)
    return cycles


def test_every_module_lives_in_a_layer_folder() -> None:
    modules = {_module_name(path) for path in PACKAGE.rglob("*.py")} - {"toolbench"}
    for module in modules:
        _layer(module)
    flat = sorted(p.name for p in PACKAGE.glob("_*.py")
                  if p.stem not in ("_loop", "_cli", "_child") and p.name != "__init__.py"
                  and p.name != "__main__.py")
    assert flat == [], f"modules outside a layer folder: {flat}"


def test_no_upward_arrow() -> None:
    upward = sorted((a, b) for a, targets in _imports().items() for b in targets
                    if _layer(b) > _layer(a))
    assert upward == [], "a lower layer imports a higher one"


def test_no_import_cycle() -> None:
    assert _cycles(_imports()) == set()


def test_the_checks_catch_an_upward_arrow_and_a_cycle() -> None:
    """The two checks above fail on a graph that breaks them (they could fail)."""
    edges = {"_bench.bench": {"_notebook.display"}, "_notebook.display": {"_bench.bench"}}
    assert [(a, b) for a, bs in edges.items() for b in bs if _layer(b) > _layer(a)] == [
        ("_bench.bench", "_notebook.display")]
    assert _cycles(edges) == {frozenset(edges)}


def test_the_graph_is_read_the_way_python_runs_it() -> None:
    """The parser sees every import form and skips typing-only ones: checked on known modules."""
    edges = _imports()
    assert "_loop" in edges["_bench.bench"]  # `from toolbench._loop import ...`
    assert "_core.schema.validate" in edges["_bench.tables"]  # a from-import
    assert "_core.client" in edges["_notebook.views.display"]  # an import inside a method
    assert "_bench.journal.journal" not in edges["_bench.journal.store"]  # typing only
