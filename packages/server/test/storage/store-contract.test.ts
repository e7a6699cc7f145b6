import { DatabaseSync } from "node:sqlite";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { newOpaqueToken } from "../../src/auth/opaque-token.ts";
import { migrations } from "../../src/storage/migrations.ts";
import { openTokenStore, openWebhookAdmin } from "../../src/storage/open-store.ts";
import { plantETag } from "../../src/storage/plant-etag.ts";
import type { PlantStore } from "../../src/storage/plant-store.ts";
import { migratePostgres } from "../../src/storage/postgres/migrations.ts";
import { PostgresStore } from "../../src/storage/postgres/postgres-store.ts";
import { migrateSqlite } from "../../src/storage/sqlite/migrations.ts";
import { SqliteStore } from "../../src/storage/sqlite/sqlite-store.ts";
import { TokenNameTakenError, type TokenStore } from "../../src/storage/token-store.ts";
import type { WebhookAdmin } from "../../src/storage/webhook-admin.ts";
import type { WebhookQueue } from "../../src/storage/webhook-queue.ts";
import {
  createTestDatabase,
  postgresClient,
  TEST_BACKEND,
  type TestBackend,
  type TestDatabase,
} from "../support/test-database.ts";

/**
 * What every storage backend does alike, run against the backend of this pass of the suite
 * (PLANTSTORE_TEST_BACKEND, as everywhere in it: `test:sqlite` runs it on SQLite, `test:postgres`
 * on PostgreSQL). What one backend alone does is tested beside it, in sqlite/sqlite-store.test.ts
 * and postgres/postgres-store.test.ts. Rows are read back on a connection of the test's own, so
 * what it sees is what is committed. This suite is why the HTTP-level suites run on SQLite only
 * (test/README.md): whatever they rely on the store for is pinned here, on both backends.
 */
type StoreOptions = {
  maxBatchSize?: number;
  maxBatchesInFlight?: number;
  onCommit?: (batchSize: number) => void;
};

type Backend = {
  open(database: TestDatabase, options: StoreOptions): Promise<PlantStore & WebhookQueue>;
  /** Runs SQL beside the store, as an administrator would. */
  exec(database: TestDatabase, sql: string): Promise<void>;
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
    exec: async (database, sql) => {
      const admin = new DatabaseSync(database.name);
      try {
        admin.exec(sql);
      } finally {
        admin.close();
      }
    },
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
    exec: async (database, sql) => {
      const admin = postgresClient(database.url);
      await admin.connect();
      try {
        await admin.query(sql);
      } finally {
        await admin.end();
      }
    },
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

const backend = backends[TEST_BACKEND];
let database: TestDatabase;
const stores: Array<PlantStore & WebhookQueue> = [];
let batches: number[];

async function open(options: Omit<StoreOptions, "onCommit"> = {}): Promise<PlantStore & WebhookQueue> {
  const store = await backend.open(database, { ...options, onCommit: (size) => batches.push(size) });
  stores.push(store);
  return store;
}

beforeEach(async () => {
  database = await createTestDatabase();
  batches = [];
});
const closers: Array<{ close(): Promise<void> }> = [];

/** The token store and webhook administration open their own connections, as the `tokens` and `webhooks` commands do. */
async function tokenStore(): Promise<TokenStore> {
  const tokens = await openTokenStore(database.url, "admin");
  closers.push(tokens);
  return tokens;
}

async function webhookAdmin(): Promise<WebhookAdmin> {
  const admin = await openWebhookAdmin(database.url);
  closers.push(admin);
  return admin;
}

afterEach(async () => {
  for (const closer of closers.splice(0)) await closer.close();
  for (const store of stores.splice(0)) await store.close();
  await database.dispose();
});

describe(`group commit (${TEST_BACKEND})`, () => {
  it("commits creations that arrive together in one transaction", async () => {
    const store = await open();
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, (_, i) => store.create({ id: BigInt(i), name: `p${i}` })),
    );
    expect(outcomes).toEqual(Array(100).fill("created"));
    expect(batches).toEqual([100]);
    expect(await database.count()).toBe(100);
  });

  it("decides conflicts and replays per request inside one batch, the first request winning", async () => {
    const store = await open();
    const outcomes = await Promise.all([
      store.create({ id: 1n, name: "Fern" }),
      store.create({ id: 1n, name: "Fern" }),
      store.create({ id: 1n, name: "Moss" }),
      store.create({ id: 1n, name: "Fern", tag: "t" }),
      store.create({ id: 2n, name: "Ivy" }),
    ]);
    expect(outcomes).toEqual(["created", "replayed", "conflict", "conflict", "created"]);
    expect(batches).toEqual([5]);
    expect(await database.row(1n)).toEqual({ id: 1n, name: "Fern", tag: null });
  });

  it("answers only after the batch is committed (seen by another connection)", async () => {
    const store = await open();
    const seen = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store
          .create({ id: BigInt(1000 + i), name: "x" })
          .then(async () => (await database.row(BigInt(1000 + i))) !== undefined),
      ),
    );
    expect(seen).toEqual(Array(20).fill(true));
  });

  it("splits a burst larger than the batch limit into several commits", async () => {
    const store = await open({ maxBatchSize: 10, maxBatchesInFlight: 1 });
    await Promise.all(Array.from({ length: 25 }, (_, i) => store.create({ id: BigInt(i), name: "x" })));
    expect(batches).toEqual([10, 10, 5]);
  });

  it("fails every request of a batch whose transaction is rolled back, stores none of them, and keeps serving", async () => {
    const store = await open();
    await backend.exec(database, backend.rollBackBatchesCreating("rollback"));
    const results = await Promise.allSettled([
      store.create({ id: 20n, name: "ok-1" }),
      store.create({ id: 21n, name: "rollback" }),
      store.create({ id: 22n, name: "ok-2" }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(batches).toEqual([]);
    expect(await database.count()).toBe(0);
    await expect(store.create({ id: 23n, name: "after" })).resolves.toBe("created");
    expect(await database.row(23n)).toEqual({ id: 23n, name: "after", tag: null });
  });

  it("commits what is queued before close() finishes", async () => {
    const store = await open();
    const pending = store.create({ id: 99n, name: "late" });
    await store.close();
    await expect(pending).resolves.toBe("created");
    expect(await database.row(99n)).toBeDefined();
  });
});

describe(`plants (${TEST_BACKEND})`, () => {
  it("keeps int8 exact at both ends of the range", async () => {
    const store = await open();
    for (const id of [-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n]) {
      expect(await store.create({ id, name: `n${id}` })).toBe("created");
      expect(await store.get(id)).toEqual({ id, name: `n${id}` });
    }
    expect((await store.list({ limit: 10 })).map((p) => p.id)).toEqual([-(2n ** 63n), 2n ** 53n + 1n, 2n ** 63n - 1n]);
  });

  it("lists every id exactly, a page mixing ids within and beyond ±2^53 included (small ones may come as numbers)", async () => {
    const store = await open();
    const ids = [-(2n ** 53n) - 1n, -(2n ** 53n) + 1n, -1n, 0n, 7n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 63n - 1n];
    for (const id of ids) expect(await store.create({ id, name: "n", tag: "t" })).toBe("created");
    const listed = await store.list({ limit: 100 });
    expect(listed.map((p) => BigInt(p.id))).toEqual(ids);
    for (const p of listed) if (typeof p.id === "number") expect(Number.isSafeInteger(p.id)).toBe(true);
    expect((await store.list({ limit: 3, after: 0n, tag: "t" })).map((p) => BigInt(p.id))).toEqual([
      7n,
      2n ** 53n - 1n,
      2n ** 53n,
    ]);
    expect((await store.list({ limit: 2, after: -2n })).map((p) => [BigInt(p.id), p.name, p.tag])).toEqual([
      [-1n, "n", "t"],
      [0n, "n", "t"],
    ]);
  });
});

describe(`plants at INT64_MIN (${TEST_BACKEND})`, () => {
  // node:sqlite reads INT64_MIN as the rounded number -2^63 without raising, unlike every other
  // id beyond ±2^53: a page with no other such id must still come back exact.
  it.each([
    ["on a page of one", {}],
    ["first of an unfiltered page", { limit: 2 }],
    ["filtered by tag", { tag: "t" }],
  ])("lists it exactly %s", async (_, options) => {
    const store = await open();
    expect(await store.create({ id: -(2n ** 63n), name: "min", tag: "t" })).toBe("created");
    expect(await store.create({ id: 1n, name: "one" })).toBe("created");
    const listed = await store.list({ limit: 1, ...options });
    expect(listed[0]).toEqual({ id: -(2n ** 63n), name: "min", tag: "t" });
  });
});

describe(`two stores (two processes) on one database (${TEST_BACKEND})`, () => {
  it("create every id exactly once when racing: one creator, the other a conflict or a replay as its content says", async () => {
    const a = await open();
    const b = await open();
    const ids = Array.from({ length: 400 }, (_, i) => BigInt(i) * 7919n);
    // Interleaved, so batches of both stores carry the same ids at the same moment.
    const results = await Promise.all(
      ids.flatMap((id) => [
        a.create({ id, name: "from-a" }).then((outcome) => ({ id, who: "a", outcome })),
        b.create({ id, name: "from-b" }).then((outcome) => ({ id, who: "b", outcome })),
        b.create({ id, name: "from-a" }).then((outcome) => ({ id, who: "b-same-as-a", outcome })),
      ]),
    );
    expect(await database.count()).toBe(ids.length);
    for (const id of ids) {
      const row = await database.row(id);
      const mine = results.filter((r) => r.id === id);
      expect(mine.filter((r) => r.outcome === "created")).toHaveLength(1);
      const creator = mine.find((r) => r.outcome === "created")!;
      expect(row?.name).toBe(creator.who === "b" ? "from-b" : "from-a");
      for (const r of mine.filter((r) => r.outcome !== "created")) {
        const sameContent = (r.who === "b" ? "from-b" : "from-a") === row?.name;
        expect(r.outcome).toBe(sameContent ? "replayed" : "conflict");
      }
    }
  });

  it("page by id with no gap or repeat while the other store creates plants between and after", async () => {
    const reader = await open();
    const writer = await open();
    const ids = Array.from({ length: 2_000 }, (_, i) => BigInt(i * 3));
    await Promise.all(ids.map((id) => reader.create({ id, name: "there", tag: "walk" })));
    const writing = Promise.all(
      Array.from({ length: 1_000 }, (_, i) => writer.create({ id: BigInt(i * 3 + 1), name: "new", tag: "walk" })),
    );
    const seen: bigint[] = [];
    for (let after: bigint | undefined; ;) {
      const page = (await reader.list({ limit: 50, after, tag: "walk" })).map((p) => BigInt(p.id));
      if (page.length === 0) break;
      seen.push(...page);
      after = page.at(-1);
    }
    await writing;
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(seen);
    const seenSet = new Set(seen);
    expect(ids.filter((id) => !seenSet.has(id))).toEqual([]);
  });

  it("stores names and tags exactly as sent, whatever characters they hold, and announces them so", async () => {
    const store = await open();
    await backend.exec(
      database,
      "INSERT INTO webhook_subscribers (id, url, secret, created_at) VALUES ('whk_t', 'http://127.0.0.1:9/', 'whsec_x', 0)",
    );
    const names = [
      'say "hi"',
      "back\\slash\\",
      "a,b",
      "{braces}",
      "NULL",
      " spaced ",
      "üñí 🌿",
      "tab\tnew\nline",
      '\\"',
    ];
    const plants = names.map((name, i) => ({ id: BigInt(i + 1), name, ...(i % 2 === 0 ? { tag: name } : {}) }));
    plants.push({ id: 100n, name: "tagged NULL", tag: "NULL" });
    expect(await Promise.all(plants.map((plant) => store.create(plant)))).toEqual(plants.map(() => "created"));
    for (const plant of plants) expect(await store.get(plant.id)).toEqual(plant);
    const now = Date.now();
    const deliveries = await store.claimDeliveries({ now, leaseUntil: now + 60_000, limit: 100 });
    const payloads = deliveries.map((d) => d.payload).sort();
    const expected = plants.map((plant) =>
      JSON.stringify({
        id: Number(plant.id),
        name: plant.name,
        ...(plant.tag === undefined ? {} : { tag: plant.tag }),
      }),
    );
    expect(payloads).toEqual(expected.sort());
  });

  it("announces plants created right after the first subscriber is added", async () => {
    const store = await open();
    expect(await store.create({ id: 1n, name: "before" })).toBe("created");
    expect(await store.webhookBacklog()).toBe(0);
    await backend.exec(
      database,
      "INSERT INTO webhook_subscribers (id, url, secret, created_at) VALUES ('whk_t', 'http://127.0.0.1:9/', 'whsec_x', 0)",
    );
    expect(
      await Promise.all([store.create({ id: 2n, name: "after" }), store.create({ id: 3n, name: "after" })]),
    ).toEqual(["created", "created"]);
    expect(await store.webhookBacklog()).toBe(2);
    await backend.exec(database, "UPDATE webhook_subscribers SET active = false");
    expect(await store.create({ id: 4n, name: "unsubscribed" })).toBe("created");
    expect(await store.webhookBacklog()).toBe(2);
  });

  it("hand each due webhook delivery to exactly one claimer (a lease; FOR UPDATE SKIP LOCKED on PostgreSQL)", async () => {
    const seeder = await open();
    await backend.exec(
      database,
      "INSERT INTO webhook_subscribers (id, url, secret, created_at) VALUES ('whk_t', 'http://127.0.0.1:9/', 'whsec_x', 0)",
    );
    await Promise.all(Array.from({ length: 200 }, (_, i) => seeder.create({ id: BigInt(i), name: "x" })));
    const claimers = [seeder, await open(), await open()];
    const claimed: number[] = [];
    const now = Date.now();
    await Promise.all(
      claimers.map(async (store) => {
        for (;;) {
          const batch = await store.claimDeliveries({ now, leaseUntil: now + 60_000, limit: 7 });
          if (batch.length === 0) return;
          claimed.push(...batch.map((d) => d.deliveryId));
        }
      }),
    );
    expect(claimed).toHaveLength(200);
    expect(new Set(claimed).size).toBe(200);
    expect(await seeder.hasDueDeliveries(now)).toBe(false);
    expect(await seeder.webhookBacklog()).toBe(200);
  });
});

describe(`plants deleted (${TEST_BACKEND})`, () => {
  it("delete exactly the id asked, not a neighbour, answer not_found after, and free the id", async () => {
    const store = await open();
    for (const id of [2n ** 63n - 1n, 2n ** 63n - 2n, -(2n ** 63n), -(2n ** 63n) + 1n])
      expect(await store.create({ id, name: `n${id}` })).toBe("created");
    expect(await store.delete(2n ** 63n - 1n)).toBe("deleted");
    expect(await store.delete(-(2n ** 63n))).toBe("deleted");
    expect(await store.delete(2n ** 63n - 1n)).toBe("not_found");
    expect(await store.delete(5n)).toBe("not_found");
    expect(await database.row(2n ** 63n - 1n)).toBeUndefined();
    expect((await store.list({ limit: 10 })).map((p) => BigInt(p.id))).toEqual([-(2n ** 63n) + 1n, 2n ** 63n - 2n]);
    expect(await store.create({ id: 2n ** 63n - 1n, name: "reborn", tag: "new" })).toBe("created");
    expect(await store.get(2n ** 63n - 1n)).toEqual({ id: 2n ** 63n - 1n, name: "reborn", tag: "new" });
  });
});

describe(`plants changed under a precondition (${TEST_BACKEND})`, () => {
  const MAX = 2n ** 63n - 1n;
  const STALE = '"AAAAAAAAAAAAAAAAAAAAAAAAAAA"';

  it("update applies a merge patch when If-Match holds: a missing key keeps its field, tag null removes the tag", async () => {
    const store = await open();
    const fern = { id: MAX, name: "Fern", tag: "green" };
    expect(await store.create(fern)).toBe("created");
    expect(await store.update(MAX, { name: "Big fern" }, [STALE, plantETag(fern)])).toEqual({
      outcome: "written",
      plant: { id: MAX, name: "Big fern", tag: "green" },
      created: false,
    });
    expect(await database.row(MAX)).toEqual({ id: MAX, name: "Big fern", tag: "green" });
    const renamed = { id: MAX, name: "Big fern", tag: "green" };
    expect(await store.update(MAX, { tag: null }, [plantETag(renamed)])).toEqual({
      outcome: "written",
      plant: { id: MAX, name: "Big fern" },
      created: false,
    });
    expect(await database.row(MAX)).toEqual({ id: MAX, name: "Big fern", tag: null });
    expect(await store.update(MAX, { tag: "again" }, "*")).toMatchObject({
      outcome: "written",
      plant: { id: MAX, name: "Big fern", tag: "again" },
    });
    expect(await store.get(MAX)).toEqual({ id: MAX, name: "Big fern", tag: "again" });
  });

  it("update with a stale tag writes nothing and answers the plant as stored", async () => {
    const store = await open();
    const ivy = { id: 1n, name: "Ivy" };
    await store.create(ivy);
    expect(await store.update(1n, { name: "Lost" }, [STALE])).toEqual({ outcome: "precondition_failed", current: ivy });
    expect(await database.row(1n)).toEqual({ id: 1n, name: "Ivy", tag: null });
  });

  it("update of a missing plant is not_found whatever If-Match says", async () => {
    const store = await open();
    expect(await store.update(5n, { name: "x" }, "*")).toEqual({ outcome: "not_found" });
    expect(await store.update(5n, { name: "x" }, [STALE])).toEqual({ outcome: "not_found" });
    expect(await database.count()).toBe(0);
  });

  it("update that changes nothing answers the plant as it is", async () => {
    const store = await open();
    const moss = { id: 2n, name: "Moss", tag: "t" };
    await store.create(moss);
    expect(await store.update(2n, { name: "Moss", tag: "t" }, [plantETag(moss)])).toEqual({
      outcome: "written",
      plant: moss,
      created: false,
    });
    expect(await store.update(2n, {}, [plantETag(moss)])).toEqual({ outcome: "written", plant: moss, created: false });
  });

  it("replace stores the whole plant when If-Match holds (an absent tag removes it), and fails on a free id", async () => {
    const store = await open();
    const sage = { id: -(2n ** 63n), name: "Sage", tag: "herb" };
    await store.create(sage);
    expect(await store.replace({ id: sage.id, name: "Thyme" }, { ifMatch: [plantETag(sage)] })).toEqual({
      outcome: "written",
      plant: { id: sage.id, name: "Thyme" },
      created: false,
    });
    expect(await database.row(sage.id)).toEqual({ id: sage.id, name: "Thyme", tag: null });
    expect(await store.replace({ id: sage.id, name: "Mint" }, { ifMatch: [plantETag(sage)] })).toEqual({
      outcome: "precondition_failed",
      current: { id: sage.id, name: "Thyme" },
    });
    expect(await store.replace({ id: 9n, name: "Mint" }, { ifMatch: "*" })).toEqual({
      outcome: "precondition_failed",
      current: undefined,
    });
    expect(await database.row(9n)).toBeUndefined();
  });

  it("replace with If-None-Match * creates only on a free id, and answers the plant there otherwise", async () => {
    const store = await open();
    const rose = { id: 3n, name: "Rose", tag: "red" };
    expect(await store.replace(rose, { ifNoneMatch: "*" })).toEqual({ outcome: "written", plant: rose, created: true });
    expect(await database.row(3n)).toEqual({ id: 3n, name: "Rose", tag: "red" });
    // Taken, even by the very same plant: If-None-Match * fails.
    expect(await store.replace(rose, { ifNoneMatch: "*" })).toEqual({ outcome: "precondition_failed", current: rose });
    expect(await store.replace({ id: 3n, name: "Tulip" }, { ifNoneMatch: "*" })).toEqual({
      outcome: "precondition_failed",
      current: rose,
    });
    expect(await database.row(3n)).toEqual({ id: 3n, name: "Rose", tag: "red" });
  });

  it("delete with If-Match deletes only while it holds; a missing plant is not_found", async () => {
    const store = await open();
    const oak = { id: 4n, name: "Oak" };
    await store.create(oak);
    expect(await store.delete(4n, [STALE])).toEqual({ outcome: "precondition_failed", current: oak });
    expect(await database.row(4n)).toEqual({ id: 4n, name: "Oak", tag: null });
    expect(await store.delete(4n, [plantETag(oak)])).toBe("deleted");
    expect(await database.row(4n)).toBeUndefined();
    expect(await store.delete(4n, [plantETag(oak)])).toBe("not_found");
    expect(await store.delete(4n, "*")).toBe("not_found");
  });

  it.each([
    ["one store", 1],
    ["two stores (two processes) on one database", 2],
  ])("of 50 updates carrying one ETag, from %s, exactly one is written and it is what is stored", async (_, count) => {
    const stores = await Promise.all(Array.from({ length: count }, () => open()));
    const original = { id: 7n, name: "Basil", tag: "herb" };
    await stores[0]!.create(original);
    const etag = plantETag(original);
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) => stores[i % count]!.update(7n, { name: `writer ${i}` }, [etag])),
    );
    const written = outcomes.filter((o) => o.outcome === "written");
    expect(written).toHaveLength(1);
    const winner = written[0]!.plant;
    expect(outcomes.filter((o) => o.outcome === "precondition_failed")).toHaveLength(49);
    for (const o of outcomes) if (o.outcome === "precondition_failed") expect(o.current).toEqual(winner);
    expect(await database.row(7n)).toEqual({ id: 7n, name: winner.name, tag: "herb" });
  });

  it("of 100 updates with If-Match * racing from two stores, every one is written, each on the plant as it then was", async () => {
    const [a, b] = [await open(), await open()];
    await a.create({ id: 8n, name: "start", tag: "t0" });
    // Half change the name, half the tag: a patch keeps the field it does not name, whoever wrote it last.
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        (i % 2 === 0 ? a : b).update(8n, i % 4 < 2 ? { name: `name ${i}` } : { tag: `tag ${i}` }, "*"),
      ),
    );
    expect(outcomes.map((o) => o.outcome)).toEqual(Array(100).fill("written"));
    const stored = await database.row(8n);
    const written = outcomes.map((o) => (o.outcome === "written" ? o.plant : undefined));
    expect(written.map((p) => p?.name)).toContain(stored?.name);
    expect(written.map((p) => p?.tag)).toContain(stored?.tag);
    // Neither field was lost to a write of the other: the last name and the last tag are both there.
    expect(stored?.name).not.toBe("start");
    expect(stored?.tag).not.toBe("t0");
  });
});

describe(`migrations (${TEST_BACKEND})`, () => {
  it("report those applied against those this build knows, and fewer when the database is behind", async () => {
    const store = await open();
    const status = await store.migrations!();
    expect(status.applied).toBe(status.known);
    expect(status.known).toBeGreaterThanOrEqual(3);
    // As if the database were older than this build (another process restored it, say): /readyz answers 503.
    await backend.exec(
      database,
      "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)",
    );
    expect(await store.migrations!()).toEqual({ applied: status.known - 1, known: status.known });
  });
});

describe(`issued tokens (${TEST_BACKEND})`, () => {
  const record = (issued: ReturnType<typeof newOpaqueToken>, fields: { name: string; createdAt: number }) => ({
    id: issued.id,
    scopes: ["plants:read", "plants:write"],
    secretHash: issued.secretHash,
    expiresAt: null,
    ...fields,
  });

  it("are stored as the secret's digest only, and one name is held by one active token at a time", async () => {
    await open(); // applies the migrations
    const tokens = await tokenStore();
    const first = newOpaqueToken();
    const before = await tokens.tokenChangeVersion();
    await tokens.createToken(record(first, { name: "ci", createdAt: 1_000 }));
    expect(await tokens.tokenChangeVersion()).toBeGreaterThan(before);

    const rows = await database.rows<Record<string, unknown>>({
      sqlite: "SELECT * FROM api_tokens",
      postgres: "SELECT * FROM api_tokens",
    });
    expect(rows).toHaveLength(1);
    expect(Buffer.from(rows[0]!["secret_hash"] as Uint8Array)).toEqual(first.secretHash);
    const text = JSON.stringify(rows, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
    expect(text).not.toContain(first.token.split("_")[2]!);
    const found = await tokens.findToken(first.id);
    expect({ ...found, secretHash: Buffer.from(found!.secretHash) }).toEqual({
      id: first.id,
      name: "ci",
      scopes: ["plants:read", "plants:write"],
      createdAt: 1_000,
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: null,
      secretHash: first.secretHash,
    });

    const second = newOpaqueToken();
    await expect(tokens.createToken(record(second, { name: "ci", createdAt: 2_000 }))).rejects.toBeInstanceOf(
      TokenNameTakenError,
    );
    const beforeRevoke = await tokens.tokenChangeVersion();
    expect(await tokens.revokeToken("ci", 3_000)).toMatchObject({ id: first.id, revokedAt: 3_000 });
    expect(await tokens.tokenChangeVersion()).toBeGreaterThan(beforeRevoke);
    // By name only an active token matches; by id a revoked one answers with its first revocation.
    expect(await tokens.revokeToken("ci", 4_000)).toBeUndefined();
    expect(await tokens.revokeToken(first.id, 4_000)).toMatchObject({ id: first.id, revokedAt: 3_000 });
    await tokens.createToken(record(second, { name: "ci", createdAt: 5_000 }));
    expect((await tokens.listTokens()).map((t) => [t.id, t.name, t.revokedAt])).toEqual([
      [second.id, "ci", null],
      [first.id, "ci", 3_000],
    ]);
  });

  it("are held while neither revoked nor expired, not at all beyond the limit; last use never moves back", async () => {
    await open();
    const tokens = await tokenStore();
    const [kept, expiring, revoked] = [newOpaqueToken(), newOpaqueToken(), newOpaqueToken()];
    await tokens.createToken(record(kept, { name: "kept", createdAt: 1 }));
    await tokens.createToken({ ...record(expiring, { name: "expiring", createdAt: 2 }), expiresAt: 5_000 });
    await tokens.createToken(record(revoked, { name: "revoked", createdAt: 3 }));
    await tokens.revokeToken(revoked.id, 10);
    const ids = async (now: number, limit: number) => (await tokens.activeTokens(now, limit))?.map((t) => t.id).sort();
    expect(await ids(4_999, 10)).toEqual([kept.id, expiring.id].sort());
    expect(await ids(5_000, 10)).toEqual([kept.id]);
    expect(await ids(4_999, 1)).toBeUndefined();

    const version = await tokens.tokenChangeVersion();
    await tokens.recordLastUsed(new Map([[kept.id, 7_000]]));
    await tokens.recordLastUsed(
      new Map([
        [kept.id, 6_000],
        [expiring.id, 6_500],
      ]),
    );
    expect((await tokens.findToken(kept.id))?.lastUsedAt).toBe(7_000);
    expect((await tokens.findToken(expiring.id))?.lastUsedAt).toBe(6_500);
    expect(await tokens.tokenChangeVersion()).toBe(version);
  });
});

describe(`webhook event types (${TEST_BACKEND})`, () => {
  const SECRET = `whsec_${Buffer.alloc(24, 5).toString("base64")}`;
  const MAX = 2n ** 63n - 1n;
  const ENVELOPE =
    /^\{"type":"(plant\.(?:created|updated|deleted))","timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)","data":(.*)\}$/;

  /** Every delivery due now, claimed, as `{type or "bare"} {data}` per subscriber, in the order written. */
  async function announced(store: WebhookQueue): Promise<Map<string, string[]>> {
    const now = Date.now() + 1;
    const bySubscriber = new Map<string, string[]>();
    const claimed = await store.claimDeliveries({ now, leaseUntil: now + 60_000, limit: 1_000 });
    for (const d of claimed.sort((a, b) => a.deliveryId - b.deliveryId)) {
      const envelope = ENVELOPE.exec(d.payload);
      if (envelope !== null) {
        // The change's time, RFC 3339 in UTC, and when the event was written.
        expect(Date.parse(envelope[2]!)).toBe(d.createdAt);
      }
      const seen = envelope === null ? `bare ${d.payload}` : `${envelope[1]} ${envelope[3]}`;
      bySubscriber.set(d.subscriberId, [...(bySubscriber.get(d.subscriberId) ?? []), seen]);
      await store.recordAttempt({
        deliveryId: d.deliveryId,
        subscriberId: d.subscriberId,
        attemptedAt: now,
        durationMs: 1,
        statusCode: 204,
        error: null,
        result: "delivered",
        nextAttemptAt: now,
      });
    }
    return bySubscriber;
  }

  it("go to each subscriber as it chose: the bare new plant to one without types, envelopes of its types to the others", async () => {
    const store = await open();
    const admin = await webhookAdmin();
    const legacy = await admin.add("http://127.0.0.1:9/legacy", SECRET);
    const all = await admin.add("http://127.0.0.1:9/all", SECRET, ["plant.created", "plant.updated", "plant.deleted"]);
    const changes = await admin.add("http://127.0.0.1:9/changes", SECRET, ["plant.updated", "plant.deleted"]);
    expect((await admin.list()).map((s) => [s.url, s.events]).sort()).toEqual(
      [
        [legacy.url, null],
        [all.url, ["plant.created", "plant.updated", "plant.deleted"]],
        [changes.url, ["plant.updated", "plant.deleted"]],
      ].sort(),
    );

    const fern = { id: MAX, name: 'Fern "big"', tag: "green" };
    expect(await store.create(fern)).toBe("created");
    expect(await store.create(fern)).toBe("replayed");
    const json = '{"id":9223372036854775807,"name":"Fern \\"big\\"","tag":"green"}';
    expect(await announced(store)).toEqual(
      new Map([
        [legacy.id, [`bare ${json}`]],
        [all.id, [`plant.created ${json}`]],
      ]),
    );

    // A change, one that changes nothing, a stale one, a replacement: only real changes are announced.
    const renamed = await store.update(MAX, { name: "Fern", tag: null }, [plantETag(fern)]);
    expect(renamed.outcome).toBe("written");
    const plant = { id: MAX, name: "Fern" };
    expect(await store.update(MAX, { name: "Fern" }, [plantETag(plant)])).toMatchObject({ outcome: "written" });
    expect(await store.update(MAX, { name: "Lost" }, [plantETag(fern)])).toMatchObject({
      outcome: "precondition_failed",
    });
    expect(await store.replace({ id: MAX, name: "Fern", tag: "t" }, { ifMatch: "*" })).toMatchObject({
      outcome: "written",
    });
    expect(await store.replace({ id: MAX, name: "Fern", tag: "t" }, { ifMatch: "*" })).toMatchObject({
      outcome: "written",
    });
    const updates = [
      'plant.updated {"id":9223372036854775807,"name":"Fern"}',
      'plant.updated {"id":9223372036854775807,"name":"Fern","tag":"t"}',
    ];
    expect(await announced(store)).toEqual(
      new Map([
        [all.id, updates],
        [changes.id, updates],
      ]),
    );

    // A stale delete deletes nothing and announces nothing; a delete, its id alone.
    expect(await store.delete(MAX, [plantETag(fern)])).toMatchObject({ outcome: "precondition_failed" });
    expect(await store.delete(MAX, "*")).toBe("deleted");
    expect(await store.delete(MAX)).toBe("not_found");
    expect(await store.create({ id: 1n, name: "One" })).toBe("created");
    expect(await store.delete(1n)).toBe("deleted");
    const [first, second] = ['plant.deleted {"id":9223372036854775807}', 'plant.deleted {"id":1}'];
    expect(await announced(store)).toEqual(
      new Map([
        [legacy.id, ['bare {"id":1,"name":"One"}']],
        [all.id, [first, 'plant.created {"id":1,"name":"One"}', second]],
        [changes.id, [first, second]],
      ]),
    );

    // Created through a replace on a free id: a new plant like any other; on a taken id, nothing.
    expect(await store.replace({ id: 2n, name: "Two" }, { ifNoneMatch: "*" })).toMatchObject({ created: true });
    expect(await store.replace({ id: 2n, name: "Two" }, { ifNoneMatch: "*" })).toMatchObject({
      outcome: "precondition_failed",
    });
    expect(await announced(store)).toEqual(
      new Map([
        [legacy.id, ['bare {"id":2,"name":"Two"}']],
        [all.id, ['plant.created {"id":2,"name":"Two"}']],
      ]),
    );
  });

  it("write no event for a type nobody chose, and none to a disabled subscriber", async () => {
    const store = await open();
    const admin = await webhookAdmin();
    await admin.add("http://127.0.0.1:9/deleted", SECRET, ["plant.deleted"]);
    const off = await admin.add("http://127.0.0.1:9/off", SECRET, ["plant.created", "plant.updated"]);
    await backend.exec(database, `UPDATE webhook_subscribers SET active = false WHERE id = '${off.id}'`);
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.create({ id: BigInt(i), name: "x" })));
    expect(await store.update(1n, { name: "y" }, "*")).toMatchObject({ outcome: "written" });
    expect(await store.webhookBacklog()).toBe(0);
    expect(await store.delete(1n)).toBe("deleted");
    expect(await store.webhookBacklog()).toBe(1);
  });

  it("keep the subscribers of a database migrated from before event types on the bare new-plant payload", async () => {
    await backend.migrateTo(database, 5);
    await backend.exec(
      database,
      "INSERT INTO webhook_subscribers (id, url, secret, created_at) VALUES ('whk_old', 'http://127.0.0.1:9/', 'whsec_x', 0)",
    );
    const store = await open();
    expect(await store.migrations!()).toEqual({ applied: migrations.length, known: migrations.length });
    const admin = await webhookAdmin();
    expect((await admin.list()).map((s) => [s.id, s.events])).toEqual([["whk_old", null]]);
    expect(await store.create({ id: 1n, name: "Fern" })).toBe("created");
    expect(await store.update(1n, { tag: "t" }, "*")).toMatchObject({ outcome: "written" });
    expect(await store.delete(1n)).toBe("deleted");
    expect(await announced(store)).toEqual(new Map([["whk_old", ['bare {"id":1,"name":"Fern"}']]]));
  });
});

describe(`webhook deliveries and their administration (${TEST_BACKEND})`, () => {
  const SECRET = `whsec_${Buffer.alloc(24, 7).toString("base64")}`;
  const lease = (now: number) => ({ now, leaseUntil: now + 60_000, limit: 10 });
  const attempt = (deliveryId: number, subscriberId: string, at: number, result: "delivered" | "pending" | "gone") => ({
    deliveryId,
    subscriberId,
    attemptedAt: at,
    durationMs: 12,
    statusCode: result === "delivered" ? 204 : result === "gone" ? 410 : 500,
    error: null,
    result,
    nextAttemptAt: at + 3_600_000,
  });

  it("record each attempt, list those still failing, and replay one now under the same webhook-id", async () => {
    const store = await open();
    const admin = await webhookAdmin();
    const subscriber = await admin.add("http://127.0.0.1:9/hook", SECRET);
    expect(subscriber).toMatchObject({ url: "http://127.0.0.1:9/hook", active: true, disabledReason: null });
    expect(await admin.list()).toEqual([subscriber]);
    expect(await store.create({ id: 1n, name: "a" })).toBe("created");

    const now = Date.now();
    const [claimed, ...more] = await store.claimDeliveries(lease(now));
    expect(more).toEqual([]);
    expect(claimed).toMatchObject({ attempts: 0, subscriberId: subscriber.id, payload: '{"id":1,"name":"a"}' });
    expect(await store.claimDeliveries(lease(now))).toEqual([]); // leased
    await store.recordAttempt(attempt(claimed!.deliveryId, subscriber.id, now, "pending"));
    expect(await store.hasDueDeliveries(now + 1_000)).toBe(false);
    expect(await store.webhookBacklog()).toBe(1);
    expect(await admin.deliveries({ failedOnly: true, limit: 10 })).toEqual([
      {
        id: claimed!.deliveryId,
        messageId: claimed!.messageId,
        subscriberId: subscriber.id,
        status: "pending",
        attempts: 1,
        nextAttemptAt: new Date(now + 3_600_000).toISOString(),
        lastStatus: 500,
        lastError: null,
      },
    ]);
    expect(await admin.attempts(claimed!.deliveryId)).toEqual([
      { attemptedAt: new Date(now).toISOString(), statusCode: 500, error: null, durationMs: 12 },
    ]);

    expect(await admin.replay(claimed!.deliveryId)).toBe("queued");
    const later = Date.now() + 1;
    expect(await store.hasDueDeliveries(later)).toBe(true);
    const [again] = await store.claimDeliveries(lease(later));
    expect(again).toMatchObject({ deliveryId: claimed!.deliveryId, messageId: claimed!.messageId, attempts: 1 });
    await store.recordAttempt(attempt(again!.deliveryId, subscriber.id, later, "delivered"));
    expect(await store.webhookBacklog()).toBe(0);
    expect(await admin.deliveries({ failedOnly: true, limit: 10 })).toEqual([]);
    expect(await admin.deliveries({ failedOnly: false, limit: 10 })).toMatchObject([
      { id: claimed!.deliveryId, status: "delivered", attempts: 2, lastStatus: 204 },
    ]);
    // Whatever its state: a delivered event is sent once more on request.
    expect(await admin.replay(claimed!.deliveryId)).toBe("queued");
    expect(await store.webhookBacklog()).toBe(1);
    expect(await admin.replay(claimed!.deliveryId + 1_000)).toBe("no_delivery");
  });

  it("on a 410 disable the subscriber and cancel its pending deliveries; replay to it is refused", async () => {
    const store = await open();
    const admin = await webhookAdmin();
    const gone = await admin.add("http://127.0.0.1:9/gone", SECRET);
    const other = await admin.add("http://127.0.0.1:9/other", SECRET);
    await Promise.all([store.create({ id: 1n, name: "a" }), store.create({ id: 2n, name: "b" })]);
    const now = Date.now();
    const claimed = await store.claimDeliveries(lease(now));
    expect(claimed).toHaveLength(4);
    const [first, second] = claimed.filter((d) => d.subscriberId === gone.id);
    await store.recordAttempt(attempt(first!.deliveryId, gone.id, now, "gone"));
    // Both were added in the same millisecond as often as not, and then the list orders them by
    // their random ids: what is checked here is each one's state, not their order.
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    expect((await admin.list()).sort(byId)).toEqual(
      [{ ...gone, active: false, disabledReason: "410 Gone from the receiver" }, other].sort(byId),
    );
    expect(await store.webhookBacklog()).toBe(2); // the other subscriber's two
    // The attempt in flight to it meanwhile is recorded, and does not revive its delivery.
    await store.recordAttempt(attempt(second!.deliveryId, gone.id, now, "pending"));
    expect(await store.webhookBacklog()).toBe(2);
    expect(await admin.attempts(second!.deliveryId)).toHaveLength(1);
    expect(await admin.replay(first!.deliveryId)).toBe("subscriber_disabled");
    expect(await store.webhookBacklog()).toBe(2);
  });

  it("on removing a subscriber cancel its pending deliveries, keep their history, and refuse to replay them", async () => {
    const store = await open();
    const admin = await webhookAdmin();
    const removed = await admin.add("http://127.0.0.1:9/removed", SECRET);
    const kept = await admin.add("http://127.0.0.1:9/kept", SECRET);
    expect(await store.create({ id: 1n, name: "a" })).toBe("created");
    const now = Date.now();
    const claimed = await store.claimDeliveries(lease(now));
    const inFlight = claimed.find((d) => d.subscriberId === removed.id)!;
    expect(await admin.remove(removed.id)).toBe(true);
    expect(await admin.remove(removed.id)).toBe(false);
    expect(await admin.list()).toEqual([kept]);
    expect(await store.webhookBacklog()).toBe(1);
    await store.recordAttempt(attempt(inFlight.deliveryId, removed.id, now, "pending"));
    expect(await store.webhookBacklog()).toBe(1);
    expect(await admin.attempts(inFlight.deliveryId)).toHaveLength(1);
    expect(await admin.replay(inFlight.deliveryId)).toBe("subscriber_removed");
    expect(await store.webhookBacklog()).toBe(1);
  });
});
