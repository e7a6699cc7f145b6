import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

import { eventually } from "@plantstore/test-support/eventually";
import { describe, expect, it } from "vitest";

import { rawRequest } from "../support/harness.ts";
import { type Outcome, randomPlant, runLoad, type SentPlant } from "../support/load.ts";
import { runBin } from "../support/processes.ts";
import { openRaw, postHead, type RawClient } from "../support/raw-socket.ts";
import { freePort, type SpawnedServer, spawnServe } from "../support/spawned-server.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";

const TOKEN = "shutdown-test-token-0123456789abcdefgh";
const SECRET = `whsec_${Buffer.alloc(32, 5).toString("base64")}`;

type OnFinished = (cleanup: () => Promise<void> | void) => void;

async function tempDatabase(onFinished: OnFinished): Promise<TestDatabase> {
  const database = await createTestDatabase();
  onFinished(() => database.dispose());
  return database;
}

function track(server: SpawnedServer, onFinished: OnFinished): SpawnedServer {
  onFinished(() => {
    server.child.kill("SIGKILL");
  });
  return server;
}

async function storedPlants(database: TestDatabase): Promise<Map<bigint, { name: string; tag: string | null }>> {
  const select = "SELECT id, name, tag FROM plants";
  const rows = await database.rows<{ id: bigint; name: string; tag: string | null }>({
    sqlite: select,
    postgres: select,
  });
  return new Map(rows.map((r) => [r.id, { name: r.name, tag: r.tag }]));
}

/**
 * Load that keeps going through the stop: each loop sends until a request fails (its new
 * connection is refused once the server stopped listening).
 */
function loadUntilRefused(url: string) {
  const outcomes: Outcome[] = [];
  const sent = new Map<bigint, SentPlant>();
  const done = runLoad({
    url,
    token: TOKEN,
    concurrency: 32,
    next: () => {
      const plant = randomPlant();
      sent.set(plant.id, plant);
      return plant;
    },
    onOutcome: (o) => outcomes.push(o),
  });
  return { outcomes, sent, done, answered: () => outcomes.filter((o) => o.kind === "answered").length };
}

/** The invariants of a graceful stop, from the clients' side and the store's. */
function expectCleanStop(outcomes: Outcome[], stored: Map<bigint, { name: string; tag: string | null }>): void {
  const problems: string[] = [];
  for (const o of outcomes) {
    if (o.kind === "answered") {
      if (o.status !== 200 || o.text !== o.plant.answer)
        problems.push(`answered ${o.status} ${o.text} to ${o.plant.body}`);
      else if (!stored.has(o.plant.id)) problems.push(`200 for ${o.plant.body} but not stored`);
      continue;
    }
    // The only failure allowed: a new connection the stopped server never read from (refused, or
    // reset by the OS from the accept queue). Never a reused connection, never a cut answer.
    if (o.reusedSocket || o.responseStarted || !["ECONNREFUSED", "ECONNRESET"].includes(o.code)) {
      problems.push(
        `${o.code} (reused socket: ${o.reusedSocket}, answer started: ${o.responseStarted}) for ${o.plant.body}`,
      );
    } else if (stored.has(o.plant.id)) {
      problems.push(`${o.code} for ${o.plant.body}, yet it is stored: the server read it and gave no answer`);
    }
  }
  expect(problems).toEqual([]);
}

/** Waits until `count` processes of `server` logged that they took the stop signal. */
async function signalTaken(server: SpawnedServer, count = 1): Promise<void> {
  await eventually(() => server.output().split('"msg":"shutting down"').length > count, {
    what: () => `${count} "shutting down" line(s):\n${server.output()}`,
  });
}

/** Waits until `server` holds a connection besides the one that asks it (its open-connections gauge). */
async function connectionHeld(server: SpawnedServer): Promise<void> {
  let open = "";
  await eventually(
    async () => {
      const metrics = await rawRequest(server.url, {
        method: "GET",
        path: "/metrics",
        headers: { authorization: `Bearer ${TOKEN}`, connection: "close" },
      });
      open = /^plantstore_http_open_connections (\d+)$/m.exec(metrics.text)?.[1] ?? "";
      return Number(open) >= 2;
    },
    { what: () => `the server to hold the request's connection (open connections: ${open})` },
  );
}

// The tests run side by side: each has its own database, ports and processes, and most of their
// time is spent waiting on those processes (start-up, the drain, the shutdown deadline).
describe.concurrent("graceful shutdown of plantstore-server serve", () => {
  it("on SIGTERM under load: finishes in-flight requests, closes keep-alive connections cleanly, stores every 200, records webhook attempts, exits 0", async ({
    onTestFinished,
  }) => {
    const db = await tempDatabase(onTestFinished);
    // A receiver that takes a while, so SIGTERM finds webhook attempts under way.
    const delivered: string[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () =>
        // eslint-disable-next-line no-restricted-syntax -- a slow receiver, so SIGTERM finds webhook attempts under way
        setTimeout(() => {
          delivered.push(body);
          res.writeHead(204).end();
        }, 300),
      );
    });
    receiver.listen(0, "127.0.0.1");
    await once(receiver, "listening");
    onTestFinished(() => new Promise<void>((r) => receiver.close(() => r())));
    const env = {
      DATABASE_URL: db.url,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_SHUTDOWN_TIMEOUT_MS: "15000",
      PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    };
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    // Not spawnSync: the other tests of this file run meanwhile.
    const added = await runBin(["webhooks", "add", hook, "--secret", SECRET], env);
    expect(added.code, added.out).toBe(0);

    const server = track(await spawnServe(env), onTestFinished);
    const port = Number(new URL(server.url).port);
    const keepAlive = async (): Promise<RawClient> => {
      const client = await openRaw(port);
      client.write("GET /healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n");
      await eventually(() => client.answers().length === 1, {
        what: () => "a first answer on a keep-alive connection",
        timeoutMs: 10_000,
      });
      return client;
    };
    // Idle keep-alive connections: one stays silent, one sends its next request just after SIGTERM.
    const silent = await keepAlive();
    const late = await keepAlive();
    // Requests whose body is only half sent when SIGTERM arrives.
    const halfSent = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const plant = randomPlant();
        const client = await openRaw(port);
        const cut = Math.floor(plant.body.length / 2);
        client.write(postHead(TOKEN, Buffer.byteLength(plant.body)) + plant.body.slice(0, cut));
        return { plant, client, rest: plant.body.slice(cut) };
      }),
    );

    const load = loadUntilRefused(server.url);
    await eventually(() => load.answered() >= 100 && delivered.length > 0, {
      what: () => `load and a first delivery (${load.answered()} answered)`,
      timeoutMs: 30_000,
    });
    const signalledAt = Date.now();
    server.child.kill("SIGTERM");
    await signalTaken(server);
    const latePlant = randomPlant();
    late.write(postHead(TOKEN, Buffer.byteLength(latePlant.body)) + latePlant.body);
    for (const { client, rest } of halfSent) client.write(rest);

    await load.done;
    const { code } = await server.exited;
    const tookMs = Date.now() - signalledAt;
    expect(code, server.output()).toBe(0);
    expect(tookMs).toBeLessThan(15_000);
    expect(server.output()).toContain('"msg":"stopped"');

    const stored = await storedPlants(db);
    expectCleanStop(load.outcomes, stored);
    expect(
      load.outcomes.some((o) => o.kind === "answered" && o.at > signalledAt),
      "answers after SIGTERM",
    ).toBe(true);

    // The request that was half sent at SIGTERM was finished and answered, and its connection closed.
    for (const { plant, client } of halfSent) {
      expect(await client.closed).toEqual({ error: undefined });
      expect(client.answers()).toMatchObject([{ status: 200, body: plant.answer, headers: { connection: "close" } }]);
      expect(stored.has(plant.id)).toBe(true);
    }
    // The idle connection that asked again after SIGTERM got its answer, marked as the last one.
    expect(await late.closed).toEqual({ error: undefined });
    expect(late.answers().slice(1)).toMatchObject([
      { status: 200, body: latePlant.answer, headers: { connection: "close" } },
    ]);
    expect(stored.has(latePlant.id)).toBe(true);
    // The silent one was closed in an orderly way (FIN, not a reset) and nothing else came.
    expect(await silent.closed).toEqual({ error: undefined });
    expect(silent.answers()).toHaveLength(1);

    // Webhook attempts under way were finished and recorded before the database closed.
    const join = "SELECT e.payload, d.status FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id";
    const statuses = await db.rows<{ payload: string; status: string }>({ sqlite: join, postgres: join });
    const statusOf = new Map(statuses.map((s) => [s.payload, s.status]));
    expect(delivered.length).toBeGreaterThan(0);
    for (const payload of delivered) expect(statusOf.get(payload), payload).toBe("delivered");
  }, 90_000);

  it("with PLANTSTORE_WORKERS=2: the primary passes SIGTERM on, every worker drains, exit 0", async ({
    onTestFinished,
  }) => {
    const db = await tempDatabase(onTestFinished);
    const port = await freePort();
    const env = {
      DATABASE_URL: db.url,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_WORKERS: "2",
      // Info: each worker's "shutting down" line says it took the signal.
      PLANTSTORE_LOG_LEVEL: "info",
    };
    const server = track(await spawnServe(env, { port }), onTestFinished);
    // One worker answering is not both: a worker still loading when SIGTERM comes has no handler
    // yet and dies of the signal (seen on a busy machine), which is not what this test is about.
    await eventually(() => server.output().split('"msg":"plantstore listening"').length - 1 === 2, {
      what: () => `both workers listening; output:\n${server.output()}`,
    });
    const halfSent = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const plant = randomPlant();
        const client = await openRaw(port);
        client.write(postHead(TOKEN, Buffer.byteLength(plant.body)) + plant.body.slice(0, 5));
        return { plant, client, rest: plant.body.slice(5) };
      }),
    );
    const load = loadUntilRefused(server.url);
    await eventually(() => load.answered() >= 200, {
      what: () => `load (${load.answered()} answered)`,
      timeoutMs: 30_000,
    });
    const signalledAt = Date.now();
    server.child.kill("SIGTERM");
    await signalTaken(server, 2);
    for (const { client, rest } of halfSent) client.write(rest);
    await load.done;
    const { code } = await server.exited;
    expect(code, server.output()).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(25_000);
    const stored = await storedPlants(db);
    expectCleanStop(load.outcomes, stored);
    for (const { plant, client } of halfSent) {
      expect(await client.closed).toEqual({ error: undefined });
      expect(client.answers()).toMatchObject([{ status: 200, body: plant.answer, headers: { connection: "close" } }]);
      expect(stored.has(plant.id)).toBe(true);
    }
  }, 90_000);

  it("exits 1 when a request is still unfinished at PLANTSTORE_SHUTDOWN_TIMEOUT_MS, instead of hanging", async ({
    onTestFinished,
  }) => {
    const db = await tempDatabase(onTestFinished);
    const env = { DATABASE_URL: db.url, PLANTSTORE_TOKENS: TOKEN, PLANTSTORE_SHUTDOWN_TIMEOUT_MS: "1500" };
    const server = track(await spawnServe(env), onTestFinished);
    const stuck = await openRaw(Number(new URL(server.url).port));
    stuck.write(postHead(TOKEN, 100) + '{"id":1,');
    await connectionHeld(server);
    const signalledAt = Date.now();
    server.child.kill("SIGTERM");
    const { code } = await server.exited;
    const tookMs = Date.now() - signalledAt;
    expect(code, server.output()).toBe(1);
    expect(tookMs).toBeGreaterThanOrEqual(1_400);
    expect(tookMs).toBeLessThan(10_000);
    await stuck.closed;
    expect(server.output()).toMatch(/shutdown deadline passed|shutdown failed/);
  }, 60_000);

  it("stops the same way on SIGINT", async ({ onTestFinished }) => {
    const db = await tempDatabase(onTestFinished);
    const server = track(await spawnServe({ DATABASE_URL: db.url, PLANTSTORE_TOKENS: TOKEN }), onTestFinished);
    const plant = randomPlant();
    const client = await openRaw(Number(new URL(server.url).port));
    client.write(postHead(TOKEN, Buffer.byteLength(plant.body)) + plant.body.slice(0, 3));
    await connectionHeld(server);
    server.child.kill("SIGINT");
    await signalTaken(server);
    client.write(plant.body.slice(3));
    expect((await server.exited).code, server.output()).toBe(0);
    expect(client.answers()).toMatchObject([{ status: 200, body: plant.answer }]);
    expect((await storedPlants(db)).has(plant.id)).toBe(true);
  }, 60_000);
});
