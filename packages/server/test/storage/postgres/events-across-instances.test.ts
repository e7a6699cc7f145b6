import { Agent } from "node:http";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { openEventStream, type ReceivedEvent } from "../../support/event-stream.ts";
import { postPlant, runBin, type ServerProcess, startServerProcess } from "../../support/processes.ts";
import { createTestDatabase } from "../../support/test-database.ts";
import { startReceiver } from "../../support/webhook-receiver.ts";

const TOKEN = "events-instances-token-0123456789abcdef";
const SECRET = `whsec_${Buffer.alloc(32, 4).toString("base64")}`;

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Two `plantstore-server` processes on one fresh PostgreSQL database. */
async function twoInstances(extraEnv: Record<string, string> = {}) {
  const database = await createTestDatabase("postgres");
  cleanups.push(() => database.dispose());
  const env = { DATABASE_URL: database.url, PLANTSTORE_TOKENS: TOKEN, PLANTSTORE_PG_POOL_SIZE: "5", ...extraEnv };
  const servers: ServerProcess[] = await Promise.all([0, 1].map(() => startServerProcess(env)));
  cleanups.push(() => Promise.all(servers.map((server) => server.stop())));
  return { env, servers: servers as [ServerProcess, ServerProcess] };
}

async function stream(url: string, lastEventId?: string) {
  const opened = await openEventStream(url, { token: TOKEN, ...(lastEventId === undefined ? {} : { lastEventId }) });
  cleanups.push(() => opened.close());
  await eventually(() => opened.retries.length === 1, { what: "the stream to start" });
  return opened;
}

/** Creates plants `ids`, alternating between the servers, 8 at a time per server. */
async function createThroughBoth(servers: readonly ServerProcess[], ids: readonly number[]): Promise<void> {
  const agents = servers.map(() => new Agent({ keepAlive: true, maxSockets: 8 }));
  try {
    let next = 0;
    await Promise.all(
      servers.flatMap((server, at) =>
        Array.from({ length: 8 }, async () => {
          while (next < ids.length) {
            const id = ids[next++]!;
            const answer = await postPlant(agents[at]!, server.url, TOKEN, `{"id":${id},"name":"plant ${id}"}`);
            if (answer.status !== 200) throw new Error(`creating ${id} answered ${answer.status}: ${answer.text}`);
          }
        }),
      ),
    );
  } finally {
    for (const agent of agents) agent.destroy();
  }
}

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
const plantIdOf = (event: ReceivedEvent) => (JSON.parse(event.data) as { id: number }).id;

describe("GET /plants/events with two processes on one PostgreSQL", () => {
  it("hands a change made through either to the streams of both, in the same order, woken by NOTIFY", async () => {
    // No poll within the test's patience: only a notification can wake the reader in time.
    const { servers } = await twoInstances({ PLANTSTORE_EVENTS_POLL_MS: "60000" });
    const onFirst = await stream(servers[0].url);
    const onSecond = await stream(servers[1].url);
    await createThroughBoth(servers, range(1, 60));
    await eventually(() => onFirst.events.length === 60 && onSecond.events.length === 60, {
      what: () => `60 events on each (got ${onFirst.events.length} and ${onSecond.events.length})`,
    });
    expect(onSecond.events).toEqual(onFirst.events);
    expect(new Set(onFirst.events.map(plantIdOf))).toEqual(new Set(range(1, 60)));
  });

  it("resumes with Last-Event-ID after 1,000 plants made through both: exactly the next 1,000, in order, each with its webhook's data", async () => {
    const receiver = await startReceiver(() => ({ status: 204 }));
    cleanups.push(() => receiver.close());
    const { env, servers } = await twoInstances({ PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" });
    const added = await runBin(["webhooks", "add", receiver.url, "--secret", SECRET, "--json"], env);
    expect(added.code, added.out).toBe(0);

    const first = await stream(servers[0].url);
    await createThroughBoth(servers, range(1, 5));
    await eventually(() => first.events.length === 5, { what: () => `5 events (got ${first.events.length})` });
    first.close();
    const last = first.events.at(-1)!.id;

    await createThroughBoth(servers, range(100, 1_000));
    const resumed = await stream(servers[1].url, last);
    await eventually(() => resumed.events.length >= 1_000, {
      what: () => `1,000 events after ${last} (got ${resumed.events.length})`,
      timeoutMs: 30_000,
    });
    // A marker made afterwards arrives next: nothing of the 1,000 is still to come, or repeated.
    await createThroughBoth(servers.slice(0, 1), [5_000]);
    await eventually(() => resumed.events.length === 1_001, { what: "the marker's event" });
    expect(plantIdOf(resumed.events[1_000]!)).toBe(5_000);

    const burst = resumed.events.slice(0, 1_000);
    const ids = [...first.events, ...resumed.events].map((event) => BigInt(event.id));
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!, `event ${i} after ${i - 1}`).toBe(true);
    expect(new Set(burst.map(plantIdOf))).toEqual(new Set(range(100, 1_000)));
    expect(burst.every((event) => event.event === "plant.created")).toBe(true);

    // Each event's data is byte for byte the body its webhook delivered.
    await eventually(() => receiver.received.length >= 1_006, {
      what: () => `1,006 webhook deliveries (got ${receiver.received.length})`,
      timeoutMs: 30_000,
    });
    const delivered = new Map(
      receiver.received.map((request) => [(JSON.parse(request.body) as { id: number }).id, request.body]),
    );
    for (const event of [...first.events, ...resumed.events]) expect(event.data).toBe(delivered.get(plantIdOf(event)));
  });
});
