import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

import { Client, Pool, TypeOverrides } from "pg";

/**
 * Which database the behaviour suite runs against: `PLANTSTORE_TEST_BACKEND`, `sqlite` (default)
 * or `postgres`, which each vitest project of the package sets for its files (vitest.config.ts).
 * PostgreSQL runs use `PLANTSTORE_TEST_POSTGRES_URL` (default the local `test` database) only
 * to create and drop one scratch database per test server, named `plantstore_test_<time>_<random>`.
 */
export type TestBackend = "sqlite" | "postgres";

function backendFromEnv(): TestBackend {
  const value = process.env["PLANTSTORE_TEST_BACKEND"] ?? "sqlite";
  if (value !== "sqlite" && value !== "postgres")
    throw new Error(`PLANTSTORE_TEST_BACKEND must be sqlite or postgres, got ${value}`);
  return value;
}

export const TEST_BACKEND: TestBackend = backendFromEnv();
export const TEST_POSTGRES_URL =
  process.env["PLANTSTORE_TEST_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";
export const SCRATCH_PREFIX = "plantstore_test_";

type StoredRow = { id: bigint; name: string; tag: string | null };

/** A fresh, empty database for one test server, read directly (below our own code) by the test. */
export type TestDatabase = {
  backend: TestBackend;
  /** What the server gets as DATABASE_URL. */
  url: string;
  /** The SQLite file, or the PostgreSQL database name. */
  name: string;
  row(id: bigint): Promise<StoredRow | undefined>;
  count(): Promise<number>;
  /** Any query, for tests that look deeper (webhook tables): the text per backend (`?` for SQLite, `$1` for PostgreSQL). */
  rows<R>(sql: { sqlite: string; postgres: string }, params?: unknown[]): Promise<R[]>;
  /** SQL run beside the server, as an administrator would (one or more statements, no parameters). */
  exec(sql: string): Promise<void>;
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

export function createTestDatabase(backend: TestBackend = TEST_BACKEND): Promise<TestDatabase> {
  return backend === "postgres" ? createPostgresDatabase() : Promise.resolve(createSqliteDatabase());
}

function createSqliteDatabase(): TestDatabase {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-test-"));
  const path = join(dir, "plants.db");
  const read = <R>(sql: string, params: unknown[], all: boolean): R[] => {
    const db = new DatabaseSync(path, { readOnly: true, readBigInts: true });
    try {
      const statement = db.prepare(sql);
      const args = params as Array<string | number | bigint | null>;
      return (all ? statement.all(...args) : [statement.get(...args)].filter((r) => r !== undefined)) as R[];
    } finally {
      db.close();
    }
  };
  const dispose = async () => rmSync(dir, { recursive: true, force: true });
  return {
    backend: "sqlite",
    url: `sqlite:${path}`,
    name: path,
    row: async (id) => read<StoredRow>("SELECT id, name, tag FROM plants WHERE id = ?", [id], false)[0],
    count: async () => Number(read<{ n: bigint }>("SELECT count(*) AS n FROM plants", [], false)[0]!.n),
    rows: async (sql, params = []) => read(sql.sqlite, params, true),
    exec: async (sql) => {
      const db = new DatabaseSync(path);
      try {
        db.exec(sql);
      } finally {
        db.close();
      }
    },
    dispose,
    [Symbol.asyncDispose]: dispose,
  };
}

function exactTypes(): TypeOverrides {
  const types = new TypeOverrides();
  types.setTypeParser(20, (text: string) => BigInt(text));
  return types;
}

/** A client with int8 read as BigInt, like the server's, so rows compare exactly. */
export function postgresClient(url: string): Client {
  return new Client({
    connectionString: url,
    types: exactTypes(),
    application_name: "plantstore-test",
    connectionTimeoutMillis: 5_000,
  });
}

/** The scratch database's URL: the admin URL with another database name. */
function urlForDatabase(name: string, base = TEST_POSTGRES_URL): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function withAdminClient<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const admin = postgresClient(TEST_POSTGRES_URL);
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}

async function createPostgresDatabase(): Promise<TestDatabase> {
  // The time in the name lets a later run sweep databases a crashed run left behind.
  const name = `${SCRATCH_PREFIX}${Math.floor(Date.now() / 1000)}_${randomBytes(5).toString("hex")}`;
  // template0: nobody connects to it, so concurrent creations never collide on "source database in use".
  await withAdminClient((admin) => admin.query(`CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8'`));
  const url = urlForDatabase(name);
  // The test's own connections, apart from the server's; application_name keeps them out of fault injection.
  const reader = new Pool({ connectionString: url, types: exactTypes(), application_name: "plantstore-test", max: 2 });
  reader.on("error", () => undefined);
  const read = async <R>(sql: string, params: unknown[]): Promise<R[]> => (await reader.query(sql, params)).rows as R[];
  let disposed = false;
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    await reader.end().catch(() => undefined);
    // FORCE: a server process a test killed may still hold connections for a moment.
    await withAdminClient((admin) => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  };
  return {
    backend: "postgres",
    url,
    name,
    row: async (id) => (await read<StoredRow>("SELECT id, name, tag FROM plants WHERE id = $1", [id]))[0],
    count: async () => Number((await read<{ n: bigint }>("SELECT count(*) AS n FROM plants", []))[0]!.n),
    rows: (sql, params = []) => read(sql.postgres, params),
    // No parameters, so the simple query protocol: several statements in one call.
    exec: async (sql) => {
      await reader.query(sql);
    },
    dispose,
    [Symbol.asyncDispose]: dispose,
  };
}
