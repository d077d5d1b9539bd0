#!/usr/bin/env bash
# Time the README's quick start from a clean clone with a fresh HOME (so uv's and pip's caches are
# cold and everything comes from PyPI), step by step, and report the environments' sizes
# (docs/benchmarks.md, "Quick start install on a stock machine").
#
#   tools/bench_quickstart.sh [REPO] [REF]     # REPO: what to clone (default: this checkout), REF: its branch
#   TESTS=1 tools/bench_quickstart.sh          # also run the whole test command (minutes)
#
# Steps: `./install.sh` (the first command's install part), `lgrep search` of the clone (daemon start,
# index build, answer), the daemon stopped, `./install.sh` again (nothing changed), the test command's
# environment (`uv run --frozen --group dev pytest --version`), then `du` of both environments. The
# clone and HOME are removed at the end. Uses python3 and uv as found on PATH, as a user would.
set -euo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
work="$(mktemp -d "${TMPDIR:-/tmp}/lgrep-quickstart.XXXXXX")"
export HOME="$work/home"
mkdir -p "$HOME"
trap 'rm -rf "$work"' EXIT
git clone -q ${2:+-b "$2"} "$repo" "$work/clone"
cd "$work/clone"

exec 3>&1  # the step lines, whatever a step's own output is redirected to
step() {  # $1: a label; the rest: the command. Prints the label, seconds and the load average.
  local label="$1" started=$SECONDS
  shift
  "$@"
  printf '== %-32s %4d s   (load %s)\n' "$label" $((SECONDS - started)) "$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')" >&3
}

step "install.sh (cold caches)" ./install.sh
export PATH="$HOME/.local/bin:$PATH"
step "first search (index + answer)" lgrep search "how are files split into chunks" . -n 2 >/dev/null
lgrep serve --stop
step "install.sh again" ./install.sh >/dev/null
step "test environment" uv run --quiet --frozen --group dev pytest --version
if [ "${TESTS:-0}" = 1 ]; then
  step "test command" uv run --frozen --group dev pytest -m "not slow" -q -p no:cacheprovider
  lgrep serve --stop >/dev/null 2>&1 || true
fi
# du counts a file hard-linked into both environments once: each is measured alone.
echo "== sizes: lgrep's environment $(du -sm "$HOME/.local/share/lgrep/venv" | cut -f1) MB" \
  "($(du -sm "$HOME/.cache/uv" "$HOME/.local/share/lgrep/venv" | tail -n 1 | cut -f1) MB of it not hard links into uv's cache)," \
  "the checkout's .venv with the dev group $(du -sm .venv | cut -f1) MB"
