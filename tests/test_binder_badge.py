"""scripts/binder_badge.py on throwaway clones: real git repositories with fake remotes.

Each test copies the script and the README into a fresh ``git init`` folder (as a clone has
them), sets remotes with ``git remote add``, and runs the script there as a user would.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "binder_badge.py"
LINK = "https://mybinder.org/v2/gh/{}/HEAD?urlpath=lab/tree/notebooks/01_explore.ipynb"
HAS_GIT = shutil.which("git") is not None
pytestmark = pytest.mark.slow  # git and the script run as processes


def clone(folder: Path, *remotes: tuple[str, str]) -> Path:
    (folder / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, folder / "scripts" / SCRIPT.name)
    shutil.copy(ROOT / "README.md", folder / "README.md")
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=30)
    for name, url in remotes:
        subprocess.run(["git", "-C", str(folder), "remote", "add", name, url], check=True,
                       timeout=30)
    return folder


def badge(folder: Path) -> str:
    found = re.findall(r"https://mybinder\.org/v2/gh/([^/\s)]+/[^/\s)]+)/",
                       (folder / "README.md").read_text(encoding="utf-8"))
    assert len(found) == 1, found
    return str(found[0])


def run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # from a subfolder: the script finds its repository by its own place, not the cwd
    return subprocess.run([sys.executable, "scripts/binder_badge.py", *args], cwd=folder,
                          capture_output=True, text=True, timeout=60)


def test_the_readme_ships_the_placeholder_and_names_the_script() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert LINK.format("OWNER/toolbench") in text
    assert "python scripts/binder_badge.py" in text and "by hand" in text


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
@pytest.mark.parametrize("url", [
    "https://github.com/ada/toolbench.git",
    "https://github.com/ada/toolbench",
    "https://github.com/ada/toolbench/",
    "http://github.com/ada/toolbench.git",
    "https://x-access-token:ghp_SECRETSECRET@github.com/ada/toolbench.git",
    "git@github.com:ada/toolbench.git",
    "git@github.com:ada/toolbench",
    "github.com:ada/toolbench.git",
    "ssh://git@github.com/ada/toolbench.git",
    "ssh://git@github.com:22/ada/toolbench",
    "git://github.com/ada/toolbench.git",
])
def test_every_github_url_form_rewrites_the_badge(tmp_path: Path, url: str) -> None:
    folder = clone(tmp_path, ("origin", url))
    before = (folder / "README.md").read_text(encoding="utf-8")
    out = run(folder)
    assert out.returncode == 0, out.stderr
    assert badge(folder) == "ada/toolbench"
    after = (folder / "README.md").read_text(encoding="utf-8")
    assert LINK.format("ada/toolbench") in after
    # only the two parts of the link changed
    assert after == before.replace(LINK.format("OWNER/toolbench"), LINK.format("ada/toolbench"))
    assert "SECRET" not in out.stdout + out.stderr
    assert run(folder, "--check").returncode == 0  # and now it agrees with the remote
    again = run(folder)
    assert again.returncode == 0 and "already points at ada/toolbench" in again.stdout


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_origin_wins_else_the_first_github_remote_or_the_one_named(tmp_path: Path) -> None:
    folder = clone(tmp_path / "a", ("mirror", "https://gitlab.com/ada/toolbench.git"),
                   ("fork", "git@github.com:bob/tb.git"), ("upstream", "git@github.com:eve/x.git"))
    assert run(folder, "--check").returncode == 1  # the placeholder is not bob/tb
    assert run(folder).returncode == 0 and badge(folder) == "bob/tb"
    assert run(folder, "--remote", "upstream").returncode == 0 and badge(folder) == "eve/x"
    other = clone(tmp_path / "b", ("upstream", "git@github.com:eve/x.git"),
                  ("origin", "https://github.com/ada/toolbench"))
    assert run(other).returncode == 0 and badge(other) == "ada/toolbench"


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
@pytest.mark.parametrize(("remotes", "words"), [
    ((), "this clone has no git remote"),
    ((("origin", "https://gitlab.com/ada/toolbench.git"),), "no GitHub remote among origin"),
    ((("origin", "https://github.com/ada"),), "no GitHub remote"),
    ((("origin", "https://github.com.evil.example/ada/toolbench"),), "no GitHub remote"),
    ((("origin", "/srv/git/toolbench.git"),), "no GitHub remote"),
])
def test_without_a_github_remote_nothing_changes_and_it_says_what_to_edit(
        tmp_path: Path, remotes: tuple[tuple[str, str], ...], words: str) -> None:
    folder = clone(tmp_path, *remotes)
    before = (folder / "README.md").read_text(encoding="utf-8")
    out = run(folder)
    assert out.returncode == 2
    assert words in out.stderr and "by hand" in out.stderr and "OWNER/toolbench" in out.stderr
    assert (folder / "README.md").read_text(encoding="utf-8") == before
    named = run(folder, "--remote", "nowhere")
    assert named.returncode == 2 and "no remote 'nowhere'" in named.stderr
