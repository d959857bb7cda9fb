"""Point the README's Binder badge at this clone's GitHub repository.

The badge's link names a GitHub repository (``https://mybinder.org/v2/gh/OWNER/NAME/HEAD...``)
and ships with the placeholder ``OWNER``. Run from anywhere in a clone:

    python scripts/binder_badge.py            # rewrite README.md from the git remote
    python scripts/binder_badge.py --check    # exit 1 if the badge names another repository

The repository comes from the ``origin`` remote (``--remote NAME`` for another; without
``origin``, the first remote on github.com), in any of GitHub's URL forms:
``https://github.com/OWNER/NAME(.git)``, ``git@github.com:OWNER/NAME.git``,
``ssh://git@github.com/OWNER/NAME.git`` and ``git://github.com/OWNER/NAME.git``. Credentials
in a URL are never printed. Without a GitHub remote nothing is changed, and the message says
what to edit by hand. Only the standard library is used, so no venv is needed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BADGE = re.compile(r"(https://mybinder\.org/v2/gh/)([^/\s)]+)/([^/\s)]+)(/)")
"""The badge's link: the owner and repository name are the two parts after ``/v2/gh/``."""
PART = r"[A-Za-z0-9_.-]+"
GITHUB = [
    re.compile(rf"^(?:https?|git)://(?:[^@/]+@)?github\.com(?::\d+)?/({PART})/({PART})/?$"),
    re.compile(rf"^ssh://(?:[^@/]+@)?github\.com(?::\d+)?/({PART})/({PART})/?$"),
    re.compile(rf"^(?:[^@/:]+@)?github\.com:/?({PART})/({PART})/?$"),  # scp-like: git@...
]
HAND = ("edit the Binder badge's link in README.md by hand: replace the two parts after "
        "https://mybinder.org/v2/gh/ (OWNER/toolbench) with your GitHub owner and repository")


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def github_repository(url: str) -> tuple[str, str] | None:
    """``(owner, name)`` of a GitHub remote URL, or None for anything else."""
    url = url.strip()
    for pattern in GITHUB:
        found = pattern.match(url)
        if found:
            owner, name = found.groups()
            name = name[:-4] if name.endswith(".git") else name
            if owner in (".", "..") or name in ("", ".", ".."):
                return None
            return owner, name
    return None


def _shown(url: str) -> str:
    """A remote URL fit to print: no user or password (a token may travel there)."""
    return re.sub(r"^([a-z+]+://)[^@/]+@", r"\1", url)


def remote_repository(remote: str | None) -> tuple[tuple[str, str] | None, str]:
    """The GitHub repository of ``remote`` (default: origin, else the first GitHub remote),
    and a sentence on where it came from or why there is none."""
    names = (_git("remote") or "").split()
    if remote is not None and remote not in names:
        return None, (f"this clone has no remote {remote!r} (remotes: "
                      f"{', '.join(names) or 'none'})")
    if not names:
        return None, "this clone has no git remote"
    wanted = [remote] if remote is not None else (
        ["origin"] if "origin" in names else names)
    for name in wanted:
        url = _git("remote", "get-url", name) or ""
        found = github_repository(url)
        if found is not None:
            return found, f"remote {name!r} ({_shown(url)})"
    shown = ", ".join(f"{n} ({_shown(_git('remote', 'get-url', n) or '?')})" for n in wanted)
    return None, f"no GitHub remote among {shown}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--remote", help="the git remote to read (default: origin)")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if the badge names another repository")
    args = parser.parse_args(argv)
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    badges = BADGE.findall(text)
    if not badges:
        print(f"binder_badge: no Binder badge link in {readme}", file=sys.stderr)
        return 2
    found, where = remote_repository(args.remote)
    if found is None:
        print(f"binder_badge: {where}; nothing changed. To point the badge at your "
              f"repository, {HAND}.", file=sys.stderr)
        return 2
    owner, name = found
    current = {f"{b[1]}/{b[2]}" for b in badges}
    if current == {f"{owner}/{name}"}:
        print(f"binder_badge: the badge already points at {owner}/{name} (from {where})")
        return 0
    if args.check:
        print(f"binder_badge: the badge points at {', '.join(sorted(current))}, but this "
              f"clone is {owner}/{name} (from {where}); run python scripts/binder_badge.py",
              file=sys.stderr)
        return 1
    readme.write_text(BADGE.sub(lambda m: f"{m[1]}{owner}/{name}{m[4]}", text),
                      encoding="utf-8")
    print(f"binder_badge: the badge now points at {owner}/{name} (from {where}): "
          f"https://mybinder.org/v2/gh/{owner}/{name}/HEAD")
    return 0


if __name__ == "__main__":
    sys.exit(main())
