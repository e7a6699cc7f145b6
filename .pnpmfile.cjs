// pnpm hooks for this workspace.
module.exports = {
  hooks: {
    /**
     * Runs on `pnpm pack` / `pnpm publish` (and so `changeset publish`): the published manifest
     * keeps what users of the package need and nothing of the workspace. devDependencies name
     * private packages that are never published, and scripts point at sources that are not in
     * the tarball. (`exports` without the `@plantstore/source` condition comes from each
     * package's `publishConfig`.)
     */
    beforePacking(manifest) {
      delete manifest.devDependencies;
      delete manifest.scripts;
      return manifest;
    },
  },
};
