import { randomBytes } from "node:crypto";
import { join } from "node:path";

import { Client } from "pg";

import { countSqlitePlants, prefillSqlite } from "./prefill-sqlite.ts";
import { type IdMode, PLANT_NAME, PLANT_TAG } from "./scenarios.ts";

/** What our server needs to reach a fresh, empty store, and how to throw it away afterwards. */
export type Backend = {
  name: string;
  env: Record<string, string>;
  /**
   * Stores `count` plants named like the load's, directly and in bulk, after `plantstore-server
   * migrate` and before the server starts. Sequential ids are 1..count (the list scenario's
   * cursors rely on that); random ids are spread over [1, 2^53) like the load's random ids.
   * Optional: a backend without it cannot run `--prefill` or the list scenario.
   */
  prefill?(count: number, ids: IdMode): Promise<void>;
  /** Plants stored now (the harness checks them against the creations answered 200). */
  countPlants(): Promise<number>;
  dispose(): Promise<void>;
};

// Where `--backend postgres` creates its scratch database (the user must be allowed to CREATE DATABASE).
const POSTGRES_URL = process.env["PLANTSTORE_BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";

async function onConnection(url: string, run: (client: Client) => Promise<unknown>): Promise<void> {
  const client = new Client({ connectionString: url, application_name: "plantstore-bench" });
  await client.connect();
  try {
    await run(client);
  } finally {
    await client.end();
  }
}

/** Bulk insert through generate_series, in chunks so one transaction does not hold millions of rows. */
async function prefillPostgres(url: string, count: number, ids: IdMode): Promise<void> {
  const chunk = 500_000;
  await onConnection(url, async (client) => {
    const stored = async () =>
      Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM plants")).rows[0]!.n);
    let have = await stored();
    while (have < count) {
      const size = Math.min(chunk, count - have);
      if (ids === "sequential") {
        await client.query(
          "INSERT INTO plants (id, name, tag) SELECT g, $3, $4 FROM generate_series($1::bigint, $2::bigint) g",
          [have + 1, have + size, PLANT_NAME, PLANT_TAG],
        );
        have += size;
      } else {
        await client.query(
          `INSERT INTO plants (id, name, tag) SELECT 1 + floor(random() * 9007199254740991)::bigint, $2, $3
           FROM generate_series(1, $1::bigint) ON CONFLICT (id) DO NOTHING`,
          [size, PLANT_NAME, PLANT_TAG],
        );
        have = await stored();
      }
    }
    await client.query("VACUUM ANALYZE plants");
  });
}

// One entry per storage backend. Each target of a run opens its own: a fresh database per target.
const BACKENDS: Record<string, (scratchDir: string) => Promise<Backend>> = {
  sqlite: async (scratchDir) => {
    const path = join(scratchDir, "plants.db");
    return {
      name: "sqlite",
      env: { DATABASE_URL: `sqlite:${path}` },
      prefill: async (count, ids) => prefillSqlite(path, count, ids),
      countPlants: async () => countSqlitePlants(path),
      // The file lives in the scratch directory, which the caller removes.
      dispose: async () => {},
    };
  },
  postgres: async () => {
    const name = `plantstore_bench_${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString("hex")}`;
    await onConnection(POSTGRES_URL, (admin) =>
      admin.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`),
    );
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${name}`;
    return {
      name: "postgres",
      env: { DATABASE_URL: url.toString() },
      prefill: (count, ids) => prefillPostgres(url.toString(), count, ids),
      countPlants: async () => {
        let n = 0;
        await onConnection(url.toString(), async (client) => {
          n = Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM plants")).rows[0]!.n);
        });
        return n;
      },
      // FORCE: the server has just been stopped; its connections may still be closing.
      dispose: () => onConnection(POSTGRES_URL, (admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)),
    };
  },
};

export const BACKEND_NAMES = Object.keys(BACKENDS);

export async function openBackend(name: string, scratchDir: string): Promise<Backend> {
  const open = BACKENDS[name];
  if (open === undefined) throw new Error(`unknown backend ${name}; known: ${BACKEND_NAMES.join(", ")}`);
  return open(scratchDir);
}
