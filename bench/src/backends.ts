import { join } from "node:path";
import { prefillSqlite } from "./prefill-sqlite.ts";
import type { IdMode } from "./scenarios.ts";

/** What our server needs to reach a fresh, empty store, and how to throw it away afterwards. */
export type Backend = {
  name: string;
  env: Record<string, string>;
  /**
   * Stores `count` plants named like the load's (see prefill-sqlite.ts for the ids), directly and
   * in bulk, after `plantstore-server migrate` and before the server starts. Optional: a backend
   * without it cannot run `--prefill` or the list scenario.
   */
  prefill?(count: number, ids: IdMode): Promise<void>;
  dispose(): Promise<void>;
};

// One entry per storage backend; postgres would create a scratch database here and drop it in dispose.
// Each target of a run opens its own (a fresh database per target, in its own scratch directory).
const BACKENDS: Record<string, (scratchDir: string) => Promise<Backend>> = {
  sqlite: async (scratchDir) => {
    const path = join(scratchDir, "plants.db");
    return {
      name: "sqlite",
      env: { DATABASE_URL: `sqlite:${path}` },
      prefill: async (count, ids) => prefillSqlite(path, count, ids),
      // The file lives in the scratch directory, which the caller removes.
      dispose: async () => {},
    };
  },
};

export const BACKEND_NAMES = Object.keys(BACKENDS);

export async function openBackend(name: string, scratchDir: string): Promise<Backend> {
  const open = BACKENDS[name];
  if (open === undefined) throw new Error(`unknown backend ${name}; known: ${BACKEND_NAMES.join(", ")}`);
  return open(scratchDir);
}
