import { createRequire } from "node:module";

/**
 * The version of @plantstore/server, from its package.json: the one place it is written, moved by
 * `changeset version` on each release. Read by the package's own name (a self-reference through
 * its `./package.json` export), so it resolves the same from `src/` in the workspace and from
 * `dist/` in the published tarball, wherever this module sits.
 */
export const PACKAGE_VERSION: string = (
  createRequire(import.meta.url)("@plantstore/server/package.json") as { version: string }
).version;
