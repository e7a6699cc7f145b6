import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { startServer } from "../../../src/index.ts";
import { createLogger } from "../../../src/logger.ts";
import { expectErrorShape, logLines, rawRequest, testConfig, TOKEN } from "../../support/harness.ts";
import { createTestDatabase, postgresClient } from "../../support/test-database.ts";

// Short, so a statement stuck behind the lock is cancelled by PostgreSQL's statement_timeout in half a second.
const QUERY_TIMEOUT_MS = 500;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serverWithLogs() {
  const database = await createTestDatabase("postgres");
  cleanups.push(() => database.dispose());
  const { lines, sink } = logLines();
  const running = await startServer({
    config: testConfig(database.url, {
      logLevel: "info",
      postgres: { poolSize: 4, connectTimeoutMs: 5_000, queryTimeoutMs: QUERY_TIMEOUT_MS },
    }),
    logger: createLogger("info", sink),
  });
  cleanups.push(() => running.close());
  const send = (method: string, path: string, body?: string) =>
    rawRequest(running.url, {
      method,
      path,
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body }),
    });
  return { database, lines, send };
}

/** Another session holds the lock a migration or a careless `LOCK TABLE` takes: every write and read waits. */
async function lockPlants(url: string) {
  const locker = postgresClient(url);
  await locker.connect();
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE plants IN ACCESS EXCLUSIVE MODE");
  const release = async () => {
    await locker.query("ROLLBACK");
    await locker.end();
  };
  let released = false;
  cleanups.push(() => (released ? Promise.resolve() : release()));
  return async () => {
    released = true;
    await release();
  };
}

describe("PostgreSQL table locked by another session (LOCK TABLE plants IN ACCESS EXCLUSIVE MODE)", () => {
  it("answers 503 STORAGE_BUSY with Retry-After (not 50300) after the statement timeout, readyz too; 200 once released", async () => {
    const { database, lines, send } = await serverWithLogs();
    expect((await send("POST", "/plants", '{"id":1,"name":"before"}')).status).toBe(200);

    const release = await lockPlants(database.url);
    const started = Date.now();
    const blocked = await send("POST", "/plants", '{"id":2,"name":"during"}');
    expectErrorShape(blocked, 503, 50302);
    expect(blocked.headers["retry-after"]).toBe("1");
    expect(Date.now() - started).toBeGreaterThanOrEqual(QUERY_TIMEOUT_MS - 50);
    // The catalogued text only: nothing of PostgreSQL's own message (relation names, SQLSTATEs).
    expect(JSON.parse(blocked.text)).toEqual({
      error: 50302,
      message: "the database is busy (a lock or a long statement); retry shortly",
    });

    // Reads wait on the same lock; more of them than the circuit breaker's threshold, at once: a
    // busy database answers, so the circuit stays closed and each answer stays "busy".
    const reads = await Promise.all(Array.from({ length: 5 }, () => send("GET", "/plants")));
    for (const read of reads) expectErrorShape(read, 503, 50302);
    const afterReads = await send("POST", "/plants", '{"id":3,"name":"during"}');
    expectErrorShape(afterReads, 503, 50302);

    // Writes are failing on a lock: not ready, and saying why.
    const readiness = await send("GET", "/readyz");
    expectErrorShape(readiness, 503, 50302);
    expect(readiness.headers["retry-after"]).toBe("1");

    // The log names the cause, not the network.
    await eventually(() => lines.some((l) => l.includes('"request failed"') && l.includes("statement timeout")), {
      what: () => "a request-failed line naming the statement timeout",
      timeoutMs: 2_000,
    });
    const failed = lines.filter((l) => l.includes('"request failed"'));
    expect(failed.filter((l) => l.includes("not reachable"))).toEqual([]);

    await release();
    // Readiness checks the lock again without waiting for a write to succeed first.
    expect((await send("GET", "/readyz")).status).toBe(200);
    expect((await send("POST", "/plants", '{"id":2,"name":"during"}')).status).toBe(200);
    expect((await send("GET", "/plants")).status).toBe(200);
    expect((await database.row(2n))?.name).toBe("during");
    // Nothing that failed was stored.
    expect(await database.row(3n)).toBeUndefined();
  }, 30_000);
});
