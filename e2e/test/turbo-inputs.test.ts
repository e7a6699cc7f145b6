import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { cleanEnv, copyRepository, runOk } from "./workspace.ts";

/**
 * Turbo replays a cached pass when a task's hash is unchanged, so every file a test reads must
 * count in its hash. The tests of the client, the CLI, the server and e2e read
 * @plantstore/test-support (the contract checker, the seed document), which no build turns into
 * outputs: these edit it in a scratch copy of the repository and compare the hashes
 * `turbo run --dry=json` reports before and after (a dry run hashes, it runs nothing).
 */

const TURBO = join(dirname(createRequire(import.meta.url).resolve("turbo/package.json")), "bin", "turbo");
/** The tasks that read @plantstore/test-support. */
const READERS = ["client", "cli", "server", "e2e"].flatMap((name) => [
  `@plantstore/${name}#test`,
  `@plantstore/${name}#typecheck`,
]);
/** Tasks of packages that depend on nothing of it: their hashes must stay. */
const BYSTANDERS = [
  "@plantstore/schema#test",
  "@plantstore/schema#typecheck",
  "@plantstore/schema#build",
  "@plantstore/server#build",
];

let copy: string;

beforeAll(async () => {
  copy = mkdtempSync(join(tmpdir(), "plantstore-turbo-inputs-"));
  await copyRepository(copy);
});
afterAll(() => {
  if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
});

/**
 * Every task's hash as `turbo run test typecheck build --dry=json` reports it in the copy, with
 * `CI` set as given (unset by default).
 */
async function hashes(ci?: string): Promise<Map<string, string>> {
  // Without the TURBO_* variables of the turbo run this test may be part of: the copy is a run of its own.
  const inherited = Object.entries(cleanEnv()).filter(([name]) => !name.startsWith("TURBO_") && name !== "CI");
  const env = {
    ...Object.fromEntries(inherited),
    TURBO_TELEMETRY_DISABLED: "1",
    ...(ci === undefined ? {} : { CI: ci }),
  };
  const stdout = await runOk(process.execPath, [TURBO, "run", "test", "typecheck", "build", "--dry=json"], {
    cwd: copy,
    env,
    timeoutMs: 60_000,
  });
  const plan = JSON.parse(stdout) as { tasks: Array<{ taskId: string; hash: string }> };
  return new Map(plan.tasks.map((task) => [task.taskId, task.hash]));
}

/** The tasks whose hash `edit` (of a file of the copy) changed. */
async function changedBy(file: string, edit: (path: string) => void): Promise<string[]> {
  const before = await hashes();
  edit(join(copy, file));
  const after = await hashes();
  expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
  return [...after].filter(([task, hash]) => before.get(task) !== hash).map(([task]) => task);
}

describe("turbo's hashes of the tasks that read @plantstore/test-support", () => {
  it("change with an edit of the contract checker", async () => {
    const changed = await changedBy("packages/test-support/src/response-contract.ts", (path) =>
      appendFileSync(path, "// an edit\n"),
    );
    expect(changed).toEqual(expect.arrayContaining(READERS));
    for (const task of BYSTANDERS) expect(changed).not.toContain(task);
  });

  it("change with an edit of the seed document", async () => {
    const changed = await changedBy("packages/test-support/seed-openapi.json", (path) => appendFileSync(path, "\n"));
    expect(changed).toEqual(expect.arrayContaining(READERS));
    for (const task of BYSTANDERS) expect(changed).not.toContain(task);
  });
});

describe("turbo's hashes and the CI variable", () => {
  it("are the same with CI=true as without, so a run after `CI=true bash scripts/run.sh test` replays it", async () => {
    const local = await hashes();
    const ci = await hashes("true");
    expect([...ci.keys()].sort()).toEqual([...local.keys()].sort());
    expect([...local.keys()].filter((task) => task.endsWith("#test")).length).toBeGreaterThanOrEqual(5);
    const differing = [...local].filter(([task, hash]) => ci.get(task) !== hash).map(([task]) => task);
    expect(differing).toEqual([]);
  });
});
