#!/usr/bin/env bash
# Makes sure Debian's wrk is at /usr/bin/wrk: `pnpm bench` uses it as its default load generator
# (bench/src/wrk-runner.ts), and the bench's smoke test, run by `pnpm test`, drives it.
# Sourced by scripts/run.sh before the tests, and run by the bench before a wrk run; does nothing
# when wrk is already there.
# shellcheck source=scripts/debian-package.sh
source "$(dirname "${BASH_SOURCE[0]}")/debian-package.sh"
_ps_ensure_debian_package wrk /usr/bin/wrk "for the bench" " (or pnpm bench --load-generator autocannon)" wrk
