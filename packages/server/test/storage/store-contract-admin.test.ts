import { describe, expect, it } from "vitest";

import { newOpaqueToken } from "../../src/auth/opaque-token.ts";
import { migrations } from "../../src/storage/migrations.ts";
import { TokenNameTakenError } from "../../src/storage/token-store.ts";
import type { WebhookQueue } from "../../src/storage/webhook-queue.ts";
import { TEST_BACKEND } from "../support/test-database.ts";
import { backend, database, open, storeContractHooks, tokenStore, webhookAdmin } from "./store-contract-fixture.ts";

/**
 * The store contract suite, continued (store-contract.test.ts has the plants): migrations, issued
 * tokens, webhook event types and deliveries, alike on every backend. Both files share
 * store-contract-fixture.ts.
 */
storeContractHooks();

describe(`migrations (${TEST_BACKEND})`, () => {
  it("report those applied against those this build knows, and fewer when the database is behind", async () => {
    const store = await open();
    const status = await store.migrations!();
    expect(status.applied).toBe(status.known);
    expect(status.known).toBeGreaterThanOrEqual(3);
    // As if the database were older than this build (another process restored it, say): /readyz answers 503.
    await database.exec("DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)");
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
    const renamed = await store.update(MAX, { name: "Fern", tag: null }, [await store.etag(fern)]);
    expect(renamed.outcome).toBe("written");
    const plant = { id: MAX, name: "Fern" };
    expect(await store.update(MAX, { name: "Fern" }, [await store.etag(plant)])).toMatchObject({ outcome: "written" });
    expect(await store.update(MAX, { name: "Lost" }, [await store.etag(fern)])).toMatchObject({
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
    expect(await store.delete(MAX, [await store.etag(fern)])).toMatchObject({ outcome: "precondition_failed" });
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
    await database.exec(`UPDATE webhook_subscribers SET active = false WHERE id = '${off.id}'`);
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.create({ id: BigInt(i), name: "x" })));
    expect(await store.update(1n, { name: "y" }, "*")).toMatchObject({ outcome: "written" });
    expect(await store.webhookBacklog()).toBe(0);
    expect(await store.delete(1n)).toBe("deleted");
    expect(await store.webhookBacklog()).toBe(1);
  });

  it("keep the subscribers of a database migrated from before event types on the bare new-plant payload", async () => {
    await backend.migrateTo(database, 5);
    await database.exec(
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
        // A subscriber added without event types gets the bare new-plant payload.
        event: null,
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
