import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

import { parseJsonLossless } from "@plantstore/schema";
import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { rawRequest } from "../support/harness.ts";
import { type Outcome, randomPlant, runLoad, type SentPlant } from "../support/load.ts";
import { BIN, spawnServe } from "../support/spawned-server.ts";
import { createTestDatabase, TEST_BACKEND } from "../support/test-database.ts";
import { startReceiver } from "../support/webhook-receiver.ts";

const TOKEN = "crash-test-token-0123456789abcdefghij";
const SECRET = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const ROUNDS = 5;
const CONCURRENCY = 32;

/** Small seeded PRNG (mulberry32), so a failure names the seed that produced its plants and timings. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type StoredState = {
  /** `PRAGMA integrity_check` (or the backend's equivalent): "ok" when the store is intact. */
  integrity: string;
  plants: Map<bigint, { name: string; tag: string | null }>;
  /** Outbox events: the exact payload and how many of its deliveries are in each status. */
  events: Array<{ payload: string; statuses: string[] }>;
};

type Backend = { name: string; databaseUrl: string; inspect(): Promise<StoredState>; cleanup: () => Promise<void> };

function sqliteBackend(): Backend {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-crash-"));
  const path = join(dir, "crash.db");
  return {
    name: "SQLite",
    databaseUrl: `sqlite:${path}`,
    async inspect() {
      const db = new DatabaseSync(path, { readBigInts: true });
      try {
        const integrity = (db.prepare("PRAGMA integrity_check").all() as Array<{ integrity_check: string }>)
          .map((r) => r.integrity_check)
          .join("; ");
        const plants = new Map(
          (
            db.prepare("SELECT id, name, tag FROM plants").all() as Array<{
              id: bigint;
              name: string;
              tag: string | null;
            }>
          ).map((r) => [r.id, { name: r.name, tag: r.tag }]),
        );
        const rows = db
          .prepare(
            "SELECT e.payload, d.status FROM webhook_events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id ORDER BY e.id",
          )
          .all() as Array<{ payload: string; status: string | null }>;
        const events = new Map<string, string[]>();
        for (const row of rows) {
          const statuses = events.get(row.payload) ?? [];
          if (row.status !== null) statuses.push(row.status);
          events.set(row.payload, statuses);
        }
        return { integrity, plants, events: [...events].map(([payload, statuses]) => ({ payload, statuses })) };
      } finally {
        db.close();
      }
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * PostgreSQL survives our process being killed on its own; what this checks there is our side
 * (no 200 before the commit, the outbox in the plant's statement, a clean restart on the same
 * database) and, with amcheck, that the tables and indexes are consistent afterwards.
 */
async function postgresBackend(): Promise<Backend> {
  const database = await createTestDatabase("postgres");
  const sql = async <R>(text: string) => database.rows<R>({ sqlite: text, postgres: text });
  return {
    name: "PostgreSQL",
    databaseUrl: database.url,
    async inspect() {
      await sql("CREATE EXTENSION IF NOT EXISTS amcheck");
      const problems: string[] = [];
      for (const table of ["plants", "webhook_events", "webhook_deliveries", "webhook_attempts"]) {
        const corrupt = await sql<{ msg: string }>(`SELECT msg FROM verify_heapam('${table}')`);
        problems.push(...corrupt.map((c) => `${table}: ${c.msg}`));
      }
      const indexes = await sql<{ name: string }>(
        `SELECT c.relname AS name FROM pg_index i
           JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam JOIN pg_class t ON t.oid = i.indrelid
         WHERE a.amname = 'btree' AND t.relname IN ('plants', 'webhook_events', 'webhook_deliveries', 'webhook_attempts')`,
      );
      // Every index entry points at a heap row and every heap row is indexed (heapallindexed).
      for (const { name } of indexes) await sql(`SELECT bt_index_parent_check('${name}'::regclass, true)`);
      const plants = new Map(
        (await sql<{ id: bigint; name: string; tag: string | null }>("SELECT id, name, tag FROM plants")).map((r) => [
          r.id,
          { name: r.name, tag: r.tag },
        ]),
      );
      const rows = await sql<{ payload: string; status: string | null }>(
        "SELECT e.payload, d.status FROM webhook_events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id ORDER BY e.id",
      );
      const events = new Map<string, string[]>();
      for (const row of rows) {
        const statuses = events.get(row.payload) ?? [];
        if (row.status !== null) statuses.push(row.status);
        events.set(row.payload, statuses);
      }
      return {
        integrity:
          problems.length === 0 && indexes.length >= 4
            ? "ok"
            : `${problems.join("; ")} (${indexes.length} indexes checked)`,
        plants,
        events: [...events].map(([payload, statuses]) => ({ payload, statuses })),
      };
    },
    cleanup: () => database.dispose(),
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Every stored plant, through GET /plants and its cursor. */
async function listAll(url: string): Promise<Array<{ id: bigint; name: string; tag?: string }>> {
  const all: Array<{ id: bigint; name: string; tag?: string }> = [];
  for (let after: bigint | undefined; ;) {
    const page = await rawRequest(url, {
      method: "GET",
      path: `/plants?limit=1000${after === undefined ? "" : `&after=${after}`}`,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(page.status, page.text).toBe(200);
    const plants = parseJsonLossless(page.text) as Array<{ id: bigint; name: string; tag?: string }>;
    all.push(...plants);
    if (plants.length < 1000) return all;
    after = plants.at(-1)!.id;
  }
}

async function crashRepeatedly(backend: Backend): Promise<void> {
  const seed = Date.now() % 2 ** 31;
  const random = seeded(seed);
  const context = `(${backend.name}, seed ${seed})`;
  const receiver = await startReceiver(() => ({ status: 204 }));
  cleanups.push(receiver.close);
  const env = {
    DATABASE_URL: backend.databaseUrl,
    PLANTSTORE_TOKENS: TOKEN,
    PLANTSTORE_LOG_LEVEL: "warn",
    PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    // Small pools: the machine's PostgreSQL is shared. Short attempts (so short leases) and
    // retries, so deliveries a kill left leased are due again within about 2 s.
    PLANTSTORE_PG_POOL_SIZE: "8",
    PLANTSTORE_WEBHOOK_TIMEOUT_MS: "500",
    PLANTSTORE_WEBHOOK_RETRY_BASE_MS: "50",
  };
  const added = spawnSync(process.execPath, [BIN, "webhooks", "add", receiver.url, "--secret", SECRET], {
    env: { ...process.env, ...env },
    encoding: "utf8",
  });
  expect(added.status, added.stderr).toBe(0);

  const sent = new Map<bigint, SentPlant>();
  const acknowledged = new Map<bigint, SentPlant>();
  const violations: string[] = [];
  let cut = 0;

  for (let round = 0; round < ROUNDS; round++) {
    const server = await spawnServe(env);
    let killed = false;
    let ackedThisRound = 0;
    const onOutcome = (outcome: Outcome) => {
      if (outcome.kind === "failed") {
        if (!killed) violations.push(`round ${round}: ${outcome.code} before the kill for ${outcome.plant.body}`);
        cut++;
        return;
      }
      if (outcome.status !== 200 || outcome.text !== outcome.plant.answer) {
        violations.push(`round ${round}: ${outcome.status} ${outcome.text} for ${outcome.plant.body}`);
        return;
      }
      acknowledged.set(outcome.plant.id, outcome.plant);
      ackedThisRound++;
    };
    const next = (): SentPlant | undefined => {
      if (killed) return undefined;
      // Now and then an identical retry of an acknowledged plant: it must answer the same 200.
      if (acknowledged.size > 0 && random() < 0.1) {
        const ids = [...acknowledged.keys()];
        return acknowledged.get(ids[Math.floor(random() * ids.length)]!)!;
      }
      let plant = randomPlant(random);
      while (sent.has(plant.id)) plant = randomPlant(random);
      sent.set(plant.id, plant);
      return plant;
    };
    const load = runLoad({ url: server.url, token: TOKEN, concurrency: CONCURRENCY, next, onOutcome });
    // Kill at a random moment of full load: after a random number of this round's answers (at
    // least 20 a round, so the rounds acknowledge 100 plants or more between them).
    const killAfter = 20 + Math.floor(random() * 100);
    await eventually(() => ackedThisRound >= killAfter || violations.length > 0, {
      what: () => `${killAfter} answers ${context} (${ackedThisRound} so far)`,
      timeoutMs: 20_000,
    });
    server.child.kill("SIGKILL");
    killed = true;
    await load;
    expect((await server.exited).signal).toBe("SIGKILL");
    expect(violations, context).toEqual([]);
  }

  // The store opens again, answers, and delivers every event, including those a kill interrupted.
  const last = await spawnServe(env);
  expect((await rawRequest(last.url, { method: "GET", path: "/readyz" })).status, context).toBe(200);
  const listed = await listAll(last.url);
  // Deliveries a kill interrupted were leased; once the lease runs out they are sent again. With
  // 500 ms attempts the lease is 2 s (leaseMs in webhooks/dispatcher.ts): this wait is mostly that.
  let depth = "";
  await eventually(
    async () => {
      const metrics = await rawRequest(last.url, {
        method: "GET",
        path: "/metrics",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      depth = /^plantstore_webhook_outbox_depth (\d+)$/m.exec(metrics.text)?.[1] ?? "";
      return depth === "0";
    },
    { what: () => `an empty webhook outbox ${context}: depth ${depth}`, timeoutMs: 30_000, intervalMs: 100 },
  );
  last.child.kill("SIGTERM");
  expect((await last.exited).code, last.output()).toBe(0);

  const state = await backend.inspect();
  expect(state.integrity, context).toBe("ok");
  expect(acknowledged.size, `enough load to mean something ${context}`).toBeGreaterThanOrEqual(100);
  expect(cut, `some requests were in flight at a kill ${context}`).toBeGreaterThan(0);
  for (const [id, plant] of acknowledged) {
    expect(state.plants.get(id), `acknowledged plant ${plant.body} ${context}`).toEqual({
      name: plant.name,
      tag: plant.tag ?? null,
    });
  }
  // What GET /plants answered after the crashes is what the store holds.
  expect(new Map(listed.map((p) => [p.id, { name: p.name, tag: p.tag ?? null }])), context).toEqual(state.plants);
  for (const [id, stored] of state.plants) {
    const plant = sent.get(id);
    expect(plant, `stored plant ${id} was sent ${context}`).toBeDefined();
    expect(stored, `stored plant ${id} is what was sent ${context}`).toEqual({
      name: plant!.name,
      tag: plant!.tag ?? null,
    });
  }
  // The outbox: exactly one event per stored plant (written in its transaction), each delivered.
  const payloads = new Map(state.events.map((e) => [e.payload, e.statuses]));
  expect(state.events.length, context).toBe(state.plants.size);
  for (const id of state.plants.keys()) {
    const statuses = payloads.get(sent.get(id)!.body);
    expect(statuses, `outbox event of plant ${id} ${context}`).toEqual(["delivered"]);
  }
  const deliveredIds = new Set(receiver.received.map((r) => /^\{"id":(-?\d+),/.exec(r.body)?.[1]));
  for (const id of state.plants.keys())
    expect(deliveredIds.has(String(id)), `plant ${id} reached the receiver ${context}`).toBe(true);
  for (const delivery of receiver.received) {
    const id = /^\{"id":(-?\d+),/.exec(delivery.body)?.[1];
    expect(delivery.body, `delivered payload ${context}`).toBe(sent.get(BigInt(id ?? "0"))?.body);
  }
}

// The suite runs once per backend (PLANTSTORE_TEST_BACKEND, see test-database.ts): each pass crashes its own.
describe("crash safety: SIGKILL under full load, restart on the same store", () => {
  it(`${TEST_BACKEND === "postgres" ? "PostgreSQL" : "SQLite"}: every 200 is stored exactly, nothing unsent is stored, the store is intact and no outbox event is lost`, async () => {
    const backend = TEST_BACKEND === "postgres" ? await postgresBackend() : sqliteBackend();
    cleanups.push(backend.cleanup);
    await crashRepeatedly(backend);
  }, 120_000);
});
