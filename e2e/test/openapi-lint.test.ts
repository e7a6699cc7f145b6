import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import * as plantStoreServer from "@plantstore/server";
import { startRealServer } from "@plantstore/test-support/real-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { cleanEnv, ROOT, run } from "./workspace.ts";

/**
 * The document a real server serves, read by the two linters users point at an API first, with the
 * configurations committed at the repository root (`redocly.yaml`, `.spectral.yaml`: any rule
 * switched off there says why). Clean means no error and no warning.
 */

const require = createRequire(import.meta.url);
const bin = (pkg: string, path: string) => join(dirname(require.resolve(`${pkg}/package.json`)), path);

let dir: string;
let documentFile: string;
beforeAll(async () => {
  await using server = await startRealServer(plantStoreServer);
  const response = await fetch(`${server.url}/openapi.json`);
  expect(response.status).toBe(200);
  dir = mkdtempSync(join(tmpdir(), "plantstore-openapi-lint-"));
  documentFile = join(dir, "openapi.json");
  writeFileSync(documentFile, await response.text());
});
afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

// Both tools would report to their vendors or look for updates; these runs stay offline.
const env = cleanEnv({ REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", DO_NOT_TRACK: "1" });

describe("the served /openapi.json", () => {
  it("passes `redocly lint` (recommended) with 0 errors and 0 warnings", async () => {
    const result = await run(
      process.execPath,
      [
        bin("@redocly/cli", "bin/cli.js"),
        "lint",
        documentFile,
        "--config",
        join(ROOT, "redocly.yaml"),
        "--format",
        "json",
      ],
      { cwd: ROOT, env, timeoutMs: 120_000 },
    );
    const report = JSON.parse(result.stdout) as { totals: { errors: number; warnings: number }; problems: unknown[] };
    expect(report.problems, result.stderr).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(result.code).toBe(0);
  });

  it("passes `spectral lint` (spectral:oas) with no result of any severity", async () => {
    const result = await run(
      process.execPath,
      [
        bin("@stoplight/spectral-cli", "dist/index.js"),
        "lint",
        documentFile,
        "--ruleset",
        join(ROOT, ".spectral.yaml"),
        "--format",
        "json",
        "--quiet",
      ],
      { cwd: ROOT, env, timeoutMs: 120_000 },
    );
    expect(JSON.parse(result.stdout), result.stderr).toEqual([]);
    expect(result.code).toBe(0);
  });

  it("is linted for real: a document with a known fault gets reported by both", async () => {
    const broken = join(dir, "broken.json");
    const doc = JSON.parse(readFileSync(documentFile, "utf8")) as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    delete doc.paths["/plants"]!["get"]!["summary"];
    delete doc.paths["/plants"]!["get"]!["tags"];
    writeFileSync(broken, JSON.stringify(doc));
    const redocly = await run(
      process.execPath,
      [bin("@redocly/cli", "bin/cli.js"), "lint", broken, "--config", join(ROOT, "redocly.yaml"), "--format", "json"],
      {
        cwd: ROOT,
        env,
        timeoutMs: 120_000,
      },
    );
    expect(redocly.stdout).toContain("operation-summary");
    const spectral = await run(
      process.execPath,
      [
        bin("@stoplight/spectral-cli", "dist/index.js"),
        "lint",
        broken,
        "--ruleset",
        join(ROOT, ".spectral.yaml"),
        "--format",
        "json",
        "--quiet",
      ],
      {
        cwd: ROOT,
        env,
        timeoutMs: 120_000,
      },
    );
    expect(spectral.stdout).toContain("operation-tags");
  });
});
