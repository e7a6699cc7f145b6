import { createServer } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase, postgresClient, type TestDatabase } from "../../../test/test-database.ts";
import { StoreUnavailableError } from "../store-errors.ts";
import { migratePostgres, postgresMigrations } from "./migrations.ts";
import { PostgresStore, type PostgresStoreOptions } from "./postgres-store.ts";

let database: TestDatabase;
const stores: PostgresStore[] = [];
let batches: number[];

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
  batches = [];
});
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  await database.dispose();
});

describe("PostgresStore group commit", () => {
  it("commits creations that arrive together in one statement", async () => {
    const store = await open({ onCommit: (size) => batches.push(size) });
    const outcomes = await Promise.all(Array.from({ length: 100 }, (_, i) => store.create({ id: BigInt(i), name: `p${i}` })));
    expect(outcomes).toEqual(Array(100).fill("created"));
    expect(batches).toEqual([100]);
    expect(await database.count()).toBe(100);
  });

  it("decides conflicts and replays per request inside one batch, the first request winning", async () => {
    const store = await open({ onCommit: (size) => batches.push(size) });
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
        store.create({ id: BigInt(1000 + i), name: "x" }).then(async () => (await database.row(BigInt(1000 + i))) !== undefined),
      ),
    );
    expect(seen).toEqual(Array(20).fill(true));
  });

  it("splits a burst larger than the batch limit into several statements", async () => {
    const store = await open({ maxBatchSize: 10, maxBatchesInFlight: 1, onCommit: (size) => batches.push(size) });
    await Promise.all(Array.from({ length: 25 }, (_, i) => store.create({ id: BigInt(i), name: "x" })));
    expect(batches).toEqual([10, 10, 5]);
  });

  it("keeps int8 exact at both ends of the range", async () => {
    const store = await open();
    for (const id of [-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n]) {
      expect(await store.create({ id, name: `n${id}` })).toBe("created");
      expect(await store.get(id)).toEqual({ id, name: `n${id}` });
    }
    expect((await store.list({ limit: 10 })).map((p) => p.id)).toEqual([-(2n ** 63n), 2n ** 53n + 1n, 2n ** 63n - 1n]);
  });

  it("fails every request of a batch whose statement fails, stores none of them, and keeps serving", async () => {
    const store = await open({ onCommit: (size) => batches.push(size) });
    const admin = postgresClient(database.url);
    await admin.connect();
    try {
      await admin.query(`
        CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.name = 'boom' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$;
        CREATE TRIGGER refuse_boom BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION refuse_boom();`);
    } finally {
      await admin.end();
    }
    const results = await Promise.allSettled([
      store.create({ id: 20n, name: "ok-1" }),
      store.create({ id: 21n, name: "boom" }),
      store.create({ id: 22n, name: "ok-2" }),
    ]);
    // One statement carries the batch, so it commits whole or not at all: no caller gets a 200.
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(batches).toEqual([]);
    expect(await database.count()).toBe(0);
    await expect(store.create({ id: 23n, name: "after" })).resolves.toBe("created");
    expect(await database.row(23n)).toEqual({ id: 23n, name: "after", tag: null });
  });

  it("commits what is queued before close() finishes", async () => {
    const store = await PostgresStore.open(settings());
    const pending = store.create({ id: 99n, name: "late" });
    await store.close();
    await expect(pending).resolves.toBe("created");
    expect(await database.row(99n)).toBeDefined();
  });
});

describe("two PostgresStores (two processes' pools) racing on the same ids", () => {
  it("create every id exactly once: one creator, the other a conflict or a replay as its content says", async () => {
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
    const versions = await database.rows<{ version: number }>({ sqlite: "", postgres: "SELECT version FROM schema_migrations ORDER BY version" });
    // Every migration exactly once, in order (the list grows: 4 added issued API tokens).
    expect(versions.map((v) => v.version)).toEqual(postgresMigrations.map((m) => m.version));
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

describe("webhook claims shared by several instances", () => {
  it("hand each due delivery to exactly one claimer (FOR UPDATE SKIP LOCKED and a lease)", async () => {
    const seeder = await open();
    const client = postgresClient(database.url);
    await client.connect();
    await client.query("INSERT INTO webhook_subscribers (id, url, secret, created_at) VALUES ('whk_t', 'http://127.0.0.1:9/', 'whsec_x', 0)");
    await client.end();
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
