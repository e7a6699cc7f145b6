#!/usr/bin/env bash
# Makes sure Debian's chromium is at /usr/bin/chromium: the browser tests (the server's /docs page,
# the client in a page, apps/web) drive it through playwright-core, which brings no browser of its
# own. Sourced by scripts/run.sh before the tests; does nothing when chromium is already there.
# shellcheck source=scripts/debian-package.sh
source "$(dirname "${BASH_SOURCE[0]}")/debian-package.sh"
_ps_ensure_debian_package chromium /usr/bin/chromium "for the browser tests" "" chromium fonts-liberation
