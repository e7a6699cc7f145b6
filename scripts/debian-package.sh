#!/usr/bin/env bash
# Installs a Debian package when the program it brings is missing: what scripts/chromium.sh (the
# browser for the browser tests) and scripts/wrk.sh (the bench's load generator) share. Sourced by
# them; quiet unless it fails; non-interactive, so it runs in CI as root with no stdin.
#
#   _ps_ensure_debian_package <name> <program path> <why> <hint when it cannot> <package>...
_ps_ensure_debian_package() {
  local name="$1" program="$2" why="$3" hint="$4"
  shift 4
  [ -x "$program" ] && return 0
  local sudo=""
  if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      echo "$name: $program is missing and installing it needs root: apt-get install $*$hint" >&2
      return 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$name: $program is missing and this is not a Debian-like system; install $name there$hint" >&2
    return 1
  fi
  echo "$name: installing Debian's $name $why (apt-get)" >&2
  local log
  log="$(mktemp)"
  if ! { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"; } >"$log" 2>&1 </dev/null; then
    cat "$log" >&2
    rm -f "$log"
    echo "$name: apt-get install $* failed" >&2
    return 1
  fi
  rm -f "$log"
  [ -x "$program" ] || { echo "$name: installed, yet $program is missing" >&2; return 1; }
}
