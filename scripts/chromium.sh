#!/usr/bin/env bash
# Makes sure Debian's chromium is at /usr/bin/chromium: the browser test (packages/server/test/
# docs-page.test.ts) drives it through playwright-core, which brings no browser of its own.
# Sourced by scripts/run.sh before the tests; does nothing when chromium is already there.
# Quiet unless it fails; non-interactive, so it runs in CI as root with no stdin.
_ps_ensure_chromium() {
  [ -x /usr/bin/chromium ] && return 0
  local sudo=""
  if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      echo "chromium: /usr/bin/chromium is missing and installing it needs root: apt-get install chromium" >&2
      return 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium: /usr/bin/chromium is missing and this is not a Debian-like system; install chromium there" >&2
    return 1
  fi
  echo "chromium: installing Debian's chromium for the browser test (apt-get)" >&2
  local log
  log="$(mktemp)"
  if ! { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation; } >"$log" 2>&1 </dev/null; then
    cat "$log" >&2
    rm -f "$log"
    echo "chromium: apt-get install chromium failed" >&2
    return 1
  fi
  rm -f "$log"
  [ -x /usr/bin/chromium ] || { echo "chromium: installed, yet /usr/bin/chromium is missing" >&2; return 1; }
}
_ps_ensure_chromium
