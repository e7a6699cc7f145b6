import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SqliteStore } from "../../../src/storage/sqlite/sqlite-store.ts";
import { createTestDatabase, type TestDatabase } from "../../support/test-database.ts";

/** What SQLite alone does; the behaviour both backends share is in ../store-contract.test.ts. */
let database: TestDatabase;
beforeEach(async () => {
  database = await createTestDatabase("sqlite");
});
afterEach(async () => {
  await database.dispose();
});

describe("SqliteStore batches", () => {
  it("fail only the statement that failed and commit the rest (one statement per write, unlike PostgreSQL)", async () => {
    const store = SqliteStore.open({ path: database.name });
    try {
      // A real database-side failure for one row: the trigger aborts just that statement.
      await database.exec(
        "CREATE TRIGGER refuse_boom BEFORE INSERT ON plants WHEN NEW.name = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END",
      );
      const results = await Promise.allSettled([
        store.create({ id: 10n, name: "ok-1" }),
        store.create({ id: 11n, name: "boom" }),
        store.create({ id: 12n, name: "ok-2" }),
      ]);
      expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect(await database.row(10n)).toBeDefined();
      expect(await database.row(11n)).toBeUndefined();
      expect(await database.row(12n)).toBeDefined();
    } finally {
      await store.close();
    }
  });
});

describe("SqliteStore on sqlite::memory:", () => {
  it("groups, conflicts and replays like the file store", async () => {
    const memory = SqliteStore.open({ path: ":memory:" });
    try {
      const outcomes = await Promise.all([
        memory.create({ id: 1n, name: "a" }),
        memory.create({ id: 1n, name: "a" }),
        memory.create({ id: 1n, name: "b" }),
      ]);
      expect(outcomes).toEqual(["created", "replayed", "conflict"]);
      expect(await memory.get(1n)).toEqual({ id: 1n, name: "a" });
    } finally {
      await memory.close();
    }
  });
});
