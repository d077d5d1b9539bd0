#!/bin/sh
# Install lgrep from this checkout for the user who runs it (README, "Quick start"): lgrep's packages,
# built from this checkout, and the locked, torch-free dependency set of uv.lock, into an environment
# of its own (~/.local/share/lgrep/venv), and a `lgrep` command in ~/.local/bin linked to it. Run it
# again after `git pull` to update; a second run with nothing changed changes nothing.
#
#   ./install.sh            # PYTHON=python3.12 ./install.sh to pick the interpreter
#
# It needs python3 (3.11 or newer) with pip, and nothing else. uv comes from PyPI through
# `pip install --target` into a folder of its own: a Python that refuses installs into the system
# (PEP 668: Debian 12, Ubuntu 23.04 and later) allows that without --break-system-packages, and uv
# makes the virtual environment, so python3-venv is not needed. Why: docs/adr/0021-quick-start-install.md.
set -eu

repo=$(cd "$(dirname "$0")" && pwd)
cd "$repo"
python=${PYTHON:-python3}
case ${XDG_DATA_HOME:-} in
  /*) data=$XDG_DATA_HOME/lgrep ;;
  *) data=$HOME/.local/share/lgrep ;;
esac
venv=$data/venv
bin=$HOME/.local/bin
started=$(date +%s)

say() { printf 'install.sh: %s\n' "$*"; }
fail() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }
# A path as the user would type it: ~/.local/bin, not /home/me/.local/bin.
short() { case $1 in "$HOME"/*) printf '~/%s' "${1#"$HOME"/}" ;; *) printf '%s' "$1" ;; esac; }
# True when $1 runs and is uv 0.13 (the version this checkout's uv.lock and CI use).
is_uv013() { case $("$1" --version 2>/dev/null) in "uv 0.13."*) return 0 ;; *) return 1 ;; esac; }

# -- Python -------------------------------------------------------------------------------------
command -v "$python" >/dev/null 2>&1 || fail "no $python found: lgrep needs Python 3.11 or newer (PYTHON=... names another)"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  fail "$python is Python $("$python" -c 'import sys; print(sys.version.split()[0])'); lgrep needs 3.11 or newer (PYTHON=... names another)"
pyexe=$("$python" -c 'import sys; print(sys.executable)')

# -- uv: the one on PATH if it is 0.13, else our own copy from PyPI ----------------------------------
uv=""
if command -v uv >/dev/null 2>&1 && is_uv013 uv; then
  uv=$(command -v uv)
elif is_uv013 "$data/uv/bin/uv"; then
  uv=$data/uv/bin/uv
else
  "$python" -m pip --version >/dev/null 2>&1 ||
    fail "$python has no pip to fetch uv with: install it (Debian, Ubuntu: sudo apt install python3-pip), or put uv 0.13 on PATH"
  say "uv 0.13 from PyPI into $(short "$data/uv") (pip install --target: nothing goes into $python's own folders)"
  # --target is not the system's site-packages, so PEP 668 does not apply to it (pip skips the
  # EXTERNALLY-MANAGED check for --target, --prefix and --root); the variables neutralise settings
  # that would turn the install into a --user one or refuse it outside a virtual environment.
  PIP_USER=0 PIP_REQUIRE_VIRTUALENV=0 PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$python" -m pip install --quiet --upgrade --target "$data/uv" 'uv>=0.13,<0.14'
  uv=$data/uv/bin/uv
  is_uv013 "$uv" || fail "pip installed uv, but $(short "$uv") does not run"
fi

# -- lgrep's environment -------------------------------------------------------------------------
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/packages/lgrep/pyproject.toml")
# uv keeps an installed local package while its pyproject.toml is unchanged; lgrep's own members are
# rebuilt on every run so that an install after `git pull` has the new code.
set --
for member in "$repo"/packages/*/pyproject.toml; do
  set -- "$@" --reinstall-package "$(sed -n 's/^name = "\(.*\)"$/\1/p' "$member" | head -n 1)"
done
# What the members' files hash to (their RECORD files), empty before the first install.
records() {
  set -- "$venv"/lib/python*/site-packages/lgrep*.dist-info/RECORD
  if [ -e "$1" ]; then cat "$@" | cksum; fi
}
before=$(records)
if [ -x "$venv/bin/python" ]; then
  say "lgrep $version into $(short "$venv") (uv $("$uv" --version | cut -d' ' -f2))"
else
  say "lgrep $version and its locked dependencies into $(short "$venv") (uv $("$uv" --version | cut -d' ' -f2)):"
  say "  a first install downloads about 340 MB from PyPI (1 GB unpacked): seconds to minutes, by your connection"
fi
UV_PROJECT_ENVIRONMENT=$venv "$uv" sync --quiet --project "$repo" --frozen --no-default-groups --no-editable \
  --python "$pyexe" "$@"
installed=$("$venv/bin/lgrep" --version) || fail "the installed $(short "$venv/bin/lgrep") does not run"
# A daemon started before this run still runs the code that was just replaced: stop it (the next
# lgrep command starts one with the new code). Nothing changed, nothing stopped.
if [ -n "$before" ] && [ "$before" != "$(records)" ]; then
  stopped=$("$venv/bin/lgrep" serve --stop 2>&1 || true)
  case $stopped in stopped*) say "$stopped: it ran the replaced code; the next lgrep command starts the new one" ;; esac
fi

# -- the commands in ~/.local/bin ----------------------------------------------------------------
mkdir -p "$bin"
# $1: the command's name; $2: what the link points to. Never replaces a file or link of someone else.
link() {
  if [ -L "$bin/$1" ] && [ "$(readlink "$bin/$1")" = "$2" ]; then
    return 0
  elif [ -e "$bin/$1" ] || [ -L "$bin/$1" ]; then
    return 1
  fi
  ln -s "$2" "$bin/$1"
}
link lgrep "$venv/bin/lgrep" ||
  fail "$(short "$bin/lgrep") exists and is not this installer's link (it is $(readlink "$bin/lgrep" || echo 'a file')): remove it and run ./install.sh again, or run $(short "$venv/bin/lgrep")"
if [ "$uv" = "$data/uv/bin/uv" ] && ! link uv "$uv"; then
  say "uv: $(short "$bin/uv") is another uv, left alone; this one is $(short "$uv")"
fi
say "$installed is $(short "$bin/lgrep") (-> $(short "$venv/bin/lgrep")), installed in $(($(date +%s) - started)) s"

# -- PATH ----------------------------------------------------------------------------------------
case ":$PATH:" in
  *":$bin:"*)
    first=$(command -v lgrep || true)
    if [ "$first" != "$bin/lgrep" ]; then
      say "note: another lgrep comes first on your PATH: $first"
    fi
    ;;
  *)
    say "~/.local/bin is not on your PATH. For this shell:"
    say '    export PATH="$HOME/.local/bin:$PATH"'
    if grep -qs '\.local/bin' "$HOME/.profile"; then
      say "your ~/.profile adds it to PATH from your next login on"
    else
      say "for every new shell, add that line to ~/.profile (or ~/.bashrc, ~/.zshrc)"
    fi
    ;;
esac
