import { eventually } from "@plantstore/test-support/eventually";
import type { Client } from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { TAKE_POSITIONS } from "../../../src/storage/postgres/change-positions.ts";
import { PostgresStore } from "../../../src/storage/postgres/postgres-store.ts";
import { createTestDatabase, postgresClient, type TestDatabase } from "../../support/test-database.ts";

/**
 * What only PostgreSQL's change log does: positions in commit order although several transactions
 * (of several instances) write at once, and wake-ups from every instance by LISTEN/NOTIFY. The
 * rest of the log's contract is in ../change-log.test.ts, on both backends.
 */
/** A change recorded as the stores record theirs: its position taken under the change lock, last. */
const RECORD_CHANGE = `
  INSERT INTO plant_changes (position, kind, plant_id, data, tag, previous_tag, at)
  SELECT nextval('plant_changes_position'), $1, $2, $3, $4, $5, $6 FROM (SELECT ${TAKE_POSITIONS}) AS positioned
  RETURNING position`;

let database: TestDatabase;
const stores: PostgresStore[] = [];
const clients: Client[] = [];

async function open(): Promise<PostgresStore> {
  const store = await PostgresStore.open({
    url: database.url,
    poolSize: 4,
    connectTimeoutMs: 2_000,
    queryTimeoutMs: 5_000,
  });
  stores.push(store);
  return store;
}

async function connect(): Promise<Client> {
  const client = postgresClient(database.url);
  await client.connect();
  clients.push(client);
  return client;
}

beforeEach(async () => {
  database = await createTestDatabase("postgres");
});

afterEach(async () => {
  for (const client of clients.splice(0)) await client.end();
  for (const store of stores.splice(0)) await store.close();
  await database.dispose();
});

describe("PostgreSQL change positions", () => {
  it("never lets a reader see a position while a lower one may still commit: the first to take one commits last", async () => {
    const store = await open();
    const first = await connect();
    const observer = await connect();
    // The first transaction writes its plant and takes its position as the stores do, then stays open.
    await first.query("BEGIN");
    await first.query("INSERT INTO plants (id, name) VALUES (1, 'first')");
    const [{ position: taken }] = (
      await first.query<{ position: bigint }>(RECORD_CHANGE, [
        "plant.created",
        1n,
        '{"id":1,"name":"first"}',
        null,
        null,
        Date.now(),
      ])
    ).rows as [{ position: bigint }];

    // The second (a batch of the store, on its own connection) writes its plant and comes to its
    // position: it must not get one above `taken`, commit and be read while `taken` may still commit.
    let secondDone = false;
    const second = store.create({ id: 2n, name: "second" }).finally(() => (secondDone = true));
    await eventually(
      async () =>
        secondDone ||
        (
          await observer.query<{ waiting: boolean }>(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted) AS waiting",
          )
        ).rows[0]!.waiting,
      { what: "the second transaction at its position, or done" },
    );
    expect(await store.changesAfter(0n, 10)).toEqual([]);
    expect(await store.head()).toBe(0n);

    await first.query("COMMIT");
    expect(await second).toBe("created");
    const changes = await store.changesAfter(0n, 10);
    expect(changes.map((c) => c.plantId)).toEqual([1n, 2n]);
    expect(changes[0]!.position).toBe(taken);
    expect(changes[1]!.position > taken).toBe(true);
  });

  it("takes positions only once its rows are written: a batch waiting on another's row holds up no other writer", async () => {
    const waiting = await open();
    const other = await open();
    const holder = await connect();
    const observer = await connect();
    await holder.query("BEGIN");
    await holder.query("INSERT INTO plants (id, name) VALUES (2, 'theirs, not yet committed')");
    // One batch: plant 1 goes in, plant 2 waits for the holder's transaction to end.
    const batch = Promise.all([waiting.create({ id: 1n, name: "ours" }), waiting.create({ id: 2n, name: "ours" })]);
    await eventually(
      async () =>
        (
          await observer.query<{ n: bigint }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'transactionid'",
          )
        ).rows[0]!.n > 0n,
      { what: "the batch waiting on the uncommitted plant 2" },
    );
    // Had the waiting batch taken the change lock already, this would wait for it (and time out).
    expect(await other.create({ id: 3n, name: "elsewhere" })).toBe("created");
    expect((await other.changesAfter(0n, 10)).map((c) => c.plantId)).toEqual([3n]);
    await holder.query("ROLLBACK");
    expect(await batch).toEqual(["created", "created"]);
    expect((await other.changesAfter(0n, 10)).map((c) => c.plantId)).toEqual([3n, 1n, 2n]);
  });

  it("leaves no position to a transaction that rolls back, and the next one goes above it", async () => {
    const store = await open();
    const failing = await connect();
    await failing.query("BEGIN");
    await failing.query("INSERT INTO plants (id, name) VALUES (1, 'rolled back')");
    const [{ position: lost }] = (
      await failing.query<{ position: bigint }>(RECORD_CHANGE, ["plant.created", 1n, "{}", null, null, Date.now()])
    ).rows as [{ position: bigint }];
    const created = store.create({ id: 2n, name: "kept" });
    await failing.query("ROLLBACK");
    expect(await created).toBe("created");
    const changes = await store.changesAfter(0n, 10);
    expect(changes.map((c) => c.plantId)).toEqual([2n]);
    expect(changes[0]!.position > lost).toBe(true);
  });
});

describe("PostgreSQL change wake-ups (LISTEN/NOTIFY)", () => {
  const listenerPids = async (observer: Client) =>
    (
      await observer.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'plantstore-listen'",
      )
    ).rows.map((r) => r.pid);

  it("wake a listener of one instance on a change committed through another, again after its connection is cut", async () => {
    const watching = await open();
    const writing = await open();
    const observer = await connect();
    let wakes = 0;
    const unsubscribe = watching.onChange(() => wakes++);
    // The first wake-up comes when LISTEN is in place (a change may have committed before it was).
    await eventually(() => wakes > 0, { what: "the wake-up of the first connection" });
    const [pid] = await listenerPids(observer);

    let seen = wakes;
    await writing.create({ id: 1n, name: "elsewhere" });
    await eventually(() => wakes > seen, { what: "a wake-up for a creation through the other instance" });
    seen = wakes;
    await writing.delete(1n);
    await eventually(() => wakes > seen, { what: "a wake-up for a deletion through the other instance" });

    const beforeCut = wakes;
    await observer.query("SELECT pg_terminate_backend($1)", [pid]);
    // The new connection wakes its listeners once it LISTENs, for what it may have missed.
    await eventually(() => wakes > beforeCut, { what: "the wake-up of a new listening connection" });
    expect(await listenerPids(observer)).not.toContain(pid);
    seen = wakes;
    await writing.create({ id: 2n, name: "after the cut" });
    await eventually(() => wakes > seen, { what: "a wake-up after the reconnection" });

    unsubscribe();
    await eventually(async () => (await listenerPids(observer)).length === 0, {
      what: "the listening connection closed with its last listener",
    });
  });
});
