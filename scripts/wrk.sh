#!/usr/bin/env bash
# Makes sure Debian's wrk is at /usr/bin/wrk: `pnpm bench` uses it as its default load generator
# (bench/src/wrk-runner.ts), and the bench's smoke test, run by `pnpm test`, drives it.
# Sourced by scripts/run.sh before the tests, and run by the bench before a wrk run; does nothing
# when wrk is already there. Quiet unless it fails; non-interactive, so it runs in CI as root with no stdin.
_ps_ensure_wrk() {
  [ -x /usr/bin/wrk ] && return 0
  local sudo=""
  if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      echo "wrk: /usr/bin/wrk is missing and installing it needs root: apt-get install wrk (or pnpm bench --load-generator autocannon)" >&2
      return 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "wrk: /usr/bin/wrk is missing and this is not a Debian-like system; install wrk there (or pnpm bench --load-generator autocannon)" >&2
    return 1
  fi
  echo "wrk: installing Debian's wrk for the bench (apt-get)" >&2
  local log
  log="$(mktemp)"
  if ! { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk; } >"$log" 2>&1 </dev/null; then
    cat "$log" >&2
    rm -f "$log"
    echo "wrk: apt-get install wrk failed" >&2
    return 1
  fi
  rm -f "$log"
  [ -x /usr/bin/wrk ] || { echo "wrk: installed, yet /usr/bin/wrk is missing" >&2; return 1; }
}
_ps_ensure_wrk
