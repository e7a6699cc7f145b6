import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";

import type { RunningServer } from "@plantstore/server";
import * as plantStoreServer from "@plantstore/server";
import { type GivenDatabase, type RealServer, startRealServer } from "@plantstore/test-support/real-server";
import pg from "pg";

/** The built app, as `pnpm --filter @plantstore/web build` leaves it (vitest.config.ts builds it first). */
export const WEB_DIST = fileURLToPath(new URL("../../dist/", import.meta.url));

/**
 * Which backend this pass runs on, as in the server's suite: the package's `test` script runs
 * every file once with `PLANTSTORE_TEST_BACKEND=sqlite` and once with `postgres`.
 */
const BACKEND = process.env["PLANTSTORE_TEST_BACKEND"] ?? "sqlite";
const POSTGRES_URL = process.env["PLANTSTORE_TEST_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, application_name: "plantstore-test" });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A scratch PostgreSQL database for one server (the `plantstore_test_` prefix the server suite sweeps). */
async function scratchPostgres(): Promise<GivenDatabase> {
  const name = `plantstore_test_${Math.floor(Date.now() / 1000)}_${randomBytes(5).toString("hex")}`;
  await admin((client) => client.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    dispose: () =>
      admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** The real server on this pass's backend, serving the built console at /app (PLANTSTORE_WEB_DIR). */
export async function startConsoleServer(): Promise<RealServer<RunningServer>> {
  if (BACKEND !== "sqlite" && BACKEND !== "postgres") {
    throw new Error(`PLANTSTORE_TEST_BACKEND must be sqlite or postgres, got ${BACKEND}`);
  }
  return startRealServer(plantStoreServer, {
    config: { webDir: WEB_DIST },
    ...(BACKEND === "postgres" ? { database: await scratchPostgres() } : {}),
  });
}
