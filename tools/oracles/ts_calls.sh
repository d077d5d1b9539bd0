#!/usr/bin/env bash
# Run the TypeScript call-edge oracle (ts_calls.mjs) with a pinned typescript installed outside the
# project, in $LGREP_ORACLES_CACHE (default ~/.cache/lgrep-oracles). Arguments go to ts_calls.mjs:
#   tools/oracles/ts_calls.sh --root CHECKOUT --under packages/zod/src --out zod.jsonl [--alias ...]
set -euo pipefail
TYPESCRIPT_VERSION=5.6.3
export LGREP_ORACLES_CACHE="${LGREP_ORACLES_CACHE:-$HOME/.cache/lgrep-oracles}"

installed="$(node -p "require('$LGREP_ORACLES_CACHE/node_modules/typescript/package.json').version" 2>/dev/null || true)"
if [[ "$installed" != "$TYPESCRIPT_VERSION" ]]; then
  mkdir -p "$LGREP_ORACLES_CACHE"
  npm install --prefix "$LGREP_ORACLES_CACHE" --save-exact --no-audit --no-fund --loglevel=error \
    "typescript@$TYPESCRIPT_VERSION" >&2
fi
exec node "$(dirname "$0")/ts_calls.mjs" "$@"
