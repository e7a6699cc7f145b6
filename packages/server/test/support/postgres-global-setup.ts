import { SCRATCH_PREFIX, TEST_POSTGRES_URL, withAdminClient } from "./test-database.ts";

/**
 * Runs once before the PostgreSQL pass of the suite. An unreachable PostgreSQL fails the run
 * (CI must not pass by skipping), with a message saying how to point at another server or run
 * SQLite only. It also drops scratch databases that a crashed run left behind hours ago.
 */
const STALE_AFTER_S = 6 * 60 * 60;

export default async function setup(): Promise<void> {
  try {
    await withAdminClient(async (admin) => {
      const { rows } = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [
        `${SCRATCH_PREFIX}%`,
      ]);
      const now = Math.floor(Date.now() / 1000);
      for (const { datname } of rows) {
        const created = Number(/^plantstore_test_(\d+)_/.exec(datname)?.[1] ?? now);
        if (now - created > STALE_AFTER_S) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
      }
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message || error.name : String(error);
    throw new Error(
      [
        `The PostgreSQL pass of the test suite cannot reach ${TEST_POSTGRES_URL} (${reason}).`,
        "It needs a PostgreSQL server whose user may CREATE DATABASE (each test server gets its own scratch database, dropped afterwards).",
        "Point it elsewhere with PLANTSTORE_TEST_POSTGRES_URL=postgres://user@host:port/db, or run the SQLite pass only:",
        "  pnpm --filter @plantstore/server test:sqlite",
      ].join("\n"),
      { cause: error },
    );
  }
}
