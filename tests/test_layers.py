"""The house: the import graph follows DESIGN.md's layers, and each room stays small.

Each layer is a folder of ``toolbench/`` (or one module, for the shared loop), and a module's
layer is the top folder it lives in. Every ``import`` counts, including those inside functions
(a lazy import is still an arrow) and those under ``if TYPE_CHECKING:`` (a type-only import is
still a dependency a reader has to follow). No arrow goes up a layer, and no two modules import
each other, even indirectly.

The rooms: no folder holds more than 14 modules, no module is over 500 lines, and a package's
``__init__.py`` only hands names on. The bench is composition: of the classes ``Bench`` inherits
from, only the one that builds its collaborators assigns to ``self``, and nothing outside an
owner reads the private attributes the owner keeps (tests included).
"""

from __future__ import annotations

import ast
import collections
import inspect
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "toolbench"

LAYERS: dict[int, tuple[str, ...]] = {
    0: ("_core",),  # ids, errors, escaping, the client protocol, schema checks: no I/O
    1: ("_transports",),  # McpClient, ToolBox, Toolset
    2: ("_routing",),  # ToolRouter, PegBoard, what a connect target opens
    3: ("_loop",),  # the shared loop
    4: ("_bench",),  # the bench: calls, records, the journal, config, the cluster
    5: ("_notebook", "_cli", "_child", "__main__", "demo", "models"),  # display, widgets; the
    # command (and the child it runs JupyterLab as); demos; tb.models (a public re-export)
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


def _imports(typing_too: bool = True) -> dict[str, set[str]]:
    """module → the toolbench modules it imports (at run time only, if not ``typing_too``)."""
    found: dict[str, set[str]] = collections.defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path)
        if module == "toolbench":
            continue  # the package's front door imports everything, by design
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = set() if typing_too else {
            id(sub) for node in ast.walk(tree)
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
    run_time = _imports(typing_too=False)
    typed = {(a, b) for a, bs in edges.items() for b in bs} - {
        (a, b) for a, bs in run_time.items() for b in bs}
    assert typed, "no module has a type-only import: the typing_too switch reads nothing"


MAX_MODULES_PER_FOLDER = 14
MAX_MODULE_LINES = 500


def _folder_sizes() -> dict[str, int]:
    """folder (relative to the package) → how many modules it holds, ``__init__.py`` not counted."""
    return {str(folder.relative_to(PACKAGE.parent)): sum(
                1 for p in folder.glob("*.py") if p.name != "__init__.py")
            for folder in [PACKAGE, *PACKAGE.rglob("*/")] if folder.name != "__pycache__"}


def test_no_folder_holds_more_than_14_modules() -> None:
    crowded = {folder: n for folder, n in _folder_sizes().items() if n > MAX_MODULES_PER_FOLDER}
    assert crowded == {}, f"more than {MAX_MODULES_PER_FOLDER} modules in a folder: {crowded}"


def _long_modules(limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    sizes = {str(p.relative_to(PACKAGE.parent)): len(p.read_text(encoding="utf-8").splitlines())
             for p in PACKAGE.rglob("*.py")}
    return {name: n for name, n in sizes.items() if n > limit}


def test_no_module_is_over_500_lines() -> None:
    assert _long_modules() == {}, f"split these by responsibility: {_long_modules()}"


def _init_extras(source: str) -> list[str]:
    """What an ``__init__.py`` does beyond handing names on (a docstring, imports, ``__all__``)."""
    extras = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            continue
        extras.append(ast.unparse(node).splitlines()[0])
    return extras


def test_package_fronts_only_hand_names_on_and_say_what_they_hold() -> None:
    for init in PACKAGE.rglob("__init__.py"):
        source = init.read_text(encoding="utf-8")
        name = str(init.relative_to(PACKAGE.parent))
        assert _init_extras(source) == [], f"{name} does more than hand names on"
        assert ast.get_docstring(ast.parse(source)), f"{name} has no docstring saying what it holds"


def _self_assignments(cls: type) -> list[str]:
    """Each place a class's own source assigns to ``self`` (``self.x =``, ``+=``, setattr)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif (isinstance(node, ast.Call) and ast.unparse(node.func) in (
                "setattr", "object.__setattr__") and node.args
              and ast.unparse(node.args[0]) == "self"):
            found.append(f"{cls.__qualname__}: {ast.unparse(node)}")
        for target in targets:
            for sub in ast.walk(target):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)
                        and sub.value.id == "self"):
                    found.append(f"{cls.__qualname__}: {ast.unparse(node).splitlines()[0]}")
    return found


def test_only_the_builder_of_the_bench_assigns_to_self() -> None:
    """Bench is composition: its faces hold no state, so every piece of state has one owner."""
    import toolbench
    builders = [cls for cls in toolbench.Bench.__mro__ if "__init__" in vars(cls)
                and cls.__module__.startswith("toolbench.")]
    assert len(builders) == 1, f"more than one class builds the bench: {builders}"
    offenders = [line for cls in toolbench.Bench.__mro__
                 if cls.__module__.startswith("toolbench.") and cls is not builders[0]
                 for line in _self_assignments(cls)]
    assert offenders == [], "a face of the bench keeps state on the shared self"


def _owned_private_names() -> dict[str, set[str]]:
    """``_x`` → the classes under ``toolbench/_bench`` that keep it on ``self``."""
    owners: dict[str, set[str]] = collections.defaultdict(set)
    for path in (PACKAGE / "_bench").rglob("*.py"):
        for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in ast.walk(cls):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id == "self" and isinstance(node.ctx, ast.Store)
                        and node.attr.startswith("_") and not node.attr.startswith("__")):
                    owners[node.attr].add(cls.name)
    return owners


def _private_reaches(source: str, owned: dict[str, set[str]]) -> list[str]:
    """Accesses ``<expr>._x`` of an owned name, from outside any class that keeps ``_x`` itself."""
    found = []

    def visit(node: ast.AST, keeps: set[str]) -> None:
        if isinstance(node, ast.ClassDef):
            keeps = keeps | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
                             and isinstance(n.value, ast.Name) and n.value.id == "self"
                             and isinstance(n.ctx, ast.Store)}
        if (isinstance(node, ast.Attribute) and node.attr in owned and node.attr not in keeps
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, keeps)

    visit(ast.parse(source), set())
    return found


def test_nothing_outside_an_owner_reads_its_private_state() -> None:
    owned = _owned_private_names()
    roots = [PACKAGE / "_bench", PACKAGE / "_notebook", PACKAGE / "_cli", PACKAGE.parent / "tests"]
    reaches = {str(path.relative_to(PACKAGE.parent)): found
               for root in roots for path in root.rglob("*.py")
               if (found := _private_reaches(path.read_text(encoding="utf-8"), owned))}
    assert reaches == {}, "these reach into a bench owner's private attributes"


def test_the_room_checks_can_fail() -> None:
    """Each house check flags a sample that breaks it."""
    assert _init_extras('"""Doc."""\nfrom a import b\n__all__ = ["b"]\n') == []
    assert _init_extras('"""Doc."""\nx = compute()\n') == ["x = compute()"]
    assert _long_modules(limit=10), "no module over 10 lines: the size check reads nothing"
    assert max(_folder_sizes().values()) > 1

    class Face:
        def f(self) -> None:
            self.n = 1
            self.k += 1
            self.m = 2

    assert len(_self_assignments(Face)) == 3
    owned = {"_rows": {"Servers"}}
    outside = "def f(bench):\n    return bench.servers._rows\n"
    inside = "class Servers:\n    def __init__(self):\n        self._rows = {}\n" \
             "    def same(self, other):\n        return other._rows == self._rows\n"
    assert _private_reaches(outside, owned) == ["line 2: bench.servers._rows"]
    assert _private_reaches(inside, owned) == []


def _room(module: str) -> str:
    """``_bench.journal.store`` → ``_bench.journal``: the folder a module lives in, one level
    below its layer (a module right in a layer folder is a room of its own)."""
    return ".".join(module.split(".")[:2])


def test_no_circle_between_rooms() -> None:
    """Inside a layer the rooms are floors too: a reader can start at the bottom room and
    read up, as each package's docstring lists them."""
    rooms: dict[str, set[str]] = collections.defaultdict(set)
    for module, targets in _imports().items():
        for target in targets:
            if _room(module) != _room(target):
                rooms[_room(module)].add(_room(target))
    assert _cycles(rooms) == set()
    assert _room("_bench.journal.store") == "_bench.journal" and _room("_loop") == "_loop"
