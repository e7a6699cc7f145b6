import { describe, expect, it } from "vitest";

import { expectedETag, unkeyedETag } from "../support/expected-etag.ts";
import { createTestDatabase, TEST_BACKEND } from "../support/test-database.ts";
import { backend, batches, database, open, storeContractHooks } from "./store-contract-fixture.ts";

/**
 * What every storage backend does alike, run against the backend of this pass of the suite
 * (PLANTSTORE_TEST_BACKEND: the `server (sqlite)` project runs it on SQLite, `server (postgres)`
 * on PostgreSQL): plants, group commit, two stores on one database, conditional changes, ETags. The rest
 * of the suite (migrations, tokens, webhooks) is store-contract-admin.test.ts; both share
 * store-contract-fixture.ts. What one backend alone does is tested beside it, in
 * sqlite/sqlite-store.test.ts and postgres/postgres-store.test.ts. Rows are read back on a
 * connection of the test's own, so what it sees is what is committed. This suite is why the
 * HTTP-level suites run on SQLite only (test/README.md): whatever they rely on the store for is
 * pinned here, on both backends.
 */
storeContractHooks();

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
    await database.exec(backend.rollBackBatchesCreating("rollback"));
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
    await database.exec(
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
    await database.exec(
      "INSERT INTO webhook_subscribers (id, url, secret, created_at) VALUES ('whk_t', 'http://127.0.0.1:9/', 'whsec_x', 0)",
    );
    expect(
      await Promise.all([store.create({ id: 2n, name: "after" }), store.create({ id: 3n, name: "after" })]),
    ).toEqual(["created", "created"]);
    expect(await store.webhookBacklog()).toBe(2);
    await database.exec("UPDATE webhook_subscribers SET active = false");
    expect(await store.create({ id: 4n, name: "unsubscribed" })).toBe("created");
    expect(await store.webhookBacklog()).toBe(2);
  });

  it("hand each due webhook delivery to exactly one claimer (a lease; FOR UPDATE SKIP LOCKED on PostgreSQL)", async () => {
    const seeder = await open();
    await database.exec(
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
    expect(await store.update(MAX, { name: "Big fern" }, [STALE, await store.etag(fern)])).toEqual({
      outcome: "written",
      plant: { id: MAX, name: "Big fern", tag: "green" },
      created: false,
    });
    expect(await database.row(MAX)).toEqual({ id: MAX, name: "Big fern", tag: "green" });
    const renamed = { id: MAX, name: "Big fern", tag: "green" };
    expect(await store.update(MAX, { tag: null }, [await store.etag(renamed)])).toEqual({
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
    expect(await store.update(2n, { name: "Moss", tag: "t" }, [await store.etag(moss)])).toEqual({
      outcome: "written",
      plant: moss,
      created: false,
    });
    expect(await store.update(2n, {}, [await store.etag(moss)])).toEqual({
      outcome: "written",
      plant: moss,
      created: false,
    });
  });

  it("replace stores the whole plant when If-Match holds (an absent tag removes it), and fails on a free id", async () => {
    const store = await open();
    const sage = { id: -(2n ** 63n), name: "Sage", tag: "herb" };
    await store.create(sage);
    expect(await store.replace({ id: sage.id, name: "Thyme" }, { ifMatch: [await store.etag(sage)] })).toEqual({
      outcome: "written",
      plant: { id: sage.id, name: "Thyme" },
      created: false,
    });
    expect(await database.row(sage.id)).toEqual({ id: sage.id, name: "Thyme", tag: null });
    expect(await store.replace({ id: sage.id, name: "Mint" }, { ifMatch: [await store.etag(sage)] })).toEqual({
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
    expect(await store.delete(4n, [await store.etag(oak)])).toBe("deleted");
    expect(await database.row(4n)).toBeUndefined();
    expect(await store.delete(4n, [await store.etag(oak)])).toBe("not_found");
    expect(await store.delete(4n, "*")).toBe("not_found");
  });

  it("update, replace and delete with If-None-Match write nothing when it matches the stored plant (weak comparison, * any)", async () => {
    const store = await open();
    const fig = { id: 6n, name: "Fig", tag: "tree" };
    await store.create(fig);
    const etag = await store.etag(fig);
    const failed = { outcome: "precondition_failed", current: fig };
    for (const ifNoneMatch of ["*", [etag], [STALE, `W/${etag}`]] as const) {
      expect(await store.update(6n, { name: "x" }, "*", ifNoneMatch)).toEqual(failed);
      expect(await store.replace({ id: 6n, name: "x" }, { ifMatch: [etag], ifNoneMatch })).toEqual(failed);
      expect(await store.delete(6n, undefined, ifNoneMatch)).toEqual(failed);
      expect(await store.delete(6n, [etag], ifNoneMatch)).toEqual(failed);
    }
    expect(await database.row(6n)).toEqual({ id: 6n, name: "Fig", tag: "tree" });
    // If-Match is still checked beside it: a stale one fails whatever If-None-Match says.
    expect(await store.update(6n, { name: "x" }, [STALE], [STALE])).toEqual(failed);
    // A free id: If-None-Match holds, so update and delete are not_found, and replace fails only its If-Match.
    expect(await store.update(60n, { name: "x" }, "*", "*")).toEqual({ outcome: "not_found" });
    expect(await store.delete(60n, undefined, "*")).toBe("not_found");
    expect(await store.replace({ id: 60n, name: "x" }, { ifMatch: "*", ifNoneMatch: "*" })).toEqual({
      outcome: "precondition_failed",
      current: undefined,
    });
    expect(await database.row(60n)).toBeUndefined();
  });

  it("update, replace and delete with If-None-Match naming other tags write as If-Match alone would", async () => {
    const store = await open();
    const lime = { id: 10n, name: "Lime" };
    await store.create(lime);
    const patched = { id: 10n, name: "Lemon" };
    expect(await store.update(10n, { name: "Lemon" }, [await store.etag(lime)], [STALE])).toEqual({
      outcome: "written",
      plant: patched,
      created: false,
    });
    expect(
      await store.replace({ id: 10n, name: "Orange" }, { ifMatch: "*", ifNoneMatch: [await store.etag(lime)] }),
    ).toEqual({
      outcome: "written",
      plant: { id: 10n, name: "Orange" },
      created: false,
    });
    expect(await store.delete(10n, undefined, [await store.etag(patched)])).toBe("deleted");
    expect(await database.row(10n)).toBeUndefined();
  });

  it("of 50 updates to one content under If-None-Match naming that content's tag, from two stores, exactly one is written", async () => {
    const [a, b] = [await open(), await open()];
    await a.create({ id: 11n, name: "before" });
    // Each writes "after" only if the plant is not "after" already: checked and written in one step, one wins.
    const after = [await a.etag({ id: 11n, name: "after" })];
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? a : b).update(11n, { name: "after" }, "*", after)),
    );
    expect(outcomes.filter((o) => o.outcome === "written")).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === "precondition_failed")).toHaveLength(49);
    expect(await database.row(11n)).toEqual({ id: 11n, name: "after", tag: null });
  });

  it.each([
    ["one store", 1],
    ["two stores (two processes) on one database", 2],
  ])("of 50 updates carrying one ETag, from %s, exactly one is written and it is what is stored", async (_, count) => {
    const stores = await Promise.all(Array.from({ length: count }, () => open()));
    const original = { id: 7n, name: "Basil", tag: "herb" };
    await stores[0]!.create(original);
    const etag = await stores[0]!.etag(original);
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

describe(`ETags (${TEST_BACKEND})`, () => {
  const FERN = { id: 2n ** 63n - 1n, name: "Fern", tag: "green" };

  it("are an HMAC-SHA256 of the plant's JSON under the one secret the database keeps, not its plain digest", async () => {
    const store = await open();
    expect(await store.etag(FERN)).toBe(await expectedETag(database, FERN));
    expect(await store.etag(FERN)).not.toBe(unkeyedETag(FERN));
    expect(await store.etag({ id: FERN.id, name: "Fern" })).toBe(
      await expectedETag(database, { id: FERN.id, name: "Fern" }),
    );
    const secrets = await database.rows<{ name: string; secret: Uint8Array }>({
      sqlite: "SELECT name, secret FROM store_secrets",
      postgres: "SELECT name, secret FROM store_secrets",
    });
    expect(secrets.map(({ name, secret }) => [name, secret.length])).toEqual([["etag", 32]]);
  });

  it("agree between stores opened together on a new database, and with one opened on it later (a restart)", async () => {
    const together = await Promise.all(Array.from({ length: 4 }, () => open()));
    const etags = await Promise.all(together.map((store) => store.etag(FERN)));
    expect(new Set(etags).size).toBe(1);
    expect(await (await open()).etag(FERN)).toBe(etags[0]);
  });

  it("differ on another database: each keeps a secret of its own", async () => {
    const store = await open();
    await using other = await createTestDatabase();
    const elsewhere = await backend.open(other, {});
    try {
      expect(await elsewhere.etag(FERN)).not.toBe(await store.etag(FERN));
    } finally {
      await elsewhere.close();
    }
  });
});
