"""The import graph follows DESIGN.md's layers: lower layers never import higher ones.

Every ``import`` counts, including those inside functions (a lazy import is still an arrow);
only imports under ``if TYPE_CHECKING:`` do not, since they never run. Arrows that still go
the wrong way are listed in ``STILL_UPWARD`` and ``STILL_CYCLIC``; each must disappear, and
the lists shrink with them (an entry that no longer exists fails the test, so the lists stay
true).
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "toolbench"

LAYERS: dict[int, tuple[str, ...]] = {
    0: ("_ids", "_errors", "_html"),  # no I/O
    1: ("_client", "_validate", "_preload"),  # the client protocol; checking arguments
    2: ("_mcp", "_mcp_errors", "_stdio", "_limits", "_stderr", "_toolbox", "_toolset",
        "_toolset_serve"),  # transports
    3: ("_router", "_pegboard", "_targets"),  # routing
    4: ("_loop",),  # the shared loop
    5: ("_bench", "_batch", "_records", "_journal", "_journal_file", "_intent_log",
        "_sqlite_pages", "_config", "_handles", "_cluster"),  # the bench
    6: ("_cells", "_display", "_compare_view", "_widgets", "_form", "_accessor"),  # display
    7: ("_cli", "__main__", "demo"),  # the command and the demo servers
}
"""Module → layer, bottom-up, as DESIGN.md's "Layers" draws them."""

STILL_UPWARD = {
    ("_bench", "_display"),  # Bench's own HTML repr
    ("_bench", "_widgets"),  # Bench.explore()
    ("_bench", "demo"),  # Bench.demo() starts the bundled servers
}
"""Arrows from a lower layer to a higher one that are still to be removed."""

STILL_CYCLIC = {
    frozenset({"_bench", "_cluster"}),  # map(cluster=) hands off; a worker builds a Bench
}
"""Import cycles still to be broken (each as the set of modules in it)."""


def _short(module: str) -> str:
    name = module.removeprefix("toolbench.")
    return "demo" if name == "demo" or name.startswith("demo.") else name


def _layer(name: str) -> int:
    for layer, names in LAYERS.items():
        if name in names:
            return layer
    raise AssertionError(f"toolbench.{name} has no layer: add it to LAYERS in {__file__}")


def _imports() -> dict[str, set[str]]:
    """module → the toolbench modules it imports at run time (short names)."""
    found: dict[str, set[str]] = collections.defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = _short(".".join(p for p in parts if p != "__init__"))
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
                target = "demo" if parts[1] == "demo" else parts[1]
                if target != module and (target == "demo"
                                         or (PACKAGE / f"{target}.py").exists()):
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


def test_every_module_has_a_layer() -> None:
    modules = {_short(".".join(p for p in path.relative_to(PACKAGE.parent).with_suffix("")
                               .parts if p != "__init__"))
               for path in PACKAGE.rglob("*.py")}
    for module in modules - {"toolbench"}:
        _layer(module)


def test_no_new_upward_arrow() -> None:
    upward = {(a, b) for a, targets in _imports().items() for b in targets
              if _layer(b) > _layer(a)}
    assert upward - STILL_UPWARD == set(), "a lower layer imports a higher one"
    assert STILL_UPWARD - upward == set(), "gone: remove it from STILL_UPWARD"


def test_no_new_import_cycle() -> None:
    cycles = _cycles(_imports())
    assert cycles - STILL_CYCLIC == set(), "a new import cycle"
    assert STILL_CYCLIC - cycles == set(), "gone or changed: update STILL_CYCLIC"


def test_the_graph_is_read_the_way_python_runs_it() -> None:
    """The parser sees lazy imports and skips typing-only ones: checked on known modules."""
    edges = _imports()
    assert "_loop" in edges["_bench"]  # a module-level import
    assert "_display" in edges["_bench"]  # an import inside a method
    assert "_journal" not in edges["_records"]  # only under TYPE_CHECKING
