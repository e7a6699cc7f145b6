import { afterEach, beforeEach, describe, expect, it } from "vitest";

import type { Change, ChangeLog } from "../../src/changes/change-log.ts";
import type { ChangeRetention } from "../../src/storage/change-rows.ts";
import type { PlantStore } from "../../src/storage/plant-store.ts";
import { PostgresStore } from "../../src/storage/postgres/postgres-store.ts";
import { SqliteStore } from "../../src/storage/sqlite/sqlite-store.ts";
import { createTestDatabase, TEST_BACKEND, type TestBackend, type TestDatabase } from "../support/test-database.ts";

/**
 * The change log (src/changes/change-log.ts) on the backend of this pass, called directly on the
 * store: what GET /plants/events and the webhooks rest on. Order, one change per write with the
 * webhook's data, nothing from a failed transaction, head and oldest, retention, restarts. What
 * only PostgreSQL does (commits out of order, NOTIFY across instances) is in
 * postgres/change-log.test.ts.
 */
type Store = PlantStore & ChangeLog & ChangeRetention;

const backends: Record<TestBackend, { open(database: TestDatabase): Promise<Store> }> = {
  sqlite: { open: async (database) => SqliteStore.open({ path: database.name }) },
  postgres: {
    open: (database) =>
      PostgresStore.open({ url: database.url, poolSize: 4, connectTimeoutMs: 2_000, queryTimeoutMs: 5_000 }),
  },
};

const backend = backends[TEST_BACKEND];
let database: TestDatabase;
const stores: Store[] = [];

async function open(): Promise<Store> {
  const store = await backend.open(database);
  stores.push(store);
  return store;
}

/** Closes a store now (as a stopped process would), not again after the test. */
async function closeNow(store: Store): Promise<void> {
  stores.splice(stores.indexOf(store), 1);
  await store.close();
}

const subscribe = () =>
  database.exec(
    "INSERT INTO webhook_subscribers (id, url, secret, created_at) VALUES ('whk_t', 'http://127.0.0.1:9/', 'whsec_x', 0)",
  );

const positions = (changes: Change[]) => changes.map((c) => c.position);

function expectIncreasing(values: bigint[]): void {
  for (let i = 1; i < values.length; i++) expect(values[i]! > values[i - 1]!).toBe(true);
}

beforeEach(async () => {
  database = await createTestDatabase();
});

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  await database.dispose();
});

describe(`the change log (${TEST_BACKEND})`, () => {
  it("is empty at first: head 0, oldest 1, nothing after 0", async () => {
    const store = await open();
    expect(await store.head()).toBe(0n);
    expect(await store.oldest()).toBe(1n);
    expect(await store.changesAfter(0n, 10)).toEqual([]);
  });

  it("records each creation and deletion once, in order, and nothing for a replay, a conflict or a missing id", async () => {
    const store = await open();
    const big = 2n ** 63n - 1n;
    expect(
      await Promise.all([
        store.create({ id: big, name: 'say "hi"', tag: "fern" }),
        store.create({ id: -5n, name: "Moss" }),
        store.create({ id: big, name: 'say "hi"', tag: "fern" }),
        store.create({ id: -5n, name: "Ivy" }),
      ]),
    ).toEqual(["created", "created", "replayed", "conflict"]);
    expect(await store.delete(big)).toBe("deleted");
    expect(await store.delete(big)).toBe("not_found");
    expect(await store.delete(7n)).toBe("not_found");

    const changes = await store.changesAfter(0n, 100);
    expect(changes.map(({ position: _, at: __, ...rest }) => rest)).toEqual([
      {
        kind: "plant.created",
        plantId: big,
        data: `{"id":${big},"name":"say \\"hi\\"","tag":"fern"}`,
        tag: "fern",
        previousTag: null,
      },
      { kind: "plant.created", plantId: -5n, data: '{"id":-5,"name":"Moss"}', tag: null, previousTag: null },
      { kind: "plant.deleted", plantId: big, data: `{"id":${big}}`, tag: null, previousTag: "fern" },
    ]);
    expectIncreasing(positions(changes));
    for (const change of changes) expect(Math.abs(change.at.getTime() - Date.now())).toBeLessThan(60_000);
    expect(await store.head()).toBe(changes.at(-1)!.position);
    expect(await store.oldest()).toBe(changes[0]!.position);
    // Resuming after any position gives exactly what follows it, `limit` at a time.
    expect(await store.changesAfter(changes[0]!.position, 1)).toEqual([changes[1]]);
    expect(await store.changesAfter(changes[2]!.position, 10)).toEqual([]);
  });

  it("records each update, replace and conditional delete once, with the plant after it and the tag before it", async () => {
    const store = await open();
    expect(await store.create({ id: 1n, name: "Fern", tag: "green" })).toBe("created");
    const head = await store.head();
    expect(await store.update(1n, { name: "Big fern" }, "*")).toMatchObject({ outcome: "written" });
    expect(
      await store.update(1n, { tag: null }, [await store.etag({ id: 1n, name: "Big fern", tag: "green" })]),
    ).toMatchObject({ outcome: "written" });
    // Nothing written, nothing recorded: a change that changes nothing, a stale tag, a missing plant.
    expect(await store.update(1n, { name: "Big fern" }, "*")).toMatchObject({ outcome: "written" });
    expect(await store.update(1n, { name: "Moss" }, ['"stale"'])).toMatchObject({ outcome: "precondition_failed" });
    expect(await store.update(2n, { name: "Moss" }, "*")).toEqual({ outcome: "not_found" });
    expect(await store.replace({ id: 1n, name: "Fern", tag: "blue" }, { ifMatch: "*" })).toMatchObject({
      outcome: "written",
      created: false,
    });
    expect(await store.replace({ id: 3n, name: "Ivy" }, { ifNoneMatch: "*" })).toMatchObject({ created: true });
    expect(await store.replace({ id: 3n, name: "Ivy" }, { ifNoneMatch: "*" })).toMatchObject({
      outcome: "precondition_failed",
    });
    expect(await store.replace({ id: 4n, name: "Ivy" }, { ifMatch: "*" })).toMatchObject({
      outcome: "precondition_failed",
    });
    expect(await store.delete(1n, ['"stale"'])).toMatchObject({ outcome: "precondition_failed" });
    expect(await store.delete(1n, [await store.etag({ id: 1n, name: "Fern", tag: "blue" })])).toBe("deleted");

    const changes = await store.changesAfter(head, 100);
    expect(changes.map((c) => [c.kind, c.plantId, c.data, c.tag, c.previousTag])).toEqual([
      ["plant.updated", 1n, '{"id":1,"name":"Big fern","tag":"green"}', "green", "green"],
      ["plant.updated", 1n, '{"id":1,"name":"Big fern"}', null, "green"],
      ["plant.updated", 1n, '{"id":1,"name":"Fern","tag":"blue"}', "blue", null],
      ["plant.created", 3n, '{"id":3,"name":"Ivy"}', null, null],
      ["plant.deleted", 1n, '{"id":1}', null, "blue"],
    ]);
    expectIncreasing([head, ...positions(changes)]);
  });

  it("gives each change of every kind the JSON, time and position of its webhook events, bare and enveloped", async () => {
    const store = await open();
    await subscribe(); // a subscriber from before event types: the bare new-plant payload
    await database.exec(
      `INSERT INTO webhook_subscribers (id, url, secret, created_at, events) VALUES ('whk_all', 'http://127.0.0.1:9/', 'whsec_x', 0, ${
        TEST_BACKEND === "sqlite"
          ? "'plant.created,plant.updated,plant.deleted'"
          : "'{plant.created,plant.updated,plant.deleted}'"
      })`,
    );
    const names = ["tab\tnew\nline", "üñí 🌿", '\\"', "{braces}", "NULL"];
    const plants = names.map((name, i) => ({ id: BigInt(i) * 2n ** 40n, name, ...(i % 2 === 0 ? { tag: name } : {}) }));
    await Promise.all(plants.map((plant) => store.create(plant)));
    const head = await store.head();
    await store.update(plants[0]!.id, { name: "renamed", tag: null }, "*");
    await store.replace({ id: plants[1]!.id, name: "replaced", tag: "new" }, { ifMatch: "*" });
    await store.replace({ id: 7n, name: "put" }, { ifNoneMatch: "*" });
    await store.delete(plants[2]!.id);
    await store.delete(plants[3]!.id, "*");

    const changes = await store.changesAfter(0n, 100);
    expect(changes.map((c) => c.kind)).toEqual([
      ...plants.map(() => "plant.created"),
      "plant.updated",
      "plant.updated",
      "plant.created",
      "plant.deleted",
      "plant.deleted",
    ]);
    expect(changes.slice(plants.length).map((c) => c.position > head)).toEqual(Array(5).fill(true));
    for (const plant of plants) {
      const change = changes.find((c) => c.plantId === plant.id)!;
      expect(JSON.parse(change.data)).toEqual({ ...plant, id: Number(plant.id) });
    }
    const events = await database.rows<{
      type: string | null;
      payload: string;
      created_at: bigint | number;
      change_position: bigint | number | null;
    }>({
      sqlite: "SELECT type, payload, created_at, change_position FROM webhook_events ORDER BY id",
      postgres: "SELECT type, payload, created_at, change_position FROM webhook_events ORDER BY id",
    });
    // Every event comes from one change; every change has its enveloped event, a creation its bare one too.
    type Row = [position: bigint, type: string | null, payload: string, at: number];
    const expected = changes.flatMap((c) => [
      ...(c.kind === "plant.created" ? [[c.position, null, c.data, c.at.getTime()] satisfies Row] : []),
      [
        c.position,
        c.kind,
        `{"type":"${c.kind}","timestamp":"${c.at.toISOString()}","data":${c.data}}`,
        c.at.getTime(),
      ] satisfies Row,
    ]);
    const key = ([position, type]: Row) => `${position}/${type ?? ""}`;
    expect(
      events
        .map((e): Row => [BigInt(e.change_position ?? -1), e.type, e.payload, Number(e.created_at)])
        .sort((a, b) => key(a).localeCompare(key(b))),
    ).toEqual(expected.sort((a, b) => key(a).localeCompare(key(b))));
  });

  it("writes no change for a transaction that fails, and goes on after it", async () => {
    const store = await open();
    expect(await store.create({ id: 1n, name: "before" })).toBe("created");
    const head = await store.head();
    await database.exec(
      TEST_BACKEND === "sqlite"
        ? "CREATE TRIGGER roll_back BEFORE INSERT ON plants WHEN NEW.name = 'rollback' BEGIN SELECT RAISE(ROLLBACK, 'gone'); END"
        : `CREATE FUNCTION roll_back() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN IF NEW.name = 'rollback' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$;
           CREATE TRIGGER roll_back BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION roll_back();`,
    );
    const results = await Promise.allSettled([
      store.create({ id: 2n, name: "ok" }),
      store.create({ id: 3n, name: "rollback" }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(await store.head()).toBe(head);
    expect(await store.changesAfter(head, 10)).toEqual([]);
    // A deletion whose transaction fails leaves no change either.
    await database.exec(
      TEST_BACKEND === "sqlite"
        ? "CREATE TRIGGER keep BEFORE DELETE ON plants BEGIN SELECT RAISE(ROLLBACK, 'kept'); END"
        : `CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'kept'; END $$;
           CREATE TRIGGER keep BEFORE DELETE ON plants FOR EACH ROW EXECUTE FUNCTION keep();`,
    );
    await expect(store.delete(1n)).rejects.toThrow();
    expect(await store.changesAfter(head, 10)).toEqual([]);
    expect(await store.create({ id: 4n, name: "after" })).toBe("created");
    const [after, ...more] = await store.changesAfter(head, 10);
    expect(more).toEqual([]);
    expect(after).toMatchObject({ kind: "plant.created", plantId: 4n });
    expect(after!.position > head).toBe(true);
  });

  it("gives concurrent writers of two stores (two instances) one increasing sequence, one change per plant created", async () => {
    const a = await open();
    const b = await open();
    const ids = Array.from({ length: 300 }, (_, i) => BigInt(i));
    const outcomes = await Promise.all(
      ids.flatMap((id) => [
        a.create({ id, name: "a" }).then((outcome) => ({ id, outcome })),
        b.create({ id, name: "b" }).then((outcome) => ({ id, outcome })),
      ]),
    );
    await Promise.all(ids.filter((id) => id % 3n === 0n).map((id) => (id % 2n === 0n ? a : b).delete(id)));
    const changes = await a.changesAfter(0n, 10_000);
    expectIncreasing(positions(changes));
    expect(
      changes
        .filter((c) => c.kind === "plant.created")
        .map((c) => c.plantId)
        .sort((x, y) => Number(x - y)),
    ).toEqual(
      outcomes
        .filter((o) => o.outcome === "created")
        .map((o) => o.id)
        .sort((x, y) => Number(x - y)),
    );
    expect(changes.filter((c) => c.kind === "plant.deleted")).toHaveLength(100);
    expect(await b.changesAfter(0n, 10_000)).toEqual(changes);
  });

  it("records one change per update that wins a race, in the order they committed, ending with the plant as stored", async () => {
    const a = await open();
    const b = await open();
    expect(await a.create({ id: 1n, name: "start" })).toBe("created");
    const head = await a.head();
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).update(1n, { name: `n${i}` }, "*")),
    );
    expect(outcomes.every((o) => o.outcome === "written")).toBe(true);
    const changes = await a.changesAfter(head, 100);
    expect(changes).toHaveLength(40);
    expect(changes.every((c) => c.kind === "plant.updated")).toBe(true);
    expect(new Set(changes.map((c) => c.data)).size).toBe(40);
    expect(JSON.parse(changes.at(-1)!.data)).toEqual({ id: 1, name: (await a.get(1n))!.name });
  });

  it("prunes changes older than the retention, a chunk at a time, always keeping the newest", async () => {
    const store = await open();
    for (let i = 0; i < 5; i++) expect(await store.create({ id: BigInt(i), name: "p" })).toBe("created");
    const all = await store.changesAfter(0n, 10);
    expect(await store.pruneChanges(all[0]!.at.getTime(), 10)).toBe(0); // none older than the first
    expect(await store.pruneChanges(Date.now() + 60_000, 3)).toBe(3);
    expect(await store.oldest()).toBe(all[3]!.position);
    expect(await store.pruneChanges(Date.now() + 60_000, 3)).toBe(1);
    expect(await store.pruneChanges(Date.now() + 60_000, 3)).toBe(0);
    expect(await store.changesAfter(0n, 10)).toEqual([all[4]]);
    expect(await store.oldest()).toBe(all[4]!.position);
    expect(await store.head()).toBe(all[4]!.position);
    // The next position is above every one ever given, the pruned ones included.
    expect(await store.create({ id: 100n, name: "next" })).toBe("created");
    const [kept, next] = await store.changesAfter(0n, 10);
    expect(kept).toEqual(all[4]);
    expect(next!.position > all[4]!.position).toBe(true);
  });

  it("keeps every position across a restart, and goes on above them", async () => {
    const first = await open();
    for (let i = 0; i < 3; i++) await first.create({ id: BigInt(i), name: "p" });
    await first.delete(0n);
    const before = await first.changesAfter(0n, 10);
    await first.pruneChanges(Date.now() + 60_000, 10);
    await closeNow(first);

    const second = await open();
    expect(await second.head()).toBe(before.at(-1)!.position);
    expect(await second.oldest()).toBe(before.at(-1)!.position);
    await second.create({ id: 10n, name: "after the restart" });
    const after = await second.changesAfter(before.at(-1)!.position, 10);
    expect(after).toHaveLength(1);
    expect(after[0]!.position > before.at(-1)!.position).toBe(true);
  });

  it("wakes onChange listeners after a commit that wrote changes, until unsubscribed", async () => {
    const store = await open();
    let wakes = 0;
    let woken: () => void = () => undefined;
    const unsubscribe = store.onChange(() => {
      wakes++;
      woken();
    });
    const next = () => new Promise<void>((resolve) => (woken = resolve));
    let waiting = next();
    await store.create({ id: 1n, name: "p" });
    await waiting;
    waiting = next();
    await store.delete(1n);
    await waiting;
    unsubscribe();
    const seen = wakes;
    await store.create({ id: 2n, name: "q" });
    await store.delete(2n);
    expect(wakes).toBe(seen);
  });
});
