#!/usr/bin/env bash
# The Binder check for CI: would a Binder launch work, and do the tutorials run there?
#
# 1. Build a fresh venv the way repo2docker would: the Python that binder/runtime.txt names,
#    then `pip install -r binder/requirements.txt` run from the repository root (so "." is
#    this project). Nothing else is installed: the notebooks must run on exactly that.
# 2. Execute every notebook in it with nbclient (scripts/run_notebooks.py; JupyterLab brings
#    nbclient), in a kernel running that venv's Python, failing on any error or on a notebook
#    that leaves child processes behind.
# 3. Lint binder/ with `repo2docker --no-build --debug .` (prints the Dockerfile it would build;
#    no Docker needed), from a throwaway venv. If jupyter-repo2docker does not install, say so
#    on one SKIP line and carry on: the lint is a bonus, steps 1-2 are the check.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
say() { printf '\n==> %s (%s)\n' "$1" "$(date +%H:%M:%S)"; }
# pip warns about local mirror folders that may not exist; hide that noise, keep pip's status.
quiet_pip() { "$1" -m pip install -q "${@:2}" 2>&1 | { grep -v "^WARNING: Location" || true; }; return "${PIPESTATUS[0]}"; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/toolbench-binder.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

for f in binder/requirements.txt binder/runtime.txt; do
  [[ -f "$f" ]] || { echo "missing $f" >&2; exit 1; }
done
if [[ -f binder/environment.yml ]]; then
  echo "binder/environment.yml exists: repo2docker would use conda and ignore runtime.txt" >&2
  exit 1
fi

say "Python from binder/runtime.txt"
RUNTIME="$(tr -d '[:space:]' < binder/runtime.txt)"
[[ "$RUNTIME" =~ ^python-([0-9]+\.[0-9]+)$ ]] || { echo "binder/runtime.txt: expected python-X.Y, got '$RUNTIME'" >&2; exit 1; }
WANT="${BASH_REMATCH[1]}"
BASE=""
CANDIDATES=("python$WANT" python3)
if command -v pyenv >/dev/null 2>&1; then  # pyenv's shims only run the versions it has selected
  CANDIDATES+=("$(pyenv root)"/versions/"$WANT"*/bin/python"$WANT")
fi
for candidate in "${CANDIDATES[@]}"; do
  if command -v "$candidate" >/dev/null 2>&1 \
     && [[ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" == "$WANT" ]]; then
    BASE="$(command -v "$candidate")"; break
  fi
done
if [[ -z "$BASE" ]]; then
  BASE="$(command -v python3)"
  echo "NOTE: no Python $WANT here; building with $("$BASE" --version) instead (Binder would use $WANT)"
fi
"$BASE" --version

say "fresh venv from binder/requirements.txt (pip run from the repo root, as repo2docker does)"
"$BASE" -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
quiet_pip "$PY" --upgrade pip
quiet_pip "$PY" -r binder/requirements.txt
# From outside the checkout, so this imports the installed package, not the source tree.
(cd "$WORK" && "$PY" -c 'import toolbench, jupyterlab, nbclient, ipykernel, tqdm, matplotlib
print("installed toolbench", toolbench.__version__, "from", toolbench.__file__)')

say "execute every notebook in that venv"
PATH="$WORK/venv/bin:$PATH" "$PY" scripts/run_notebooks.py

say "repo2docker lint of binder/ (no Docker needed)"
if "$BASE" -m venv "$WORK/r2d" && quiet_pip "$WORK/r2d/bin/python" jupyter-repo2docker \
   && [[ -x "$WORK/r2d/bin/repo2docker" ]]; then
  # With binder/ present repo2docker reads nothing else, so a copy of binder/ is enough, and
  # keeps it from walking .venv/ or other large folders of a working checkout.
  mkdir -p "$WORK/repo" && cp -r "$ROOT/binder" "$WORK/repo/binder"
  if ! (cd "$WORK/repo" && "$WORK/r2d/bin/repo2docker" --no-build --debug . > "$WORK/r2d.log" 2>&1); then
    cat "$WORK/r2d.log" >&2
    echo "repo2docker --no-build failed" >&2
    exit 1
  fi
  for expect in "binder/requirements.txt" "python=$WANT"; do
    if ! grep -q -- "$expect" "$WORK/r2d.log"; then
      cat "$WORK/r2d.log" >&2
      echo "repo2docker's Dockerfile does not mention '$expect'" >&2
      exit 1
    fi
  done
  echo "repo2docker: Dockerfile generated; it installs binder/requirements.txt on Python $WANT"
else
  echo "SKIP repo2docker lint: jupyter-repo2docker did not install here (steps 1-2 still ran)"
fi

say "where the README's Binder badge points (a note, never a failure)"
"$BASE" scripts/binder_badge.py --check || echo "NOTE: the badge is not this clone's GitHub repository (above); Binder itself builds from binder/ whatever the badge says"

say "binder check passed"
