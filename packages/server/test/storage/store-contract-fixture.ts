import { DatabaseSync } from "node:sqlite";

import { afterEach, beforeEach } from "vitest";

import { migrations } from "../../src/storage/migrations.ts";
import { openTokenStore, openWebhookAdmin } from "../../src/storage/open-store.ts";
import type { PlantStore } from "../../src/storage/plant-store.ts";
import { migratePostgres } from "../../src/storage/postgres/migrations.ts";
import { PostgresStore } from "../../src/storage/postgres/postgres-store.ts";
import { migrateSqlite } from "../../src/storage/sqlite/migrations.ts";
import { SqliteStore } from "../../src/storage/sqlite/sqlite-store.ts";
import type { TokenStore } from "../../src/storage/token-store.ts";
import type { WebhookAdmin } from "../../src/storage/webhook-admin.ts";
import type { WebhookQueue } from "../../src/storage/webhook-queue.ts";
import { createTestDatabase, TEST_BACKEND, type TestBackend, type TestDatabase } from "../support/test-database.ts";

/**
 * The store contract suite's fixture: each test gets a fresh database of this pass's backend
 * (PLANTSTORE_TEST_BACKEND), stores opened on it and closed after it, and the backend's own way to
 * run SQL beside them. Imported by store-contract.test.ts (plants) and
 * store-contract-admin.test.ts (migrations, tokens, webhooks), which are one suite in two files so
 * that two workers can run it at once (on PostgreSQL the whole suite was the slowest file, ~25 s).
 * Each test file calls storeContractHooks() once. The tests share one module graph per worker
 * (`isolate: false`), so this module is evaluated once per worker: hooks registered at its top
 * level belonged to whichever file imported it first, and the other file, run after it in the same
 * worker, got none, and its tests ran on the first file's disposed database ("database does not
 * exist", "table already exists"; `--no-file-parallelism` shows it every time). `database` and
 * `batches` are live bindings, set anew before each test.
 */
type StoreOptions = {
  maxBatchSize?: number;
  maxBatchesInFlight?: number;
  onCommit?: (batchSize: number) => void;
};

type Backend = {
  open(database: TestDatabase, options: StoreOptions): Promise<PlantStore & WebhookQueue>;
  /** A trigger that makes the database roll back the whole batch that creates a plant named `name`. */
  rollBackBatchesCreating(name: string): string;
  /** Applies the first `count` migrations only, as an older build did. */
  migrateTo(database: TestDatabase, count: number): Promise<void>;
};

const backends: Record<TestBackend, Backend> = {
  sqlite: {
    // SQLite has one writer per store: its batches commit one at a time whatever maxBatchesInFlight says.
    open: async (database, { maxBatchSize, onCommit }) =>
      SqliteStore.open({ path: database.name, maxBatchSize, onCommit }),
    rollBackBatchesCreating: (name) =>
      `CREATE TRIGGER roll_back BEFORE INSERT ON plants WHEN NEW.name = '${name}' BEGIN SELECT RAISE(ROLLBACK, 'gone'); END`,
    migrateTo: async (database, count) => {
      const db = new DatabaseSync(database.name);
      try {
        migrateSqlite(db, migrations.slice(0, count));
      } finally {
        db.close();
      }
    },
  },
  postgres: {
    open: (database, options) =>
      PostgresStore.open({
        url: database.url,
        poolSize: 4,
        connectTimeoutMs: 2_000,
        queryTimeoutMs: 5_000,
        ...options,
      }),
    // One statement carries the batch: an exception in it leaves none of it stored.
    rollBackBatchesCreating: (name) => `
      CREATE FUNCTION roll_back() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.name = '${name}' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER roll_back BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION roll_back();`,
    migrateTo: (database, count) =>
      migratePostgres(
        { url: database.url, poolSize: 1, connectTimeoutMs: 2_000, queryTimeoutMs: 5_000 },
        migrations.slice(0, count),
      ),
  },
};

export const backend = backends[TEST_BACKEND];
export let database: TestDatabase;
const stores: Array<PlantStore & WebhookQueue> = [];
export let batches: number[];

export async function open(options: Omit<StoreOptions, "onCommit"> = {}): Promise<PlantStore & WebhookQueue> {
  const store = await backend.open(database, { ...options, onCommit: (size) => batches.push(size) });
  stores.push(store);
  return store;
}

const closers: Array<{ close(): Promise<void> }> = [];

/** The token store and webhook administration open their own connections, as the `tokens` and `webhooks` commands do. */
export async function tokenStore(): Promise<TokenStore> {
  const tokens = await openTokenStore(database.url, "admin");
  closers.push(tokens);
  return tokens;
}

export async function webhookAdmin(): Promise<WebhookAdmin> {
  const admin = await openWebhookAdmin(database.url);
  closers.push(admin);
  return admin;
}

/** Registers, in the calling test file, a fresh database before each test and the closing of everything opened on it after. */
export function storeContractHooks(): void {
  beforeEach(async () => {
    database = await createTestDatabase();
    batches = [];
  });
  afterEach(async () => {
    for (const closer of closers.splice(0)) await closer.close();
    for (const store of stores.splice(0)) await store.close();
    await database.dispose();
  });
}
