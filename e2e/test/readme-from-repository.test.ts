import { realpathSync } from "node:fs";
import { join } from "node:path";

import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { describe, expect, it } from "vitest";

import { bash, codeBlocks, installBin, readme, section, useStore } from "./readme-support.ts";
import { NPM_CLI, ROOT } from "./workspace.ts";

/**
 * The root README's "Use it from this repository", run as written: pack the packages with pnpm,
 * install the tarballs with npm into a new project, run the client and both bins there, and run
 * the CLI from the repository (only the URL, the token and the tarball folder are the test's own).
 */
describe("README.md: use it from this repository", () => {
  const store = useStore();
  const markdown = section(readme("README.md"), "Use it from this repository");
  const [pack, install, use, fromRepository] = codeBlocks(markdown, "sh");
  /** Where the README packs to; the test packs into its own folder instead. */
  const TARBALLS = "/tmp/plantstore-tarballs";

  /** What the commands of a block say they print (`# …` after a command), in order. */
  const trailingComments = (block: string) =>
    block
      .split("\n")
      .map((line) => / {2,}# (.*)$/.exec(line)?.[1])
      .filter((comment) => comment !== undefined);

  it(
    "packs with pnpm, installs the tarballs with npm into a new project, and runs the client and both bins there",
    { timeout: 300_000 },
    async () => {
      expect(pack).toContain("pnpm");
      expect(install).toContain("npm install");
      expect(use).toContain("@plantstore/client");
      const tarballs = join(store.dir, "tarballs");
      const onPath = (dir: string) => ({ PATH: `${dir}:${process.env["PATH"] ?? ""}` });
      // The reader's npm and npx: the workspace's npm (the Node we run on may come without one).
      const bin = installBin(store.dir, "npm", NPM_CLI);
      installBin(store.dir, "npx", join(NPM_CLI, "..", "npx-cli.js"));

      await bash(pack!.replaceAll(TARBALLS, tarballs), { dir: ROOT, url: store.server.url, env: onPath(bin) });
      await bash(install!.replaceAll(TARBALLS, tarballs), { dir: store.dir, url: store.server.url, env: onPath(bin) });
      const app = join(store.dir, "my-plant-app");
      // Real copies from the tarballs, not links into the workspace.
      expect(realpathSync(join(app, "node_modules", "@plantstore", "client")).startsWith(realpathSync(app))).toBe(true);

      const stdout = await bash(use!, {
        dir: app,
        url: store.server.url,
        env: { ...onPath(bin), PLANTSTORE_TOKEN: TOKEN },
      });
      let lines = stdout.split("\n");
      for (const expected of trailingComments(use!)) {
        const at = lines.indexOf(expected);
        expect(at, `${expected}\nin\n${stdout}`).toBeGreaterThanOrEqual(0);
        lines = lines.slice(at + 1);
      }

      const fromRepo = await bash(fromRepository!, {
        dir: ROOT,
        url: store.server.url,
        env: { PLANTSTORE_TOKEN: TOKEN },
      });
      expect(fromRepo.trim()).toBe(trailingComments(fromRepository!).join("\n"));
    },
  );
});
