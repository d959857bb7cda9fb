from __future__ import annotations

import subprocess
import sys

import pytest

import toolbench


def test_all_is_sorted_and_complete() -> None:
    assert toolbench.__all__ == sorted(toolbench.__all__)
    for name in toolbench.__all__:
        assert hasattr(toolbench, name), name
    public = {n for n in vars(toolbench) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(toolbench, n)).__name__ == "module"}
    assert public - modules == set(toolbench.__all__)


@pytest.mark.slow
def test_core_import_is_light() -> None:
    code = (
        "import sys, toolbench; "
        "heavy = [m for m in ('pandas', 'ipywidgets', 'IPython') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _public_callables() -> list[tuple[str, object]]:
    """Every public function, class and method (inherited ones included) a user can reach."""
    import inspect

    found: list[tuple[str, object]] = []
    for name in toolbench.__all__:
        obj = getattr(toolbench, name)
        found.append((name, obj))
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for attr, member in inspect.getmembers(obj):
                if attr.startswith("_") or not callable(member):
                    continue
                if (getattr(member, "__module__", None) or "").startswith("toolbench"):
                    found.append((f"{name}.{attr}", member))
    return found


FREE_KEYWORDS = {"Bench.call", "Bench.acall", "Bench.compare", "Bench.acompare",
                 "ToolHandle.acall", "Provenance.with_fields"}
"""Where ``**kwargs: Any`` is the point: a tool's own arguments, or free provenance fields."""


def test_every_public_entry_point_has_its_own_docstring_and_signature() -> None:
    """No public method is generated (``twins``) or hides its keywords in ``**kwargs: Any``:
    go-to-definition lands on the method itself, which says what it takes."""
    import inspect
    import typing

    problems: list[str] = []
    checked = 0
    for qualname, obj in _public_callables():
        doc = inspect.getdoc(obj)
        if not doc or len(doc) < 20:
            problems.append(f"{qualname} has no docstring of its own")
        if inspect.isfunction(obj) or inspect.ismethod(obj):
            func = inspect.unwrap(obj)
            if func.__qualname__.split(".")[-1] != qualname.split(".")[-1]:
                problems.append(f"{qualname} is made by {func.__qualname__}, not written out")
            for param in inspect.signature(func).parameters.values():
                # Annotations are text here (``from __future__ import annotations``).
                if (param.kind is param.VAR_KEYWORD and param.annotation in ("Any", typing.Any)
                        and qualname not in FREE_KEYWORDS):
                    problems.append(f"{qualname} hides options in **{param.name}: Any")
            checked += 1
    assert problems == []
    assert checked > 40, checked  # the Bench's twins, McpClient's methods, tool, ...


def test_the_bench_writes_its_sync_and_async_faces_out() -> None:
    """``call`` blocks and ``acall`` awaits, with the same parameters, for every operation."""
    import inspect

    for op in ("connect", "add", "disconnect", "load_config", "close", "call", "compare",
               "map"):
        sync, asynchronous = getattr(toolbench.Bench, op), getattr(toolbench.Bench, "a" + op)
        assert not inspect.iscoroutinefunction(sync), op
        assert inspect.iscoroutinefunction(asynchronous), op
        assert (list(inspect.signature(sync).parameters)
                == list(inspect.signature(asynchronous).parameters)), op
