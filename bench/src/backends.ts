import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { Client } from "pg";

/** What our server needs to reach a fresh, empty store, and how to throw it away afterwards. */
export type Backend = {
  name: string;
  env: Record<string, string>;
  dispose(): Promise<void>;
};

// Where `--backend postgres` creates its scratch database (the user must be allowed to CREATE DATABASE).
const POSTGRES_URL = process.env["PLANTSTORE_BENCH_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";

async function onAdminConnection(sql: string): Promise<void> {
  const admin = new Client({ connectionString: POSTGRES_URL, application_name: "plantstore-bench" });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

// One entry per storage backend.
const BACKENDS: Record<string, (scratchDir: string) => Promise<Backend>> = {
  sqlite: async (scratchDir) => ({
    name: "sqlite",
    env: { DATABASE_URL: `sqlite:${join(scratchDir, "plants.db")}` },
    // The file lives in the scratch directory, which the caller removes.
    dispose: async () => {},
  }),
  postgres: async () => {
    const name = `plantstore_bench_${Math.floor(Date.now() / 1000)}_${randomBytes(4).toString("hex")}`;
    await onAdminConnection(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`);
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${name}`;
    return {
      name: "postgres",
      env: { DATABASE_URL: url.toString() },
      // FORCE: the server has just been stopped; its connections may still be closing.
      dispose: () => onAdminConnection(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
    };
  },
};

export const BACKEND_NAMES = Object.keys(BACKENDS);

export async function openBackend(name: string, scratchDir: string): Promise<Backend> {
  const open = BACKENDS[name];
  if (open === undefined) throw new Error(`unknown backend ${name}; known: ${BACKEND_NAMES.join(", ")}`);
  return open(scratchDir);
}
