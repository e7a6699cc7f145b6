import { Agent } from "node:http";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { databaseBehindProxy } from "../../support/database-behind-proxy.ts";
import { expectErrorShape, rawRequest } from "../../support/harness.ts";
import {
  type Answer,
  postPlant,
  type ServerProcess,
  startCreationLoad,
  startServerProcess,
} from "../../support/processes.ts";
import { createTestDatabase, type TestDatabase, withAdminClient } from "../../support/test-database.ts";

const TOKEN = "outage-token-0123456789abcdefghijklmn";
// Short on purpose, so the test can check the documented bound: no request waits longer than the
// query timeout plus the client's 1 s grace (a silent connection) plus the connect timeout (the
// fresh connection a creation is retried on): the sum, as the README's Outages bullet says.
const CONNECT_TIMEOUT_MS = 1_000;
const QUERY_TIMEOUT_MS = 2_000;
const WORST_CASE_MS = QUERY_TIMEOUT_MS + 1_000 + CONNECT_TIMEOUT_MS;
// Loaded shared machine: the answer itself may lag a little behind the timers that bound it.
const SLACK_MS = 2_000;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function readyz(server: ServerProcess): Promise<number> {
  return (await rawRequest(server.url, { method: "GET", path: "/readyz" }).catch(() => ({ status: 0 }))).status;
}

/** Every answer is a 200 or a catalogued 503; every 200 is stored. */
async function checkAnswers(database: TestDatabase, answers: Array<{ id: number; answer: Answer }>) {
  for (const { answer } of answers) {
    if (answer.status === 200) continue;
    expect(answer.status, answer.text).toBe(503);
    expect(JSON.parse(answer.text)).toEqual({ error: 50300, message: expect.any(String) });
  }
  const ok = answers.filter((a) => a.answer.status === 200).map((a) => a.id);
  const stored = new Set(
    (await database.rows<{ id: bigint }>({ sqlite: "", postgres: "SELECT id FROM plants" })).map((r) => Number(r.id)),
  );
  const missing = ok.filter((id) => !stored.has(id));
  expect(missing, `answered 200 but not stored: ${missing.slice(0, 10).join(", ")}`).toEqual([]);
  return ok.length;
}

async function servesAgain(server: ServerProcess, id: number): Promise<void> {
  const agent = new Agent({ keepAlive: false });
  await eventually(
    async () => (await postPlant(agent, server.url, TOKEN, `{"id":${id},"name":"after"}`)).status === 200,
    { what: "a 200 after the outage", timeoutMs: 10_000 },
  );
}

describe("PostgreSQL connections terminated under load (pg_terminate_backend)", () => {
  it("loses no answered plant, answers only 200 or 503, and serves again at once", async () => {
    const database = await createTestDatabase("postgres");
    cleanups.push(() => database.dispose());
    const server = await startServerProcess({
      DATABASE_URL: database.url,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_PG_POOL_SIZE: "6",
    });
    cleanups.push(() => server.stop());
    const load = startCreationLoad(server, TOKEN, { retryPauseMs: 50 });
    let terminated = 0;
    const served = () => load.answers.filter((a) => a.answer.status === 200).length;
    // Between terminations, and after the last, the load is served again: 15 more 200s each time.
    const servedAgain = async (round: number) => {
      const before = served();
      await eventually(() => served() >= before + 15, {
        what: () => `15 more 200s after termination round ${round} (${served() - before} so far)`,
      });
    };
    try {
      for (let round = 0; round < 5; round++) {
        await servedAgain(round);
        // Only this test's scratch database, only the server's connections: other users of the
        // shared PostgreSQL are never touched.
        const { rowCount } = await withAdminClient((admin) =>
          admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'plantstore'",
            [database.name],
          ),
        );
        terminated += rowCount ?? 0;
      }
      await servedAgain(5);
    } finally {
      await load.stop();
    }
    expect(terminated).toBeGreaterThan(0);
    const ok = await checkAnswers(database, load.answers);
    expect(ok).toBeGreaterThan(50);
    await servesAgain(server, 1_000_000);
    expect(await readyz(server)).toBe(200);
    expect(server.child.exitCode).toBeNull();
  }, 60_000);
});

describe("PostgreSQL unreachable through the network (a TCP proxy cut, then restored)", () => {
  async function serverBehindProxy() {
    const { database, proxy, url, dispose } = await databaseBehindProxy();
    cleanups.push(dispose);
    const server = await startServerProcess({
      DATABASE_URL: url,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_PG_POOL_SIZE: "6",
      PLANTSTORE_PG_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      PLANTSTORE_PG_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    });
    cleanups.push(() => server.stop());
    return { database, proxy, server };
  }

  it.each([
    ["refused (connections reset)", "cut"],
    ["silent (packets dropped)", "blackhole"],
  ] as const)(
    "when %s: readyz 503, requests 503 within the timeouts, then 200 again within seconds; no answered plant lost",
    async (_label, fault) => {
      const { database, proxy, server } = await serverBehindProxy();
      expect(await readyz(server)).toBe(200);
      const load = startCreationLoad(server, TOKEN, { retryPauseMs: 50 });
      let recovered: number | undefined;
      try {
        await eventually(() => load.answers.filter((a) => a.answer.status === 200).length >= 50, {
          what: "some 200s before the outage",
          timeoutMs: 20_000,
        });
        if (fault === "cut") proxy.refuse();
        else proxy.freeze();
        const faultAt = Date.now();
        // readyz notices within the bound, and stays 503 while the outage lasts.
        await eventually(async () => (await readyz(server)) === 503, {
          what: "readyz 503 during the outage",
          timeoutMs: WORST_CASE_MS + SLACK_MS,
        });
        // A request now gets the catalogued 503, told when to retry, with nothing internal in it.
        const refused = await rawRequest(server.url, {
          method: "POST",
          path: "/plants",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: '{"id":-1,"name":"during"}',
        });
        expectErrorShape(refused, 503, 50300);
        expect(refused.headers["retry-after"]).toBe("1");
        expect(refused.text).not.toMatch(/ECONN|timeout|terminated|127\.0\.0\.1|postgres/i);
        // The outage goes on: every request it caught is answered (a silent database holds them
        // for the query timeout or longer) and more are refused; readyz still says 503.
        const refusedSoFar = load.answers.filter((a) => a.answer.status !== 200).length;
        await eventually(
          () =>
            !load.waitingSince(faultAt) &&
            load.answers.filter((a) => a.answer.status !== 200).length >= refusedSoFar + 10,
          {
            what: "the requests the outage caught answered, and 10 more refused",
            timeoutMs: 2 * (WORST_CASE_MS + SLACK_MS),
          },
        );
        expect(await readyz(server)).toBe(503);
        proxy.pass();
        const restoredAt = Date.now();
        await eventually(async () => (await readyz(server)) === 200, {
          what: "readyz 200 after the outage",
          timeoutMs: 8_000,
        });
        recovered = Date.now() - restoredAt;
        await servesAgain(server, 1_000_000);
      } finally {
        await load.stop();
      }
      const during = load.answers.filter((a) => a.answer.status !== 200);
      expect(during.length).toBeGreaterThan(0);
      // Nothing hung: every answer, even one caught mid-outage, came within the documented bound.
      const slowest = Math.max(...load.answers.map((a) => a.answer.ms));
      expect(slowest).toBeLessThan(WORST_CASE_MS + SLACK_MS);
      await checkAnswers(database, load.answers);
      expect(recovered).toBeLessThan(8_000);
      expect(server.child.exitCode).toBeNull();
    },
    90_000,
  );
});
