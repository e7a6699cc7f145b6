import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { findOlderNode } from "@plantstore/test-support/older-node";
import { afterAll, describe, expect, it } from "vitest";

import { cleanEnv, ROOT, runOk } from "./workspace.ts";

/**
 * `source scripts/toolchain.sh` on a machine whose Node is too old: it must put on PATH a Node
 * ≥ 22.12, pnpm, and the npm and npx that the root README's "Use it from this repository" runs,
 * on that Node. The Node and pnpm this run already uses stand in for the fetched ones (in a
 * toolchain folder of the test's own); npm is fetched from the registry, as a newcomer's would be.
 */

const folder = mkdtempSync(join(tmpdir(), "plantstore-toolchain-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The npm version the workspace's catalog pins (pnpm-workspace.yaml). */
const CATALOG_NPM = /^ {2}npm: (\S+)$/m.exec(readFileSync(join(ROOT, "pnpm-workspace.yaml"), "utf8"))?.[1];

/** A folder whose `node` is older than 22.12: the machine's own where it has one, else a stand-in that says so. */
function olderNodeFolder(): string {
  const older = findOlderNode();
  if (older !== undefined) return dirname(older.path);
  const dir = join(folder, "older-node");
  mkdirSync(dir);
  writeFileSync(join(dir, "node"), "#!/bin/sh\necho v20.20.2\nexit 1\n", { mode: 0o755 });
  return dir;
}

describe("source scripts/toolchain.sh with a Node older than 22.12 first on PATH", () => {
  it(
    "puts npm and npx on PATH too, the catalog's npm, running on the toolchain's Node",
    { timeout: 180_000 },
    async () => {
      const tools = join(folder, "toolchain");
      mkdirSync(join(tools, "node", "bin"), { recursive: true });
      symlinkSync(process.execPath, join(tools, "node", "bin", "node"));
      // This run's pnpm, where it came from the toolchain, so the test fetches only npm.
      const ownTools = process.env["PLANTSTORE_TOOLCHAIN_DIR"] ?? join(ROOT, ".toolchain");
      if (existsSync(join(ownTools, "pnpm", "bin", "pnpm.cjs")))
        symlinkSync(join(ownTools, "pnpm"), join(tools, "pnpm"));

      const project = join(folder, "project");
      mkdirSync(project);
      const script = [
        `source ${JSON.stringify(join(ROOT, "scripts", "toolchain.sh"))}`,
        `cd ${JSON.stringify(project)}`,
        "command -v npm npx",
        "npm --version",
        "npx --version",
        "npm version --json",
        // Sourced again (another shell): nothing is fetched twice.
        `source ${JSON.stringify(join(ROOT, "scripts", "toolchain.sh"))} 2>${JSON.stringify(join(folder, "again.err"))}`,
      ].join(" && ");
      const env = cleanEnv({ PATH: `${olderNodeFolder()}:/usr/bin:/bin`, PLANTSTORE_TOOLCHAIN_DIR: tools });
      delete env["npm_config_prefix"];
      const stdout = await runOk("bash", ["-c", script], { cwd: ROOT, env, timeoutMs: 170_000 });
      const [npm, npx, npmVersion, npxVersion, ...versions] = stdout.split("\n");
      expect([npm, npx]).toEqual([join(tools, "bin", "npm"), join(tools, "bin", "npx")]);
      expect(CATALOG_NPM).toBeDefined();
      expect([npmVersion, npxVersion]).toEqual([CATALOG_NPM, CATALOG_NPM]);
      expect(JSON.parse(versions.join("\n"))).toMatchObject({ npm: CATALOG_NPM, node: process.versions.node });
      expect(readFileSync(join(folder, "again.err"), "utf8")).toBe("");
    },
  );
});
