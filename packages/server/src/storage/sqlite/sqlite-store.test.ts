import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "./sqlite-store.ts";

let dir: string;
let path: string;
let batches: number[];
let store: SqliteStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "plantstore-sqlite-"));
  path = join(dir, "p.db");
  batches = [];
  store = SqliteStore.open({ path, onCommit: (size) => batches.push(size) });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A second, independent connection: what it sees is what is committed. */
function committedRow(id: bigint) {
  const db = new DatabaseSync(path, { readOnly: true, readBigInts: true });
  try {
    return db.prepare("SELECT id, name, tag FROM plants WHERE id = ?").get(id);
  } finally {
    db.close();
  }
}

describe("SqliteStore group commit", () => {
  it("commits creations that arrive together in one transaction", async () => {
    const outcomes = await Promise.all(Array.from({ length: 100 }, (_, i) => store.create({ id: BigInt(i), name: `p${i}` })));
    expect(outcomes).toEqual(Array(100).fill("created"));
    expect(batches).toEqual([100]);
  });

  it("decides conflicts and replays per request inside one batch", async () => {
    const outcomes = await Promise.all([
      store.create({ id: 1n, name: "Fern" }),
      store.create({ id: 1n, name: "Fern" }),
      store.create({ id: 1n, name: "Moss" }),
      store.create({ id: 1n, name: "Fern", tag: "t" }),
      store.create({ id: 2n, name: "Ivy" }),
    ]);
    expect(outcomes).toEqual(["created", "replayed", "conflict", "conflict", "created"]);
    expect(batches).toEqual([5]);
    expect(committedRow(1n)).toEqual({ id: 1n, name: "Fern", tag: null });
  });

  it("answers only after the batch is committed", async () => {
    const seen = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.create({ id: BigInt(1000 + i), name: "x" }).then(() => committedRow(BigInt(1000 + i)) !== undefined),
      ),
    );
    expect(seen).toEqual(Array(20).fill(true));
  });

  it("splits a burst larger than the batch limit into several commits", async () => {
    const small = SqliteStore.open({ path: join(dir, "small.db"), maxBatchSize: 10, onCommit: (n) => batches.push(n) });
    try {
      await Promise.all(Array.from({ length: 25 }, (_, i) => small.create({ id: BigInt(i), name: "x" })));
      expect(batches).toEqual([10, 10, 5]);
    } finally {
      await small.close();
    }
  });

  it("fails only the statement that failed and commits the rest of its batch", async () => {
    // A real database-side failure for one row: the trigger aborts just that statement.
    const admin = new DatabaseSync(path);
    admin.exec("CREATE TRIGGER refuse_boom BEFORE INSERT ON plants WHEN NEW.name = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END");
    admin.close();
    const results = await Promise.allSettled([
      store.create({ id: 10n, name: "ok-1" }),
      store.create({ id: 11n, name: "boom" }),
      store.create({ id: 12n, name: "ok-2" }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(committedRow(10n)).toBeDefined();
    expect(committedRow(11n)).toBeUndefined();
    expect(committedRow(12n)).toBeDefined();
  });

  it("fails every request of a batch whose transaction is rolled back, and stores none of them", async () => {
    const admin = new DatabaseSync(path);
    admin.exec("CREATE TRIGGER roll_back BEFORE INSERT ON plants WHEN NEW.name = 'rollback' BEGIN SELECT RAISE(ROLLBACK, 'gone'); END");
    admin.close();
    const results = await Promise.allSettled([
      store.create({ id: 20n, name: "ok-1" }),
      store.create({ id: 21n, name: "rollback" }),
      store.create({ id: 22n, name: "ok-2" }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(committedRow(20n)).toBeUndefined();
    expect(committedRow(22n)).toBeUndefined();
    // The store keeps working afterwards.
    await expect(store.create({ id: 23n, name: "after" })).resolves.toBe("created");
  });

  it("commits what is queued before close() finishes", async () => {
    const pending = store.create({ id: 99n, name: "late" });
    await store.close();
    await expect(pending).resolves.toBe("created");
    expect(committedRow(99n)).toBeDefined();
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
