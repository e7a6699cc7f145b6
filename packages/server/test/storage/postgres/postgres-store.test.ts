import { createServer } from "node:net";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { migrations } from "../../../src/storage/migrations.ts";
import { migratePostgres } from "../../../src/storage/postgres/migrations.ts";
import { createPostgresPool, inTransaction, query } from "../../../src/storage/postgres/pool.ts";
import { PostgresStore, type PostgresStoreOptions } from "../../../src/storage/postgres/postgres-store.ts";
import { StoreUnavailableError } from "../../../src/storage/store-errors.ts";
import { createTestDatabase, postgresClient, type TestDatabase } from "../../support/test-database.ts";

/** What PostgreSQL alone does; the behaviour both backends share is in ../store-contract.test.ts. */
let database: TestDatabase;
const stores: PostgresStore[] = [];

const settings = (overrides: Partial<PostgresStoreOptions> = {}): PostgresStoreOptions => ({
  url: database.url,
  poolSize: 4,
  connectTimeoutMs: 2_000,
  queryTimeoutMs: 5_000,
  ...overrides,
});

async function open(overrides: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
  const store = await PostgresStore.open(settings(overrides));
  stores.push(store);
  return store;
}

beforeEach(async () => {
  database = await createTestDatabase("postgres");
});
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  await database.dispose();
});

describe("PostgresStore batches", () => {
  it("settles ids that another connection deletes and recreates meanwhile", async () => {
    const store = await open();
    const other = postgresClient(database.url);
    await other.connect();
    let churning = true;
    const churn = (async () => {
      while (churning) {
        await other.query("DELETE FROM plants WHERE id = 1");
        await other.query("INSERT INTO plants (id, name) VALUES (1, 'theirs') ON CONFLICT DO NOTHING");
      }
    })();
    try {
      const outcomes = await Promise.all(Array.from({ length: 300 }, () => store.create({ id: 1n, name: "ours" })));
      for (const outcome of outcomes) expect(["created", "replayed", "conflict"]).toContain(outcome);
    } finally {
      churning = false;
      await churn;
      await other.end();
    }
  });
});

describe("PostgreSQL migrations", () => {
  it("are applied once when several processes start at the same time", async () => {
    await Promise.all(Array.from({ length: 5 }, () => migratePostgres(settings())));
    const versions = await database.rows<{ version: number }>({
      sqlite: "",
      postgres: "SELECT version FROM schema_migrations ORDER BY version",
    });
    // Every migration exactly once, in order (the list grows: 4 added issued API tokens).
    expect(versions.map((v) => v.version)).toEqual(migrations.map((m) => m.version));
    expect(versions.length).toBeGreaterThanOrEqual(4);
  });
});

describe("PostgresStore when the database cannot be reached", () => {
  it("fails fast with StoreUnavailableError, never a driver error", async () => {
    // A port with nothing listening: connections are refused at once.
    const probe = createServer().listen(0, "127.0.0.1");
    await new Promise((resolve) => probe.once("listening", resolve));
    const { port } = probe.address() as { port: number };
    await new Promise((resolve) => probe.close(resolve));
    const url = new URL(database.url);
    url.port = String(port);
    const store = await open({ url: url.toString(), migrate: false });
    const started = Date.now();
    await expect(store.create({ id: 1n, name: "x" })).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.list({ limit: 1 })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("a pooled connection whose session ends while a transaction holds it", () => {
  it("fails the transaction as unavailable and is replaced, never an uncaught 'error' that ends the process", async () => {
    const pool = createPostgresPool(settings({ poolSize: 1 }));
    const admin = postgresClient(database.url);
    await admin.connect();
    try {
      const failed = inTransaction(pool, async (client) => {
        const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
        // Not events.once: it would listen for 'error' itself while it waits.
        const ended = new Promise((resolve) => client.once("end", resolve));
        await admin.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
        // Between statements, with nothing of ours under way: the driver can only emit the loss as 'error'.
        await ended;
        await client.query("SELECT 1");
      });
      await expect(failed).rejects.toBeInstanceOf(StoreUnavailableError);
      // The pool's only connection was discarded, not handed out again.
      expect(await query(pool, "SELECT 1 AS one")).toEqual([{ one: 1 }]);
    } finally {
      await admin.end();
      await pool.end();
    }
  }, 10_000);
});
