#!/usr/bin/env bash
# The README's two quick-start commands, on any machine with bash and the npm registry:
#   bash scripts/run.sh dev    install everything, then run the store on SQLite (pnpm turbo dev)
#   bash scripts/run.sh test   install everything, then build and run the whole test suite
# Node 24, pnpm and npm are fetched from the npm registry when missing (scripts/toolchain.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
caller_path="$PATH"
# shellcheck source=scripts/toolchain.sh
source scripts/toolchain.sh

# What toolchain.sh put on PATH (Node 24, pnpm, npm from .toolchain/) lasts only as long as this script:
# tell the reader how to get it in their shell, where the docs' `pnpm …` commands run.
toolchain_hint() {
  if [ "$PATH" != "$caller_path" ]; then
    echo "run.sh: your shell's Node is older than 22.12 or has no pnpm or npm; before the README's pnpm and npm commands, run: source scripts/toolchain.sh" >&2
  fi
}

install() {
  if [ "${CI:-}" = "true" ]; then
    pnpm install --frozen-lockfile
  else
    pnpm install --prefer-offline
  fi
}

case "${1:-}" in
  dev)
    install
    toolchain_hint
    exec pnpm turbo run dev
    ;;
  test)
    # The browser test needs Debian's chromium and the bench's smoke test Debian's wrk; installed
    # here when missing (scripts/chromium.sh, scripts/wrk.sh), before the timed part.
    trap toolchain_hint EXIT
    # shellcheck source=scripts/chromium.sh
    source scripts/chromium.sh
    # shellcheck source=scripts/wrk.sh
    source scripts/wrk.sh
    started=$SECONDS
    install
    echo "run.sh: install took $((SECONDS - started)) s"
    started=$SECONDS
    # Three tasks at a time, not turbo's default ten: on 2 cores the ten type-checkers and linters
    # thrashed (160 s of wall time and 306 s of CPU here against 127 s and 248 s, 2026-11-28).
    pnpm turbo run build lint typecheck --concurrency=3
    # Unused files, exports and dependencies (knip.jsonc says what is an entry and why).
    pnpm run knip
    # The formatter's check over the whole tree, root files included (tooling/prettier).
    pnpm run format:check
    # A second build must replay every task from turbo's cache: a miss here means a task's inputs
    # or outputs are declared wrongly (or a build writes into its own inputs).
    rebuild="$(pnpm turbo run build --output-logs=none)"
    echo "$rebuild"
    if ! grep -q '>>> FULL TURBO' <<<"$rebuild"; then
      echo "run.sh: a second 'pnpm turbo run build' was not fully cached" >&2
      exit 1
    fi
    pnpm turbo run test --concurrency=1
    echo "run.sh: build, checks and tests took $((SECONDS - started)) s after the install"
    ;;
  *)
    echo "usage: bash scripts/run.sh dev|test" >&2
    exit 2
    ;;
esac
