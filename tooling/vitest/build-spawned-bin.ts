import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * vitest globalSetup for packages whose tests spawn their own `dist/bin.js`: that process runs
 * whatever the last build left in dist/ (and in its dependencies' dist/), missing on a fresh clone
 * and stale after an edit. So a run started outside turbo (one file, while iterating) first builds
 * the package and what it imports; turbo replays that from its cache when nothing changed. Inside
 * `turbo run test` (turbo sets TURBO_HASH in its tasks) the task already depends on the build.
 */
export function setup(project: TestProject): void {
  if (process.env["TURBO_HASH"] !== undefined) return;
  const manifest = JSON.parse(readFileSync(join(project.config.root, "package.json"), "utf8")) as { name: string };
  try {
    execFileSync("pnpm", ["exec", "turbo", "run", "build", `--filter=${manifest.name}`, "--output-logs=errors-only"], {
      cwd: ROOT,
      stdio: "pipe",
    });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(
      `building ${manifest.name} before its tests failed:\n${stdout?.toString() ?? ""}${stderr?.toString() ?? ""}`,
      { cause: error },
    );
  }
}
