#!/usr/bin/env bash
# `pnpm release`: releases the four @plantstore packages together on their shared version line.
#   1. turbo build         what gets packed
#   2. changeset version   consumes .changeset/*.md, bumps the version, writes the CHANGELOG.md files
#   3. openapi:release     the served OpenAPI document becomes the compatibility baseline
#   4. git commit          "Release vX.Y.Z", so the tags below point at the released files
#   5. changeset publish   pnpm publish of every package not yet on the registry, and git tags
# Then push the commit and its tags: git push --follow-tags.
#
# `pnpm release --dry-run` does 1-3, then shows what changeset publish would publish and packs each
# package with `pnpm publish --dry-run`, without committing or uploading anything. It still edits
# the working tree (versions, CHANGELOGs): run it in a scratch clone, as e2e/test/release.test.ts does.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/toolchain.sh
source scripts/toolchain.sh

# `pnpm release` runs this script as pnpm runs every script: with pnpm's own settings exported as
# npm_config_* variables (the catalog and patchedDependencies of pnpm-workspace.yaml, its JSR
# registry, …). The npm that each `pnpm publish` starts reads every npm_config_* variable and warns
# 'Unknown env config "catalog"' (and so on) for each it does not know, once per package: take
# pnpm's own settings out of the environment. The pnpm commands below read them from the workspace.
for setting in catalog catalogs patched_dependencies _jsr_registry npm_globalconfig verify_deps_before_run; do
  unset "npm_config_$setting"
done

dry_run=false
case "${1:-}" in
  "") ;;
  --dry-run) dry_run=true ;;
  *) echo "usage: pnpm release [--dry-run]" >&2; exit 2 ;;
esac

if [ -n "$(git status --porcelain)" ]; then
  echo "release: commit or stash your changes first; a release is made from a clean tree" >&2
  exit 1
fi
if [ -z "$(find .changeset -maxdepth 1 -name '*.md' ! -name 'README.md' -print -quit)" ]; then
  echo "release: no changesets to release (add one with pnpm changeset)" >&2
  exit 1
fi

# What gets packed is built first: no built file holds the version (the server reads its
# package.json when it runs), so a checkout that was already built replays it from turbo's cache.
pnpm turbo run build --output-logs=errors-only
pnpm version-packages # changeset version, then openapi:release
version="$(node -p 'require("./packages/schema/package.json").version')"

if [ "$dry_run" = true ]; then
  echo "release (dry run): v$version; changeset publish would do:"
  pnpm changeset publish-plan
  pnpm -r publish --dry-run --no-git-checks
  echo "release (dry run): nothing was committed, published or tagged"
  exit 0
fi

git add -A
git commit -m "Release v$version"
pnpm changeset publish
echo "release: published v$version; now: git push --follow-tags"
