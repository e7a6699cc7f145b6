import { Agent } from "node:http";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import type { Config } from "../../src/config.ts";
import { openWebhookAdmin } from "../../src/storage/open-store.ts";
import { closeIdleClientConnections } from "../support/client-connections.ts";
import { openEventStream, positions, type ReceivedEvent } from "../support/event-stream.ts";
import { expectErrorShape, rawRequest, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { postPlant, startServerProcess } from "../support/processes.ts";
import { SkippableClock } from "../support/skippable-clock.ts";
import { createTestDatabase } from "../support/test-database.ts";
import { issueToken, revokeToken } from "../support/token-helpers.ts";

const SECRET = `whsec_${Buffer.alloc(32, 3).toString("base64")}`;

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(overrides: Partial<Config> = {}, clock?: SkippableClock): Promise<TestServer> {
  const started = await startTestServer(overrides, { clock });
  cleanups.push(() => started.close());
  return started;
}

function events(overrides: Partial<Config["events"]>): Pick<Config, "events"> {
  return {
    events: {
      heartbeatMs: 15_000,
      bufferLimitBytes: 262_144,
      authCheckMs: 1_000,
      pollMs: 1_000,
      maxPerToken: 32,
      maxPerAddress: 256,
      connectionShare: 80,
      ...overrides,
    },
  };
}

async function stream(url: string, options: Parameters<typeof openEventStream>[1]) {
  const opened = await openEventStream(url, options);
  cleanups.push(() => opened.close());
  return opened;
}

/** Creates plants over HTTP, `concurrency` at a time, each answered 200. */
async function createPlants(
  url: string,
  plants: ReadonlyArray<{ id: number; name: string; tag?: string }>,
  concurrency = 16,
): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  try {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < plants.length) {
          const plant = plants[next++]!;
          const answer = await postPlant(agent, url, TOKEN, JSON.stringify(plant));
          if (answer.status !== 200) throw new Error(`creating ${plant.id} answered ${answer.status}: ${answer.text}`);
        }
      }),
    );
  } finally {
    agent.destroy();
  }
}

const named = (from: number, count: number, tag?: string) =>
  Array.from({ length: count }, (_, i) => ({ id: from + i, name: `plant ${from + i}`, ...(tag ? { tag } : {}) }));

function expectStrictlyIncreasing(received: readonly ReceivedEvent[]): void {
  const ids = received.map((event) => BigInt(event.id));
  for (let i = 1; i < ids.length; i++) {
    if (ids[i]! <= ids[i - 1]!) throw new Error(`event ${i} has id ${ids[i]} after ${ids[i - 1]}`);
  }
}

/** The webhook payload of each change, by position, as the outbox holds it. */
async function webhookPayloads(target: TestServer): Promise<Map<string, string>> {
  const sql = "SELECT change_position, payload FROM webhook_events";
  const rows = await target.database.rows<{ change_position: bigint; payload: string }>({ sqlite: sql, postgres: sql });
  return new Map(rows.map((row) => [String(row.change_position), row.payload]));
}

describe("GET /plants/events", () => {
  it("starts with the retry hint as a text/event-stream, then sends each new plant as plant.created", async () => {
    const target = await server();
    const feed = await stream(target.url, { token: TOKEN });
    expect(feed.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    expect(feed.headers["cache-control"]).toBe("no-store");
    await eventually(() => feed.retries.length === 1, { what: "the retry hint" });
    expect(feed.retries).toEqual([2000]);
    expect((await target.createRaw('{"id":9007199254740993,"name":"Big","tag":"x"}')).status).toBe(200);
    await eventually(() => feed.events.length === 1, { what: "one event" });
    expect(feed.events[0]).toMatchObject({
      event: "plant.created",
      data: '{"id":9007199254740993,"name":"Big","tag":"x"}',
    });
    expect(feed.text().startsWith("retry: 2000\n\n")).toBe(true);
  });

  it("opens with the position it starts from, so a client that drops before any event resumes from there", async () => {
    const target = await server();
    await createPlants(target.url, named(1, 3));
    const first = await stream(target.url, { token: TOKEN });
    await eventually(() => first.lastEventId() !== "", { what: "the opening position" });
    const opened = first.lastEventId();
    expect(first.events).toEqual([]);
    first.close();
    // Made while no stream was open: the resumed one still gets them.
    await createPlants(target.url, named(4, 2));
    const resumed = await stream(target.url, { token: TOKEN, lastEventId: opened });
    await eventually(() => resumed.events.length === 2, { what: () => `2 events (got ${resumed.events.length})` });
    expect(resumed.events.map((event) => event.data)).toEqual([
      '{"id":4,"name":"plant 4"}',
      '{"id":5,"name":"plant 5"}',
    ]);
  });

  it("moves a filtered stream's position past the changes it does not show", async () => {
    const target = await server();
    const indoor = await stream(target.url, { token: TOKEN, query: "tag=indoor" });
    const all = await stream(target.url, { token: TOKEN });
    await createPlants(target.url, named(1, 3, "outdoor"), 1);
    await eventually(() => all.events.length === 3, { what: "3 changes" });
    await eventually(() => indoor.lastEventId() === all.events[2]!.id, {
      what: () => `the filtered stream at ${all.events[2]!.id} (at ${indoor.lastEventId()})`,
    });
    expect(indoor.events).toEqual([]);
  });

  it("resumes with Last-Event-ID: exactly the next 1,000 events, in order, each with its webhook's data", async () => {
    const target = await server();
    const admin = await openWebhookAdmin(target.database.url);
    // Webhook events are written only while someone subscribes; its deliveries fail (a private address), unread.
    await admin.add("http://127.0.0.1:9/hook", SECRET);
    await admin.close();

    const first = await stream(target.url, { token: TOKEN });
    await createPlants(target.url, named(1, 5));
    await eventually(() => first.events.length === 5, { what: () => `5 events (got ${first.events.length})` });
    first.close();
    const last = first.events.at(-1)!.id;

    await createPlants(target.url, named(100, 1_000));
    const resumed = await stream(target.url, { token: TOKEN, lastEventId: last });
    await eventually(() => resumed.events.length >= 1_000, {
      what: () => `1,000 events after ${last} (got ${resumed.events.length})`,
    });
    await createPlants(target.url, named(5_000, 1));
    await eventually(() => resumed.events.length === 1_001, { what: "the marker plant's event" });

    const burst = resumed.events.slice(0, 1_000);
    expectStrictlyIncreasing([...first.events, ...resumed.events]);
    expect(BigInt(burst[0]!.id)).toBeGreaterThan(BigInt(last));
    expect(new Set(burst.map((event) => event.id)).size).toBe(1_000);
    const ids = burst.map((event) => (JSON.parse(event.data) as { id: number }).id);
    expect(new Set(ids)).toEqual(new Set(named(100, 1_000).map((plant) => plant.id)));
    expect(burst.every((event) => event.event === "plant.created")).toBe(true);
    const payloads = await webhookPayloads(target);
    for (const event of [...first.events, ...burst]) expect(event.data).toBe(payloads.get(event.id));
  });

  it("resumes from ?after= as from Last-Event-ID, the header winning when both are sent", async () => {
    const target = await server();
    const feed = await stream(target.url, { token: TOKEN });
    await createPlants(target.url, named(1, 4), 1);
    await eventually(() => feed.events.length === 4, { what: "4 events" });
    const [a, b, c] = feed.events.map((event) => event.id);
    const byQuery = await stream(target.url, { token: TOKEN, query: `after=${a}` });
    const both = await stream(target.url, { token: TOKEN, query: `after=${a}`, lastEventId: c });
    await eventually(() => byQuery.events.length === 3 && both.events.length === 1, { what: "the resumed events" });
    expect(byQuery.events.map((event) => event.id)).toEqual(feed.events.slice(1).map((event) => event.id));
    expect(both.events[0]!.id).toBe(feed.events[3]!.id);
    expect(b).toBeDefined();
  });

  it("answers a resume point the log no longer holds, or above its head, with one reset at the head", async () => {
    const clock = new SkippableClock();
    const target = await server({ changesRetention: 60_000 }, clock);
    const feed = await stream(target.url, { token: TOKEN });
    await createPlants(target.url, named(1, 3), 1);
    await eventually(() => feed.events.length === 3, { what: "3 events" });
    const head = feed.events[2]!.id;

    const above = await stream(target.url, { token: TOKEN, lastEventId: String(BigInt(head) + 1_000n) });
    await eventually(() => above.events.length === 1, { what: "the reset" });
    expect(above.events[0]).toMatchObject({ id: head, event: "reset" });
    expect(JSON.parse(above.events[0]!.data)).toMatchObject({ head });

    // Past the retention the pruner leaves only the newest change: resuming after the first is too old.
    await clock.skipUntil(
      async () =>
        (await target.database.rows({ sqlite: "SELECT 1 FROM plant_changes", postgres: "SELECT 1 FROM plant_changes" }))
          .length === 1,
      { what: "the pruner to drop all but the newest change", stepMs: 60_000 },
    );
    const old = await stream(target.url, { token: TOKEN, lastEventId: feed.events[0]!.id });
    // Still held after the second: resumes without a reset.
    const held = await stream(target.url, { token: TOKEN, lastEventId: feed.events[1]!.id });
    await eventually(() => old.events.length === 1 && held.events.length === 1, { what: "reset and resume" });
    expect(old.events[0]).toMatchObject({ id: head, event: "reset" });
    expect(held.events[0]).toMatchObject({ id: head, event: "plant.created" });

    // The stream goes on after the reset's id.
    await createPlants(target.url, named(10, 1));
    await eventually(() => old.events.length === 2, { what: "the next event after the reset" });
    expect(old.events[1]).toMatchObject({ event: "plant.created", data: '{"id":10,"name":"plant 10"}' });
  });

  it("filters by ?tag=: changes whose tag or previous tag is the one asked", async () => {
    const target = await server();
    const indoor = await stream(target.url, { token: TOKEN, query: "tag=indoor" });
    const all = await stream(target.url, { token: TOKEN });
    await createPlants(target.url, [...named(1, 2, "indoor"), ...named(3, 2, "outdoor"), ...named(5, 1)], 1);
    expect(
      (await target.send({ method: "DELETE", path: "/plants/1", headers: { authorization: `Bearer ${TOKEN}` } }))
        .status,
    ).toBe(204);
    expect(
      (await target.send({ method: "DELETE", path: "/plants/3", headers: { authorization: `Bearer ${TOKEN}` } }))
        .status,
    ).toBe(204);
    // Through the store: the HTTP update is another branch's. Plant 2 leaves the tag, plant 4 joins it.
    expect(await target.store.update(2n, { tag: "outdoor" }, "*")).toMatchObject({ outcome: "written" });
    expect(await target.store.update(4n, { tag: "indoor" }, "*")).toMatchObject({ outcome: "written" });
    expect(await target.store.update(5n, { name: "renamed" }, "*")).toMatchObject({ outcome: "written" });
    await eventually(() => all.events.length === 10, { what: () => `all 10 changes (got ${all.events.length})` });
    await eventually(() => indoor.events.length === 5, {
      what: () => `5 indoor changes (got ${indoor.events.length})`,
    });
    expect(indoor.events.map((event) => [event.event, event.data])).toEqual([
      ["plant.created", '{"id":1,"name":"plant 1","tag":"indoor"}'],
      ["plant.created", '{"id":2,"name":"plant 2","tag":"indoor"}'],
      ["plant.deleted", '{"id":1}'],
      ["plant.updated", '{"id":2,"name":"plant 2","tag":"outdoor"}'],
      ["plant.updated", '{"id":4,"name":"plant 4","tag":"indoor"}'],
    ]);
  });

  it("writes a heartbeat comment on an idle stream", async () => {
    const target = await server(events({ heartbeatMs: 50 }));
    const feed = await stream(target.url, { token: TOKEN });
    await eventually(() => feed.comments.filter((comment) => comment === "heartbeat").length >= 3, {
      what: "three heartbeats",
    });
    expect(feed.events).toEqual([]);
  });

  it("refuses before streaming, with catalogued answers: no token, a malformed position or tag, a token without plants:read", async () => {
    const target = await server();
    expectErrorShape(await target.send({ method: "GET", path: "/plants/events" }), 401, 40100);
    const auth = { authorization: `Bearer ${TOKEN}` };
    expectErrorShape(
      await target.send({ method: "GET", path: "/plants/events", headers: { ...auth, "last-event-id": "12x" } }),
      400,
      40005,
    );
    expectErrorShape(await target.send({ method: "GET", path: "/plants/events?after=-1", headers: auth }), 400, 40005);
    expectErrorShape(
      await target.send({ method: "GET", path: "/plants/events?after=9223372036854775808", headers: auth }),
      400,
      40005,
    );
    expectErrorShape(await target.send({ method: "GET", path: "/plants/events?tag=", headers: auth }), 400, 40005);
    const undecodable = await target.send({ method: "GET", path: "/plants/events?tag=%ff", headers: auth });
    expectErrorShape(undecodable, 400, 40005);
    expect((undecodable.json as { message: string }).message).toBe("tag must be percent-encoded UTF-8");
    const writer = await issueToken(target.database.url, { scopes: ["plants:write"] });
    const refused = await target.send({
      method: "GET",
      path: "/plants/events",
      headers: { authorization: `Bearer ${writer.token}` },
    });
    expectErrorShape(refused, 403, 40300);
    expect(refused.headers["www-authenticate"]).toContain('scope="plants:read"');
  });

  it("counts one request against the token's rate limit when a stream opens", async () => {
    const target = await server({
      rateLimits: { ...(await defaultRateLimits()), token: { name: "token", points: 2, windowSec: 60 } },
    });
    const { token } = await issueToken(target.database.url);
    await stream(target.url, { token });
    await stream(target.url, { token });
    const third = await target.send({
      method: "GET",
      path: "/plants/events",
      headers: { authorization: `Bearer ${token}` },
    });
    expectErrorShape(third, 429, 42900);
  });

  it("counts each stream against PLANTSTORE_MAX_CONNECTIONS", async () => {
    // Streams may take every place here, to show that each holds one.
    const target = await server({ maxConnections: 2, ...events({ connectionShare: 100 }) });
    // The harness's own keep-alive connection (it read /openapi.json) must not take a place.
    closeIdleClientConnections(target.url);
    await eventually(async () => (await openConnections(target)) === 0, { what: "no connection open" });
    await stream(target.url, { token: TOKEN });
    await stream(target.url, { token: TOKEN });
    expectErrorShape(await target.send({ method: "GET", path: "/readyz" }), 503, 50301);
    // Liveness is answered even so.
    expect((await target.send({ method: "GET", path: "/healthz" })).status).toBe(200);
  });

  it("closes a slow consumer after its last whole event; it resumes from there and misses nothing", async () => {
    const target = await server(events({ bufferLimitBytes: 65_536 }));
    const feed = await stream(target.url, { token: TOKEN });
    feed.pause();
    // Long names, so that some thousands of events fill the kernel's buffers (a few MB on loopback),
    // then the server's, in batches well below the bound: a client falling behind, not one burst.
    const name = "n".repeat(250);
    let created = 0;
    const createBatch = async () => {
      const ids = Array.from({ length: 100 }, (_, i) => BigInt(created + i + 1));
      // Through the store itself, not HTTP: only the volume matters here.
      await Promise.all(ids.map((id) => target.store.create({ id, name })));
      created += ids.length;
    };
    while (!(await closedAsSlow(target)) && created < 40_000) await createBatch();
    expect(await closedAsSlow(target)).toBe(true);
    // Committed after the cut: only the resumed stream can carry these.
    await createBatch();
    feed.resume();
    expect(await feed.ended).toEqual({ complete: true });
    // What arrived ends with a whole event: nothing is left half-parsed.
    expect(feed.text().endsWith("\n\n")).toBe(true);
    const received = feed.events.length;
    expect(received).toBeLessThanOrEqual(created - 100);
    const resumed = await stream(target.url, { token: TOKEN, lastEventId: feed.events.at(-1)!.id });
    await eventually(() => received + resumed.events.length === created, {
      what: () => `the rest of ${created} events (got ${received} + ${resumed.events.length})`,
    });
    const all = [...feed.events, ...resumed.events];
    expectStrictlyIncreasing(all);
    expect(all.map((event) => (JSON.parse(event.data) as { id: number }).id)).toEqual(
      Array.from({ length: created }, (_, i) => i + 1),
    );
  });

  it("closes the streams of a revoked token", async () => {
    const target = await server(events({ authCheckMs: 100 }));
    const { id, token } = await issueToken(target.database.url);
    const feed = await stream(target.url, { token });
    const other = await stream(target.url, { token: TOKEN });
    await revokeToken(target.database.url, id);
    expect(await feed.ended).toEqual({ complete: true });
    expectErrorShape(
      await target.send({ method: "GET", path: "/plants/events", headers: { authorization: `Bearer ${token}` } }),
      401,
      40101,
    );
    // Another token's stream is untouched.
    await createPlants(target.url, named(1, 1));
    await eventually(() => other.events.length === 1, { what: "the other stream's event" });
  });

  it("closes the streams of a token once it expires", async () => {
    const clock = new SkippableClock();
    const target = await server(events({ authCheckMs: 100 }), clock);
    const { token } = await issueToken(target.database.url, { expiresAt: clock.now() + 60_000 });
    const feed = await stream(target.url, { token });
    await eventually(() => feed.retries.length === 1, { what: "the stream to start" });
    // The check that falls due after the expiry closes it; skip returns once that check has run.
    await clock.skip(61_000);
    expect(await feed.ended).toEqual({ complete: true });
  });

  it("ends its streams cleanly on close, well within the drain deadline", async () => {
    const target = await startTestServer();
    cleanups.push(() => target.database.dispose());
    const feed = await stream(target.url, { token: TOKEN });
    await createPlants(target.url, named(1, 1));
    await eventually(() => feed.events.length === 1, { what: "one event" });
    const started = performance.now();
    await target.close({ deadlineMs: 10_000 });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await feed.ended).toEqual({ complete: true });
  });
});

describe("GET /plants/events on a process stopped with SIGTERM", () => {
  it("ends its streams cleanly and exits 0", async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.dispose());
    const child = await startServerProcess({ DATABASE_URL: database.url, PLANTSTORE_TOKENS: TOKEN });
    cleanups.push(() => child.stop());
    const feed = await stream(child.url, { token: TOKEN });
    await eventually(() => feed.retries.length === 1, { what: "the stream to start" });
    expect(await child.stop()).toBe(0);
    expect(await feed.ended).toEqual({ complete: true });
    expect(positions(feed.events)).toEqual([]);
  });
});

function openConnections(target: TestServer): Promise<number> {
  return new Promise((resolve, reject) =>
    target.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}

/** Whether the server has closed a stream as a slow consumer (its metrics say). */
async function closedAsSlow(target: TestServer): Promise<boolean> {
  const metrics = await rawRequest(target.url, {
    method: "GET",
    path: "/metrics",
    headers: { authorization: `Bearer ${TOKEN}`, connection: "close" },
  });
  return /^plantstore_event_streams_closed_total\{reason="slow_consumer"\} 1$/m.test(metrics.text);
}

async function defaultRateLimits(): Promise<Config["rateLimits"]> {
  const { loadConfig } = await import("../../src/config.ts");
  return loadConfig({}).rateLimits;
}
