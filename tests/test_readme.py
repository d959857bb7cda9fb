"""The README tells the truth: its tour runs, and shows what it prints.

The python blocks of "A short tour" run in order in one namespace, against the real demo
servers, as a reader would paste them into one session; each block's output (what it prints,
then the repr of its last expression, as a REPL shows it) must match the block shown after
it. Only run-to-run values are loosened: latencies ("12.3 ms") and column alignment.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import os
import pydoc
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolbench as tb

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SEED = "0"
"""The README says its tables come from a run with TOOLBENCH_DEMO_SEED=0 (flaky's failures
are random otherwise; seed 0 fails none of its first calls)."""


def section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def pairs(text: str, language: str) -> list[tuple[str, str | None]]:
    """Each ``language`` block with the plain (output) block right after it, if any."""
    found = blocks(text)
    out = []
    for i, (lang, code) in enumerate(found):
        if lang == language:
            follows = found[i + 1] if i + 1 < len(found) else None
            out.append((code, follows[1] if follows and follows[0] == "" else None))
    return out


def normalise(text: str) -> list[str]:
    """Lines with runs of spaces collapsed and latencies replaced: rows, columns and words
    still have to match.

    A latency is a number before "ms", or a number in a table's ``latency_ms`` column.
    """
    text = re.sub(r"\b\d+(?:\.\d+)?\s*ms\b", "<n> ms", text)
    out = []
    end: int | None = None  # where the latency_ms header ends: its numbers align right there
    for line in text.strip("\n").splitlines():  # keep the header's leading spaces
        if "latency_ms" in line:
            end = line.index("latency_ms") + len("latency_ms")
        elif end is not None:
            for number in re.finditer(r"\d+(?:\.\d+)?", line):
                if number.end() == end:
                    line = line[:number.start()] + "<n>" + line[number.end():]
                    break
        out.append(" ".join(line.split()))
    return out


def run_block(code: str, namespace: dict[str, Any]) -> str:
    """Run ``code`` as a REPL would: print output, then the last expression's repr."""
    tree = ast.parse(code)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    body = ast.Module(body=tree.body[:-1] if last else tree.body, type_ignores=[])
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(body, str(README), "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), str(README), "eval"), namespace)
            if value is not None:
                print(repr(value))
    return buffer.getvalue()


@pytest.mark.slow
def test_the_tour_runs_and_shows_what_it_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLBENCH_DEMO_SEED", SEED)
    tour = section("A short tour")
    assert f"TOOLBENCH_DEMO_SEED={SEED}" in tour, "the README must say how its tables were made"
    steps = pairs(tour, "python")
    assert len(steps) >= 5
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    try:
        for number, (code, shown) in enumerate(steps, 1):
            assert shown is not None, f"tour block {number} shows no output:\n{code}"
            printed = run_block(code, namespace)
            assert normalise(printed) == normalise(shown), (
                f"tour block {number}:\n{code}\nprints:\n{printed}\nbut the README shows:\n"
                f"{shown}")
    finally:
        bench = namespace.get("bench")
        if bench is not None:
            bench.close()


@pytest.mark.slow
def test_the_terminal_examples_print_what_the_readme_shows(tmp_path: Path) -> None:
    steps = pairs(section("From a terminal"), "bash")
    assert steps
    for code, shown in steps:
        assert shown is not None, code
        printed = ""
        for line in code.strip().splitlines():
            words = shlex.split(line)
            assert words[0] == "toolbench", line
            out = subprocess.run([sys.executable, "-m", "toolbench", *words[1:]], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=180,
                                 env={**os.environ, "TOOLBENCH_DEMO_SEED": SEED})
            printed += out.stdout + out.stderr
        assert normalise(printed) == normalise(shown), f"{code}\nprints:\n{printed}"


def test_the_first_command_sets_up_and_runs_on_a_fresh_machine() -> None:
    quick = section("Quick start")
    first_lang, first = blocks(quick)[0]
    assert first_lang == "bash"
    command = " ".join(first.split())
    # a venv, the project installed into it, and a real command run from it
    assert re.search(r"python3 -m venv (\S+) && \1/bin/pip install -e '\.\[lab\]' && "
                     r"\1/bin/toolbench demo", command), command


def test_the_test_command_is_the_one_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    called = re.findall(r'^"\$PY" (-m pytest[^\n]*)$', ci, re.MULTILINE)
    assert called == ["-m pytest -q"], called
    commands = [code.strip() for lang, code in blocks(section("Quick start")) if lang == "bash"]
    assert "python " + called[0] in commands


def test_the_readme_names_only_files_a_user_can_open() -> None:
    # DESIGN.md is the developers' contract and not in the repository: the README says what
    # the design is in its own words, and every path it names is one a reader can open.
    text = README.read_text(encoding="utf-8")
    assert "DESIGN" not in text
    assert "\n## How it is built\n" in text and "\n## Design decisions\n" in text
    paths = [token for token in re.findall(r"`([\w.-]+(?:/[\w.-]*)*)`", text)
             if len(token) > 1 and not token.startswith(("./", ".venv/"))  # the user's own
             and ("/" in token or re.search(r"\.(md|py|ipynb|sh|txt|toml|json)$", token))]
    assert len(paths) >= 10, paths
    missing = [p for p in paths
               if not (ROOT / p).exists() and not (ROOT / "toolbench" / p).exists()]
    assert not missing, f"the README names files that are not in the repository: {missing}"


def test_no_public_docstring_or_notebook_sends_a_user_to_design_md() -> None:
    named = []
    for name in tb.__all__:
        value = getattr(tb, name)
        members = [value, *(v for k, v in (vars(value).items() if inspect.isclass(value) else ())
                            if not k.startswith("_") or k == "__init__")]
        for member in members:
            member = getattr(member, "__func__", getattr(member, "fget", member))
            if "DESIGN" in (getattr(member, "__doc__", None) or ""):
                named.append(f"{name}.{getattr(member, '__name__', '?')}")
    assert not named, f"docstrings a user reads with help() name DESIGN.md: {named}"
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert "DESIGN" not in notebook.read_text(encoding="utf-8"), notebook.name


def test_prerequisites_are_stated() -> None:
    text = section("Prerequisites")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    minimum = re.search(r'requires-python = ">=(\d+\.\d+)"', pyproject)
    assert minimum and f"Python >= {minimum.group(1)}" in text
    assert re.search(r"`bash \.ci/run` takes about \d+.\d+ minutes", text)
    assert "--allow-root" in text and "toolbench lab" in text


def test_help_bench_documents_every_constructor_parameter() -> None:
    doc = pydoc.plain(pydoc.render_doc(tb.Bench))  # what help(tb.Bench) shows
    class_doc = inspect.getdoc(tb.Bench) or ""
    init_doc = inspect.getdoc(tb.Bench.__init__) or ""
    both = class_doc + "\n" + init_doc
    assert "Args:" in both and "Example:" in both
    args = both[both.index("Args:"):]
    for name in list(inspect.signature(tb.Bench.__init__).parameters)[1:]:
        entry = re.search(rf"^\s+{name} \([^)]*\): (.+(?:\n\s{{8,}}.+)*)", args, re.MULTILINE)
        assert entry, f"Bench docstring: no Args entry for {name!r}"
        assert f"{name}=" in both, f"Bench docstring: no example of {name}="
        assert name in doc


def test_the_readme_counts_the_notebooks_right() -> None:
    """Issue 37, item 16: the README said "five notebooks" when there were seven; every
    notebook is also in its table."""
    words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
             "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    text = README.read_text(encoding="utf-8")
    for said in re.findall(r"\b(\w+)\s+notebooks\b", text, flags=re.IGNORECASE):
        count = words.get(said.lower(), int(said) if said.isdigit() else None)
        if count is not None:
            assert count == len(notebooks), f"README says {said} notebooks; there are " \
                                            f"{len(notebooks)}"
    for stem in notebooks:
        assert f"| `{stem}` |" in text, f"{stem} is missing from the README's table"
