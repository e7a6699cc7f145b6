import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { readChangesets } from "@changesets/read";

import { loadConfig } from "../src/config.ts";
import { createLogger } from "../src/logger.ts";
import { startServer } from "../src/server.ts";
import { compatibilityVerdict, findBreakingChanges, type ReleaseBump } from "./openapi-compat.ts";

/**
 * The API compatibility guard's files, both committed:
 * - `spec/openapi.snapshot.json`: the document the server serves now. A test fails when they
 *   differ, so every API change shows up in review as a diff of this file.
 * - `spec/openapi.released.json`: the document of the last release. Breaking changes against it
 *   need a pending major changeset (test/openapi/api-compatibility.test.ts); the release moves it.
 *
 *   pnpm --filter @plantstore/server openapi:snapshot   rewrite the snapshot, report breaking changes
 *   pnpm --filter @plantstore/server openapi:release    also make it the released baseline (release.sh)
 */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const SNAPSHOT_FILE = fileURLToPath(new URL("../../../spec/openapi.snapshot.json", import.meta.url));
export const RELEASED_FILE = fileURLToPath(new URL("../../../spec/openapi.released.json", import.meta.url));

export const formatDocument = (doc: unknown): string => `${JSON.stringify(doc, null, 2)}\n`;
export const readDocument = (file: string): unknown => JSON.parse(readFileSync(file, "utf8"));

/** `/openapi.json` as a server with the default configuration serves it (the tests compare the same). */
export async function servedDocument(): Promise<unknown> {
  const running = await startServer({
    config: { ...loadConfig({}), port: 0, host: "127.0.0.1", databaseUrl: "sqlite::memory:", logLevel: "silent" },
    logger: createLogger("silent"),
  });
  try {
    const response = await fetch(`${running.url}/openapi.json`);
    if (response.status !== 200) throw new Error(`GET /openapi.json answered ${response.status}`);
    return await response.json();
  } finally {
    await running.close();
  }
}

/** The bump each pending changeset asks for, for any of our packages. */
export async function pendingBumps(root = REPO_ROOT): Promise<ReleaseBump[]> {
  const changesets = await readChangesets(root);
  return changesets.flatMap((changeset) => changeset.releases.map((release) => release.type));
}

async function main(args: string[]): Promise<void> {
  const served = await servedDocument();
  writeFileSync(SNAPSHOT_FILE, formatDocument(served));
  process.stdout.write(`wrote ${SNAPSHOT_FILE}\n`);
  if (args.includes("--release")) {
    writeFileSync(RELEASED_FILE, formatDocument(served));
    process.stdout.write(`wrote ${RELEASED_FILE} (the compatibility baseline from now on)\n`);
    return;
  }
  const verdict = compatibilityVerdict(findBreakingChanges(readDocument(RELEASED_FILE), served), await pendingBumps());
  process.stdout.write(`${verdict.report}\n`);
}

if (import.meta.main) await main(process.argv.slice(2));
